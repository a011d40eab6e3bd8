//! `lockstep fingerprint`: the SHA-256 of a JSON document's canonical bytes, as lowercase hex
//! followed by a newline.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use lockstep::fingerprint::HashWriter;
use lockstep_canon::Profile;

use super::canon::{canon_error, ProfileArg};
use crate::json_input::{input_label, map_input, max_input_bytes, parse_error, parse_options};

#[derive(clap::Args)]
pub struct Args {
    /// Canonical profile.
    #[arg(long, value_enum, default_value = "python")]
    pub profile: ProfileArg,
    /// JSON file to read; `-` or nothing reads standard input.
    pub input: Option<PathBuf>,
    /// Benchmark: canonicalise and hash N more times (one pass, then parse and tree apart,
    /// then parse and the flat document apart) and print timings to stderr (used by
    /// scripts/bench-fingerprint).
    #[arg(long, hide = true, value_name = "N")]
    pub bench: Option<u32>,
}

// `--bench` times reading, parsing and hashing on purpose; the timings go to stderr, never
// into a digest.
#[allow(clippy::disallowed_methods)]
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let label = input_label(args.input.as_ref());
    let profile = Profile::from(args.profile);
    let started = Instant::now();
    let text = map_input(args.input.as_ref(), max_input_bytes())?;
    let read = started.elapsed();
    // Text to digest in one pass: no tree of the document is built (docs/canonical-json.md).
    let digest_of = |text: &[u8]| -> anyhow::Result<(String, u64)> {
        lockstep::fingerprint::digest_text(text, &parse_options(), profile)
            .map_err(|e| canon_error(&label, profile, e))
    };
    let (digest, bytes) = digest_of(&text)?;
    outln!("{digest}");
    if let Some(runs) = args.bench.filter(|&n| n > 0) {
        // The one-pass path, then the two steps it replaces (parse into a tree; canonical
        // bytes of the tree into SHA-256), each the mean of `runs`.
        let mean = |f: &mut dyn FnMut() -> anyhow::Result<()>| -> anyhow::Result<f64> {
            let started = Instant::now();
            for _ in 0..runs {
                f()?;
            }
            Ok(started.elapsed().as_secs_f64() / f64::from(runs))
        };
        let stream = mean(&mut || {
            if digest_of(&text)?.0 != digest {
                anyhow::bail!("benchmark run gave a different digest");
            }
            Ok(())
        })?;
        let value = lockstep_canon::parse_with(&text, &parse_options())
            .map_err(|e| parse_error(&label, &e))?;
        let parse = mean(&mut || {
            let v = lockstep_canon::parse_with(&text, &parse_options())
                .map_err(|e| parse_error(&label, &e))?;
            drop(std::hint::black_box(v));
            Ok(())
        })?;
        let tree_hash = mean(&mut || {
            let mut hasher = HashWriter::new();
            lockstep_canon::write_value(&value, profile, &mut hasher)?;
            if hasher.finish_hex() != digest {
                anyhow::bail!("benchmark run gave a different digest");
            }
            Ok(())
        })?;
        // The flat document: parse, then canonical bytes into SHA-256 (on a second thread,
        // as `lockstep::fingerprint::digest_document` does for large texts).
        let document_parse = mean(&mut || {
            let doc = lockstep_canon::Document::parse_with(&text, &parse_options())
                .map_err(|e| parse_error(&label, &e))?;
            drop(std::hint::black_box(doc));
            Ok(())
        })?;
        let doc = lockstep_canon::Document::parse_with(&text, &parse_options())
            .map_err(|e| parse_error(&label, &e))?;
        let document_hash = mean(&mut || {
            if lockstep::fingerprint::digest_document(&doc, profile)?.0 != digest {
                anyhow::bail!("benchmark run gave a different digest");
            }
            Ok(())
        })?;
        eprintln!(
            "bench: input_bytes={} canonical_bytes={bytes} read_s={:.6} stream_sha256_s={stream:.6} \
             parse_s={parse:.6} tree_sha256_s={tree_hash:.6} document_parse_s={document_parse:.6} \
             document_sha256_s={document_hash:.6}",
            text.len(),
            read.as_secs_f64(),
        );
    }
    Ok(ExitCode::SUCCESS)
}
