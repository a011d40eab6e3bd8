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
    },
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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
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
        Job::Golden { file } => {
            let resolve = |name: &str| crate::envs::resolve(name).map_err(|e| format!("{e:#}"));
            let (outcome, errored) = verify_golden(&file, &resolve);
            serde_json::to_string(&GoldenResult { outcome, errored })?
        }
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
