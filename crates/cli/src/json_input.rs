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

/// How errors name the input: its path, or `<stdin>` for `-` or no path.
pub fn input_label(input: Option<&PathBuf>) -> String {
    match input {
        Some(p) if p.as_os_str() != "-" => p.display().to_string(),
        _ => "<stdin>".to_owned(),
    }
}

/// Default of `--max-input-bytes`: 1 GiB. A limit on everything read, so that `lockstep canon
/// /dev/zero` ends with an error instead of filling the memory.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 1 << 30;

static MAX_INPUT_BYTES: AtomicU64 = AtomicU64::new(DEFAULT_MAX_INPUT_BYTES);

/// Sets the limit of every later read (the global `--max-input-bytes` flag).
pub fn set_max_input_bytes(limit: u64) {
    MAX_INPUT_BYTES.store(limit, Ordering::Relaxed);
}

/// The limit set by `--max-input-bytes`.
pub fn max_input_bytes() -> u64 {
    MAX_INPUT_BYTES.load(Ordering::Relaxed)
}

/// The options every command parses with: NaN and infinity literals are accepted here so that
/// the profile, not the parser, decides about them: `python` writes them back as Python
/// does, `python-strict` and `jcs` refuse them naming their JSON Pointer.
pub fn parse_options() -> ParseOptions {
    ParseOptions {
        allow_nan: true,
        ..ParseOptions::default()
    }
}

/// A parse error as every command words it: `FILE:LINE:COLUMN: invalid JSON: MESSAGE`.
pub fn parse_error(label: &str, e: &lockstep_canon::ParseError) -> anyhow::Error {
    anyhow::anyhow!(
        "{label}:{}:{}: invalid JSON: {}",
        e.line,
        e.column,
        e.message
    )
}

/// The input's bytes (a file, or standard input for `-` or no path), refusing more than
/// `max_bytes`. The one place every command reads its JSON input.
pub fn read_input(input: Option<&PathBuf>, max_bytes: u64) -> anyhow::Result<Vec<u8>> {
    let label = input_label(input);
    let mut bytes = Vec::new();
    let read = match input {
        Some(p) if p.as_os_str() != "-" => std::fs::File::open(p).and_then(|f| {
            let size = f.metadata().map(|m| m.len()).unwrap_or(0);
            bytes.reserve_exact(size.min(max_bytes) as usize + 1);
            f.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes)
        }),
        _ => std::io::stdin()
            .lock()
            .take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes),
    };
    read.with_context(|| format!("cannot read {label}"))?;
    if bytes.len() as u64 > max_bytes {
        anyhow::bail!(
            "{label}: input is larger than the limit of {max_bytes} bytes (raise it with --max-input-bytes)"
        );
    }
    Ok(bytes)
}

/// An input's bytes: read into memory, or a regular file mapped read-only.
pub enum InputBytes {
    Read(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for InputBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            InputBytes::Read(v) => v,
            InputBytes::Mapped(m) => m,
        }
    }
}

/// Files at least this large are mapped by [`map_input`] rather than read.
const MAP_FROM_BYTES: u64 = 1 << 20;

/// As [`read_input`], for a command that reads its input once from start to end
/// (`fingerprint`): a large regular file is mapped instead of copied.
///
/// Why: reading copies the file from the page cache into fresh memory, one page fault per
/// 4 KiB page; for a 3 MB document that was a tenth of `lockstep fingerprint`'s time. A map
/// reads the page cache in place. The caveat of every map: another process that truncates or
/// rewrites the file while it is read makes the result meaningless (or ends the process with
/// SIGBUS, for a truncation); the digest of a file being written would be meaningless anyway.
pub fn map_input(input: Option<&PathBuf>, max_bytes: u64) -> anyhow::Result<InputBytes> {
    let Some(path) = input.filter(|p| p.as_os_str() != "-") else {
        return read_input(input, max_bytes).map(InputBytes::Read);
    };
    let label = input_label(input);
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {label}"))?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read {label}"))?;
    if !meta.is_file() || meta.len() < MAP_FROM_BYTES {
        return read_input(input, max_bytes).map(InputBytes::Read);
    }
    if meta.len() > max_bytes {
        anyhow::bail!(
            "{label}: input is larger than the limit of {max_bytes} bytes (raise it with --max-input-bytes)"
        );
    }
    // SAFETY: a private read-only map of a regular file; see the caveat above.
    let map =
        unsafe { memmap2::Mmap::map(&file) }.with_context(|| format!("cannot read {label}"))?;
    Ok(InputBytes::Mapped(map))
}

/// Reads and strictly parses the input (see [`parse_options`]).
pub fn read_value(input: Option<&PathBuf>) -> anyhow::Result<Value> {
    let label = input_label(input);
    let bytes = read_input(input, max_input_bytes())?;
    lockstep_canon::parse_with(&bytes, &parse_options()).map_err(|e| parse_error(&label, &e))
}

/// The bytes of the file at `path`, within the input limit.
pub fn read_bytes(path: &Path) -> anyhow::Result<Vec<u8>> {
    read_input(Some(&path.to_path_buf()), max_input_bytes())
}

/// Reads the JSON file at `path` (see [`read_value`]).
pub fn read_json(path: &Path) -> anyhow::Result<Value> {
    read_value(Some(&path.to_path_buf()))
}
