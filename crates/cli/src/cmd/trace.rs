//! `lockstep trace`: the episode digest of one rollout, and the process runner of the
//! other-process replay check (which re-runs this executable with `--json`).
//!
//! Plain output is one line, the episode digest in hex, so two runs compare with `diff`.
//! `--json` prints the whole trace (format `lockstep/trace/v1`, docs/trace.md) and, with
//! `--capture K`, the full transition of step K (`captured`).

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use anyhow::Context as _;
use lockstep::check::ProcessRunner;
use lockstep::trace::{rollout, CacheMode, Recorded, RolloutOptions, Trace, TransitionRecord};

use crate::envs;

#[derive(clap::Args)]
pub struct Args {
    /// Environment name (e.g. `fixture`, `fixture:global-rng`, `range:ransomware`).
    #[arg(long, required_unless_present = "cmd")]
    pub env: Option<String>,
    /// Trace an external env: the command after `--` serves it over the lockstep protocol.
    #[arg(long, conflicts_with = "env")]
    pub cmd: bool,
    /// The external env's command line (after `--`), never passed through a shell.
    #[arg(last = true)]
    pub argv: Vec<String>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Steps after the reset (fewer when the episode ends first).
    #[arg(long, default_value_t = 100)]
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
}

/// The `--json` output: the trace, plus the captured transition when asked.
#[derive(serde::Serialize, serde::Deserialize)]
struct Output {
    #[serde(flatten)]
    trace: Trace,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    captured: Option<TransitionRecord>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (source, _) = envs::EnvSource::from_args(args.env.as_deref(), args.cmd, &args.argv)?;
    let factory = source.factory();
    let name = factory.id();
    let mut env = factory.make().map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let opts = RolloutOptions {
        capture: args.capture,
        cache: if args.no_cache {
            CacheMode::Off
        } else {
            CacheMode::On
        },
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
        let out = Output {
            trace: r.trace,
            captured,
        };
        println!("{}", serde_json::to_string(&out)?);
    } else {
        println!("{}", r.trace.episode);
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `lockstep trace ... --json` in a child process: a fresh process, so nothing of this
/// one (hash seeds, global state, the clock at start) can leak into the child's trace.
pub struct ChildRunner {
    pub exe: PathBuf,
}

impl ChildRunner {
    /// A runner of this very executable.
    pub fn current() -> anyhow::Result<ChildRunner> {
        Ok(ChildRunner {
            exe: std::env::current_exe().context("locating the lockstep executable")?,
        })
    }
}

impl ProcessRunner for ChildRunner {
    fn run(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(["trace", "--env", env, "--json"]).args([
            "--seed",
            &seed.to_string(),
            "--steps",
            &steps.to_string(),
        ]);
        if let Some(k) = capture {
            cmd.args(["--capture", &k.to_string()]);
        }
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", self.exe.display()))?;
        if !out.status.success() {
            return Err(format!(
                "`lockstep trace --env {env} --seed {seed}` exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let parsed: Output = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("the child's trace is not valid JSON: {e}"))?;
        let captured = parsed
            .captured
            .map(|c| c.to_transition())
            .transpose()
            .map_err(|e| e.to_string())?;
        Ok(Recorded {
            trace: parsed.trace,
            captured,
        })
    }
}
