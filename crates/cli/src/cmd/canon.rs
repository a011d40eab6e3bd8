//! `lockstep canon`: print a JSON document's canonical bytes.
//!
//! Exactly the canonical bytes go to stdout, with no trailing newline, so that
//! `lockstep canon FILE | sha256sum` equals `lockstep fingerprint FILE`.

use std::path::PathBuf;
use std::process::ExitCode;

use lockstep_canon::Profile;

use crate::json_input::{input_label, max_input_bytes, parse_error, parse_options, read_input};

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

/// An error of [`lockstep_canon::canonicalize`] as the commands word it.
pub fn canon_error(label: &str, profile: Profile, e: lockstep_canon::CanonError) -> anyhow::Error {
    match e {
        lockstep_canon::CanonError::Parse(e) => parse_error(label, &e),
        lockstep_canon::CanonError::Value(e) => anyhow::anyhow!(
            "{label}: no canonical form in profile {profile}: {} at JSON Pointer {:?}",
            e.message,
            e.pointer
        ),
        lockstep_canon::CanonError::Io(e) => {
            anyhow::Error::new(e).context("writing canonical bytes")
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let label = input_label(args.input.as_ref());
    let text = read_input(args.input.as_ref(), max_input_bytes())?;
    let profile = Profile::from(args.profile);
    // Whole document first, so a value without a canonical form prints nothing at all.
    let mut bytes = Vec::new();
    lockstep_canon::canonicalize(&text, &parse_options(), profile, &mut bytes)
        .map_err(|e| canon_error(&label, profile, e))?;
    drop(text);
    crate::output::write_bytes(&bytes)?;
    crate::output::flush()?;
    Ok(ExitCode::SUCCESS)
}
