//! `lockstep trace`: the episode digest of one rollout. With `--json` it is also what the
//! other-process replay check runs in a fresh process (see `child_runner`).
//!
//! Plain output is one line, the episode digest in hex, so two runs compare with `diff`.
//! `--json` prints the whole trace (format `lockstep/trace/v1`, or v2 with `--format v2`;
//! docs/trace.md) and, with
//! `--capture K`, the full transition of step K (`captured`).

use std::process::ExitCode;

use anyhow::Context as _;
use lockstep::trace::{rollout, CacheMode, Format, RolloutOptions, TransitionRecord};

use crate::child_runner::TraceOutput;
use crate::envs::{EnvArgs, IgnoreArgs};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: EnvArgs,
    #[arg(long, default_value_t = 0, value_parser = crate::counts::seed, allow_negative_numbers = true)]
    pub seed: u64,
    /// Steps after the reset (fewer when the episode ends first).
    #[arg(long, default_value_t = 100, value_parser = crate::counts::steps, allow_negative_numbers = true)]
    pub steps: u64,
    /// Print the whole trace as JSON instead of the episode digest.
    #[arg(long)]
    pub json: bool,
    /// With --json: include the full transition of this step (`captured`).
    #[arg(long, requires = "json")]
    pub capture: Option<u64>,
    /// Hash every array at every step (the digests are the same; for measuring).
    #[arg(long)]
    pub no_cache: bool,
    /// Trace format: v1 (digests per agent and key, what checks and golden files use), v2
    /// (one BLAKE3 hash per step, several times cheaper), v3 (v2 with the non-cryptographic
    /// XXH3-128, cheaper again: equality across runs only) or v4 (v3 with infos as their value
    /// layout instead of canonical text: what checks compare rollouts by); docs/trace.md.
    #[arg(long, value_enum, default_value_t = TraceFormat::V1)]
    pub format: TraceFormat,
    #[command(flatten)]
    pub compare: IgnoreArgs,
}

/// `--format` of `lockstep trace` and `lockstep range bench --trace`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    V1,
    V2,
    V3,
    V4,
}

impl From<TraceFormat> for Format {
    fn from(f: TraceFormat) -> Format {
        match f {
            TraceFormat::V1 => Format::V1,
            TraceFormat::V2 => Format::V2,
            TraceFormat::V3 => Format::V3,
            TraceFormat::V4 => Format::V4,
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let source = args.target.source()?;
    let ignore = args.compare.with_contract(source.contract())?;
    let factory = source.factory();
    let name = factory.id();
    // An external env's errors already name its command line: say it once.
    let mut env = factory.make().map_err(|e| {
        if e.message.contains(&name) {
            anyhow::anyhow!("{e}")
        } else {
            anyhow::anyhow!("{name}: {e}")
        }
    })?;
    let opts = RolloutOptions {
        capture: args.capture,
        cache: if args.no_cache {
            CacheMode::Off
        } else {
            CacheMode::On
        },
        format: args.format.into(),
        ignore,
        ..RolloutOptions::default()
    };
    let r = rollout(env.as_mut(), args.seed, args.steps, &opts)
        .with_context(|| format!("env {name}, seed {}", args.seed))?;
    if args.json {
        let captured = r
            .captured
            .as_ref()
            .map(TransitionRecord::from_transition)
            .transpose()?;
        let out = TraceOutput {
            trace: r.trace,
            captured,
            step_times_us: lockstep::trace::micros(&r.step_times),
        };
        outln!("{}", serde_json::to_string(&out)?);
    } else {
        outln!("{}", r.trace.episode);
    }
    Ok(ExitCode::SUCCESS)
}
