//! `lockstep worker`: one trial or one golden verification in this fresh process, the result
//! as one line of JSON on stdout. `lockstep check` starts one worker per trial (see
//! `crate::isolated`), so that no two trials share a process and a verdict never depends on
//! `--jobs`. Hidden from help: it is the check's own plumbing, not a command for people.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use lockstep::report::GoldenOutcome;
use lockstep::suite::{parse_checks, run_trial, verify_golden, SuiteEnv, SuiteOptions};

use crate::envs::{EnvArgs, IgnoreArgs};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    job: Job,
}

#[derive(clap::Subcommand)]
enum Job {
    /// The audit and the replay checks of one env and seed.
    Trial(TrialArgs),
    /// The verification of one golden file.
    Golden {
        /// The golden file.
        file: PathBuf,
        /// The name the outcome gives the file: the caller's path, when this worker reads a
        /// copy of it (a Ray task on another machine).
        #[arg(long, value_name = "PATH")]
        shown_as: Option<PathBuf>,
    },
    /// Runs `worker ARGS...` in a fresh process of its own, as `lockstep check` runs each
    /// trial on one machine (private directories, death with this process), and prints its
    /// answer as one JSON line: `{"ok": LINE}` or `{"error": WHY}`. What a cluster's task
    /// runs on its node (crate::cluster), so that no trial runs in the task's own process.
    Relay {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        args: Vec<std::ffi::OsString>,
    },
}

/// What `worker relay` prints: the relayed worker's answer.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RelayAnswer {
    /// The worker's result line.
    Ok(String),
    /// Why the worker gave none.
    Error(String),
}

#[derive(clap::Args)]
struct TrialArgs {
    /// The env's id in the parent's report (an external env's command line as displayed).
    #[arg(long)]
    id: String,
    #[arg(long)]
    seed: u64,
    #[arg(long)]
    steps: u64,
    #[arg(long, value_delimiter = ',')]
    checks: Vec<String>,
    #[arg(long)]
    rollouts: Option<usize>,
    #[arg(long)]
    seedless: bool,
    #[arg(long)]
    timings: bool,
    #[command(flatten)]
    compare: IgnoreArgs,
    #[command(flatten)]
    target: EnvArgs,
}

/// What `worker golden` prints.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct GoldenResult {
    pub outcome: GoldenOutcome,
    /// The file could not be verified at all (see `lockstep::suite::verify_golden`).
    pub errored: bool,
}

/// The variable a worker's starter sets to its own pid when it cannot set the parent-death
/// signal itself (Python's `subprocess` in a threaded Ray worker): the worker sets it, so it
/// dies with the process that started it, as the local workers do (`crate::isolated`).
pub const DIE_WITH_PARENT_VAR: &str = "LOCKSTEP_DIE_WITH_PARENT";

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(parent) = std::env::var_os(DIE_WITH_PARENT_VAR) {
        die_with(&parent.to_string_lossy())?;
    }
    let line = match args.job {
        Job::Trial(a) => {
            let source = a.target.source()?;
            let ignore = a.compare.with_contract(source.contract())?;
            let source = source.ignoring(&ignore);
            let env = SuiteEnv {
                id: a.id,
                factory: source.factory(),
                runner: source.runner(),
                seedless: a.seedless,
            };
            let options = SuiteOptions {
                steps: a.steps,
                checks: parse_checks(&a.checks).map_err(anyhow::Error::msg)?,
                rollouts: a.rollouts,
                fresh_runs: std::env::var_os(crate::isolated::FRESH_RUNS_VAR)
                    .map(std::path::PathBuf::from),
                ignore,
                timings: a.timings,
            };
            serde_json::to_string(&run_trial(&env, a.seed, &options))?
        }
        Job::Golden { file, shown_as } => {
            let resolve = |name: &str| crate::envs::resolve(name).map_err(|e| format!("{e:#}"));
            let (mut outcome, errored) = verify_golden(&file, &resolve);
            if let Some(shown) = shown_as {
                let (copy, shown) = (file.display().to_string(), shown.display().to_string());
                outcome.summary = outcome.summary.replace(&copy, &shown);
                outcome.file = shown;
            }
            serde_json::to_string(&GoldenResult { outcome, errored })?
        }
        Job::Relay { args } => {
            let me = crate::child_runner::ChildRunner::current()?;
            let answer = match crate::isolated::run_worker(&me.exe, &me.prefix, &args, None) {
                Ok(line) => RelayAnswer::Ok(line),
                Err(why) => RelayAnswer::Error(why),
            };
            serde_json::to_string(&answer)?
        }
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Asks the kernel to kill this process when its parent (pid `parent`) ends, and ends now if
/// that parent is already gone (then this process was re-parented before the request).
#[cfg(target_os = "linux")]
fn die_with(parent: &str) -> anyhow::Result<()> {
    let parent: i32 = parent
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("{DIE_WITH_PARENT_VAR}={parent:?} is not a process id"))?;
    // SAFETY: prctl(2) and getppid(2) with plain integer arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
            anyhow::bail!(
                "prctl(PR_SET_PDEATHSIG): {}",
                std::io::Error::last_os_error()
            );
        }
        if libc::getppid() != parent {
            anyhow::bail!("the process that started this worker (pid {parent}) has ended");
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn die_with(_parent: &str) -> anyhow::Result<()> {
    Ok(())
}
