//! `lockstep canon`: print a JSON document's canonical bytes.
//!
//! Exactly the canonical bytes go to stdout, with no trailing newline, so that
//! `lockstep canon FILE | sha256sum` equals `lockstep fingerprint FILE`.

use std::path::PathBuf;
use std::process::ExitCode;

use lockstep_canon::Profile;

use crate::json_input::{input_label, read_value};

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
    crate::output::write_bytes(&bytes)?;
    crate::output::flush()?;
    Ok(ExitCode::SUCCESS)
}
