//! Reading the JSON documents users give on the command line, with one rule for every
//! command: strict RFC 8259 parsing (duplicate keys, lone surrogates, trailing garbage and
//! too-deep nesting are errors at `FILE:LINE:COLUMN`), except that NaN and infinity literals
//! are accepted, because Python writes them; the canonical profile, not the reader, decides
//! whether a value with them has a canonical form.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context;
use lockstep_canon::{ParseOptions, Value};

/// How errors name the input: its path, or `<stdin>` for `-` or no path.
pub fn input_label(input: Option<&PathBuf>) -> String {
    match input {
        Some(p) if p.as_os_str() != "-" => p.display().to_string(),
        _ => "<stdin>".to_owned(),
    }
}

/// Reads and strictly parses the input. NaN and infinity literals are accepted here so that
/// the profile, not the parser, decides about them: `python` writes them back as Python
/// does, `python-strict` and `jcs` refuse them naming their JSON Pointer.
pub fn read_value(input: Option<&PathBuf>) -> anyhow::Result<Value> {
    let label = input_label(input);
    let mut bytes = Vec::new();
    match input {
        Some(p) if p.as_os_str() != "-" => {
            bytes = std::fs::read(p).with_context(|| format!("cannot read {label}"))?;
        }
        _ => {
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .with_context(|| format!("cannot read {label}"))?;
        }
    }
    let options = ParseOptions {
        allow_nan: true,
        ..ParseOptions::default()
    };
    lockstep_canon::parse_with(&bytes, &options).map_err(|e| {
        anyhow::anyhow!(
            "{label}:{}:{}: invalid JSON: {}",
            e.line,
            e.column,
            e.message
        )
    })
}

/// Reads the JSON file at `path` (see [`read_value`]).
pub fn read_json(path: &Path) -> anyhow::Result<Value> {
    read_value(Some(&path.to_path_buf()))
}
