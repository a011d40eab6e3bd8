//! Reading the JSON documents users give on the command line, with one rule for every
//! command: strict RFC 8259 parsing (duplicate keys, lone surrogates, trailing garbage and
//! too-deep nesting are errors at `FILE:LINE:COLUMN`), except that NaN and infinity literals
//! are accepted, because Python writes them; the canonical profile, not the reader, decides
//! whether a value with them has a canonical form.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use lockstep_canon::{ParseOptions, Value};

/// Default of `--max-input-bytes`: 1 GiB. A limit on everything read, so that `lockstep canon
/// /dev/zero` ends with an error instead of filling the memory.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 1 << 30;

static MAX_INPUT_BYTES: AtomicU64 = AtomicU64::new(DEFAULT_MAX_INPUT_BYTES);

/// Sets the limit of every later read (the `--max-input-bytes` flag).
pub fn set_max_input_bytes(limit: u64) {
    MAX_INPUT_BYTES.store(limit, Ordering::Relaxed);
}

/// Reads all of `reader`, refusing more than the input limit.
fn read_limited(reader: impl Read, label: &str) -> anyhow::Result<Vec<u8>> {
    let limit = MAX_INPUT_BYTES.load(Ordering::Relaxed);
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {label}"))?;
    if bytes.len() as u64 > limit {
        anyhow::bail!(
            "{label}: larger than the input limit of {limit} bytes (raise it with --max-input-bytes)"
        );
    }
    Ok(bytes)
}

/// The bytes of the file at `path`, within the input limit.
pub fn read_bytes(path: &Path) -> anyhow::Result<Vec<u8>> {
    let label = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {label}"))?;
    read_limited(file, &label)
}

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
    let bytes = match input {
        Some(p) if p.as_os_str() != "-" => {
            let file = std::fs::File::open(p).with_context(|| format!("cannot read {label}"))?;
            read_limited(file, &label)?
        }
        _ => read_limited(std::io::stdin().lock(), &label)?,
    };
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
