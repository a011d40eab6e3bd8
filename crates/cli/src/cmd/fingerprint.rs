//! `lockstep fingerprint`: the SHA-256 of a JSON document's canonical bytes, as lowercase hex
//! followed by a newline.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use lockstep::fingerprint::{fingerprint, HashWriter};
use lockstep_canon::Profile;

use super::canon::ProfileArg;
use crate::json_input::{input_label, read_value};

#[derive(clap::Args)]
pub struct Args {
    /// Canonical profile.
    #[arg(long, value_enum, default_value = "python")]
    pub profile: ProfileArg,
    /// JSON file to read; `-` or nothing reads standard input.
    pub input: Option<PathBuf>,
    /// Benchmark: canonicalise and hash N more times and print timings to stderr
    /// (used by scripts/bench-fingerprint).
    #[arg(long, hide = true, value_name = "N")]
    pub bench: Option<u32>,
}

// `--bench` times parsing and hashing on purpose; the timings go to stderr, never into a digest.
#[allow(clippy::disallowed_methods)]
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let label = input_label(args.input.as_ref());
    let started = Instant::now();
    let value = read_value(args.input.as_ref())?;
    let read_and_parse = started.elapsed();
    let profile = Profile::from(args.profile);
    let digest = fingerprint(&value, profile).map_err(|e| {
        anyhow::anyhow!(
            "{label}: no canonical form in profile {profile}: {} at JSON Pointer {:?}",
            e.message,
            e.pointer
        )
    })?;
    outln!("{digest}");
    if let Some(runs) = args.bench.filter(|&n| n > 0) {
        let mut bytes = 0;
        let started = Instant::now();
        for _ in 0..runs {
            let mut hasher = HashWriter::new();
            lockstep_canon::write_value(&value, profile, &mut hasher)?;
            bytes = hasher.bytes_written();
            if hasher.finish_hex() != digest {
                anyhow::bail!("benchmark run gave a different digest");
            }
        }
        let per_run = started.elapsed().as_secs_f64() / f64::from(runs);
        eprintln!(
            "bench: canonical_bytes={bytes} read_parse_s={:.6} canonical_sha256_s={per_run:.6} \
             throughput_mb_s={:.1}",
            read_and_parse.as_secs_f64(),
            bytes as f64 / per_run / 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}
