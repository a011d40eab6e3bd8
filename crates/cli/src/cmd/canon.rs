//! `lockstep canon`: print a JSON document's canonical bytes.
//!
//! Exactly the canonical bytes go to stdout, with no trailing newline, so that
//! `lockstep canon FILE | sha256sum` equals `lockstep fingerprint FILE`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use lockstep_canon::{ParseOptions, Profile, Value};

/// The canonical profile to use, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileArg {
    /// Python's json.dumps(obj, sort_keys=True, separators=(',', ':')): NaN written as NaN.
    Python,
    /// As python, but NaN and infinities are errors.
    PythonStrict,
    /// RFC 8785 JSON Canonicalization Scheme.
    Jcs,
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::Python => Profile::Python,
            ProfileArg::PythonStrict => Profile::PythonStrict,
            ProfileArg::Jcs => Profile::Jcs,
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// Canonical profile.
    #[arg(long, value_enum, default_value = "python")]
    pub profile: ProfileArg,
    /// JSON file to read; `-` or nothing reads standard input.
    pub input: Option<PathBuf>,
}

/// What the input is called in messages: its path, or `<stdin>`.
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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let value = read_value(args.input.as_ref())?;
    let profile = Profile::from(args.profile);
    // Whole document first, so a value without a canonical form prints nothing at all.
    let bytes = lockstep_canon::to_vec(&value, profile).map_err(|e| {
        anyhow::anyhow!(
            "{}: no canonical form in profile {profile}: {} at JSON Pointer {:?}",
            input_label(args.input.as_ref()),
            e.message,
            e.pointer
        )
    })?;
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes).context("cannot write to stdout")?;
    out.flush().context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}
