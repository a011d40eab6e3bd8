//! Canonical JSON for lockstep.
//!
//! A fingerprint is only comparable if every implementation produces the same bytes for the
//! same value. This crate owns those bytes: two profiles, a streaming writer and a strict
//! parser, all over one data model ([`Value`]).
//!
//! - [`Profile::Python`]: the bytes of Python's
//!   `json.dumps(obj, sort_keys=True, separators=(',', ':'))` with its defaults, so a digest
//!   computed in Python agrees with one computed here.
//! - [`Profile::Jcs`]: RFC 8785, the JSON Canonicalization Scheme.
//!
//! Both profiles stream into any [`std::io::Write`] (a hasher included) without building an
//! intermediate `String`. [`canonicalize`] goes from JSON text to canonical bytes in one pass
//! without building a [`Value`] at all (same bytes, same errors as [`parse_with`] then
//! [`write_value`]). [`Document`] holds a parsed text read-only in a few flat buffers (no
//! allocation per value), for a large state that is read or hashed but not changed: the same
//! texts, errors and canonical bytes as the tree.

mod document;
mod escape;
mod number_format;
mod parser;
mod scan;
mod serde_impls;
mod sink;
mod stream;
#[cfg(test)]
mod test_tokens;
mod value;
mod writer;

pub use document::{Document, Kind, Node};
pub use parser::ParseOptions;
pub use serde_impls::{from_value, to_value, ConvertError};
pub use stream::{
    canonicalize, canonicalize_early, canonicalize_early_parallel, canonicalize_parallel,
    canonicalize_parallel_headed, canonicalize_split_from, reads_in_parallel, CanonError,
    EarlyWrite, Head, PartsTaken, Plan, MOVED_MAX,
};
pub use value::{Map, Number, Value};
pub use writer::{append_value, write_value, MAX_WRITE_DEPTH};

use std::io;

/// A canonical serialisation: which bytes a [`Value`] becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Python's `json.dumps(obj, sort_keys=True, separators=(',', ':'))`, NaN and infinities
    /// written as `NaN`, `Infinity`, `-Infinity`.
    Python,
    /// As [`Profile::Python`] but refusing NaN and infinities (Python's `allow_nan=False`).
    PythonStrict,
    /// RFC 8785 JSON Canonicalization Scheme.
    Jcs,
}

impl Profile {
    /// The profile's name on the command line and in records: `python`, `python-strict`, `jcs`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Python => "python",
            Profile::PythonStrict => "python-strict",
            Profile::Jcs => "jcs",
        }
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "python" => Ok(Profile::Python),
            "python-strict" => Ok(Profile::PythonStrict),
            "jcs" => Ok(Profile::Jcs),
            other => Err(format!(
                "unknown profile {other:?} (expected python, python-strict or jcs)"
            )),
        }
    }
}

/// Why a value has no canonical form in a profile. Names the JSON Pointer of the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at {pointer:?}")]
pub struct WriteError {
    pub pointer: String,
    pub message: String,
}

/// Why text is not acceptable JSON. Names the 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line}, column {column}")]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Why [`write_value`] stopped: the value has no canonical form, or the sink failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Value(#[from] WriteError),
    #[error("writing canonical bytes failed: {0}")]
    Io(#[from] io::Error),
}

/// Writes the canonical bytes of `value` in `profile` to `out`.
///
/// A value without a canonical form in `profile` is an [`io::ErrorKind::InvalidData`] error
/// whose inner error is the [`WriteError`]; use [`write_value`] to get it typed.
pub fn write<W: io::Write>(value: &Value, profile: Profile, out: &mut W) -> io::Result<()> {
    write_value(value, profile, out).map_err(|e| match e {
        Error::Io(e) => e,
        Error::Value(e) => io::Error::new(io::ErrorKind::InvalidData, e),
    })
}

/// The canonical bytes of `value` in `profile`.
pub fn to_vec(value: &Value, profile: Profile) -> Result<Vec<u8>, WriteError> {
    let mut out = Vec::new();
    append_value(value, profile, &mut out)?;
    Ok(out)
}

/// Parses JSON text strictly (see [`ParseError`]) with the default [`ParseOptions`]:
/// nesting up to 256 levels, no NaN or infinities.
pub fn parse(bytes: &[u8]) -> Result<Value, ParseError> {
    parse_with(bytes, &ParseOptions::default())
}

/// Parses JSON text strictly with explicit [`ParseOptions`].
pub fn parse_with(bytes: &[u8], options: &ParseOptions) -> Result<Value, ParseError> {
    parser::Parser::new(bytes, *options).parse_document()
}
