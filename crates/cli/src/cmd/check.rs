//! `lockstep check`: the main job. Audits environments end to end (reset contract, the five
//! replay checks, golden files) and writes report.json and report.html.
//!
//! Work is (env, seed) trials, each in its own worker process (`crate::isolated`), `--jobs` of
//! them at once; the report is assembled from the results in run order, so it is
//! byte-identical whatever the number of jobs or shards.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use lockstep::golden::Golden;
use lockstep::report::{
    render_html_with, EnvParams, ExternalCommand, ReplayCommand, Report, RunParams, Shard, Trial,
};
use lockstep::suite::{parse_checks, run_isolated, shard_work, SuiteOptions};

use crate::envs::{EnvSource, ExternalEnvArgs};
use crate::isolated::{WorkerEnv, Workers};

/// Environments checked when none are named: the seed-000 experiment env and three range
/// scenarios.
pub const DEFAULT_ENVS: [&str; 4] = [
    "experiment",
    "range:ransomware",
    "range:apt_espionage",
    "range:ot_stuxnet",
];

/// The names `check` accepts and its exit status, under its options in `--help`. A test
/// (check_cli.rs) holds it to the list of built-in envs.
const AFTER_HELP: &str = "\
Environments (ENVS):
  experiment, experiment:partial-reset
      the reset-contract experiment env: a complete reset, or a partial one that keeps a cache
  fixture, fixture:<fault>
      a correct env, and faulty ones each check must catch; <fault> is one of global-rng,
      wall-clock, hash-order, sticky-cache, stale-info, late-divergence, seedless, drift,
      level-up, coin-flips, constant
  range:<scenario>[:<preset>][?key=value&...]
      the built-in network-defence range; <scenario> is ransomware, apt_espionage,
      cloud_hybrid, iot_grid or ot_stuxnet, <preset> easy, medium or hard
      (e.g. range:ransomware:medium?max_ticks=25; docs/range.md)
  webtask, webtask:partial-reset
      the experiment on real systems: HTTP server, SQLite, headless Chromium (docs/layers.md)
  --cmd -- ARGV...
      any other env, served over the lockstep protocol by ARGV (docs/protocol.md)

Your own Python env (with PYTHONPATH=python, or the Python package installed):
  lockstep check --cmd -- python -m lockstep_adapter factory MODULE:FUNCTION
      FUNCTION() returns a Gymnasium env, a Gymnasium vector env or a PettingZoo env;
      every attribute of env.unwrapped is its starting state; after FUNCTION, --exclude a,b
      leaves some out and --fields a,b audits only those; --budget 2m fits the run in 2 min
  lockstep check --cmd -- python -m lockstep_adapter gymnasium ENV_ID
  lockstep check --cmd -- python -m lockstep_adapter gymnasium-vector ENV_ID --num-envs N
  lockstep check --cmd -- python -m lockstep_adapter pettingzoo MODULE

Exit status:
  0  every check and golden passes
  1  a check or golden fails (the report says where)
  2  a usage error, or an environment error (the report keeps what was gathered)";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Environments to check (names below). Default: the reset-contract experiment env and
    /// range:ransomware, range:apt_espionage, range:ot_stuxnet.
    envs: Vec<String>,
    #[command(flatten)]
    external: ExternalEnvArgs,
    #[command(flatten)]
    compare: crate::envs::IgnoreArgs,
    /// RNG seeds, one trial each: a count N (seeds 0..N) or a half-open range A..B.
    #[arg(long, default_value = "0..5", allow_negative_numbers = true)]
    seeds: String,
    /// Steps per rollout.
    #[arg(long, default_value_t = 200, value_parser = crate::counts::steps, allow_negative_numbers = true)]
    steps: u64,
    /// Rollouts of the same-seed check on one instance (default: 10, fewer when --steps is
    /// above 1000: max(3, 10000 / steps)). A fault that shows at the k-th reset needs k.
    #[arg(long, value_name = "N", value_parser = crate::counts::rollouts, allow_negative_numbers = true)]
    rollouts: Option<usize>,
    /// Declare an env seedless (it has no randomness): its other-seed check is then reported
    /// as not applicable, unless seeds do differ. Repeatable; `cmd` names the --cmd env.
    #[arg(long, value_name = "ENV")]
    seedless: Vec<String>,
    /// Golden trajectory files to verify (repeatable).
    #[arg(long)]
    golden: Vec<PathBuf>,
    /// Directory for report.json and report.html.
    #[arg(long, default_value = "lockstep-report")]
    out: PathBuf,
    /// Trials run at once, each in its own process (default: the number of CPUs). The report
    /// is the same bytes whatever the number.
    #[arg(long, value_parser = crate::counts::jobs, allow_negative_numbers = true)]
    jobs: Option<usize>,
    /// Run only shard I of N (seeds and goldens by position); merge with `lockstep report merge`.
    #[arg(long)]
    shard: Option<String>,
    /// Replay checks to run, comma-separated, each once. One more runs only by name: `fork`
    /// (a worker forked from a warm process).
    #[arg(long, value_delimiter = ',', default_value = lockstep::check::DEFAULT_CHECKS)]
    checks: Vec<String>,
    /// Show every trial on the terminal, one block per failing trial, instead of failures
    /// grouped across seeds.
    #[arg(short, long)]
    verbose: bool,
    /// Fit the run into this much time (90s, 2m, 1h30m): one short rollout measures each env,
    /// then seeds (to 2), same-seed rollouts (to 3), seeds (to 1) and steps (halved, to 10) are
    /// cut in that order until the estimate fits. Every check still runs; the header and the
    /// report (params.budget) say what was cut. Default: off.
    #[arg(long, value_name = "DURATION", value_parser = crate::counts::duration, allow_negative_numbers = true)]
    budget: Option<std::time::Duration>,
    /// Record in report.json the wall time of the reset and each step of the runs every check
    /// compared (`checks[].step_ms`). Off by default: times differ from run to run, and a
    /// report without them is the same bytes every time.
    #[arg(long)]
    timings: bool,
    /// Run the trials on a Ray cluster: `auto` (the cluster this machine is a node of) or its
    /// HOST:PORT. One Ray task per trial and golden, each starting a fresh worker process on a
    /// node; the header, the table, report.json and report.html are the same bytes as without
    /// it. Needs the Python package with Ray (`pip install './python[ray]'`, then `python -m
    /// lockstep check --ray ...`; docs/check.md, "Many machines").
    #[arg(long, value_name = "ADDRESS")]
    ray: Option<String>,
    /// Print nothing but errors: the report says everything (the Python API's runs).
    #[arg(short, long)]
    quiet: bool,
    /// CPUs Ray reserves for each task (with --ray).
    #[arg(long, value_name = "N", default_value_t = 1.0, requires = "ray")]
    ray_cpus: f64,
}

/// Parses `N` (0..N) or `A..B` (half-open).
pub fn parse_seeds(text: &str) -> anyhow::Result<Vec<u64>> {
    if text.trim().starts_with('-') {
        bail!("--seeds {text:?}: seeds are whole numbers from 0; give a count N (seeds 0..N) or a range A..B");
    }
    let (lo, hi) = match text.split_once("..") {
        Some((a, b)) => (
            a.trim()
                .parse::<u64>()
                .with_context(|| format!("--seeds {text:?}: {a:?} is not a seed"))?,
            b.trim()
                .parse::<u64>()
                .with_context(|| format!("--seeds {text:?}: {b:?} is not a seed"))?,
        ),
        None => (
            0,
            text.trim()
                .parse::<u64>()
                .with_context(|| format!("--seeds {text:?}: not a count or A..B"))?,
        ),
    };
    if hi <= lo {
        bail!("--seeds {text:?} names no seed (A..B is half-open: B must exceed A)");
    }
    if hi - lo > 1_000_000 {
        bail!("--seeds {text:?}: more than a million seeds in one run; shard it");
    }
    Ok((lo..hi).collect())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut envs = args.envs.clone();
    let external_argv = args.external.command()?.map(<[String]>::to_vec);
    if let Some(argv) = &external_argv {
        envs.push(lockstep_protocol::display_argv(argv));
    }
    if envs.is_empty() {
        envs = DEFAULT_ENVS.iter().map(|s| s.to_string()).collect();
    }
    for (i, e) in envs.iter().enumerate() {
        if envs[..i].contains(e) {
            bail!("env {e:?} is named twice");
        }
    }
    let kinds = parse_checks(&args.checks).map_err(|e| anyhow::anyhow!("--checks: {e}"))?;
    let checks: Vec<String> = kinds.iter().map(|k| k.short().to_string()).collect();
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    if jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    if args.rollouts.is_some_and(|r| r < 2) {
        bail!("--rollouts must be at least 2 (the same-seed check compares rollouts)");
    }
    if args.ray.is_some() && args.jobs.is_some() {
        bail!("--jobs counts processes on this machine; with --ray the cluster schedules the trials (--ray-cpus sets each one's CPUs)");
    }
    if args.ray.is_some() && args.budget.is_some() {
        bail!("--budget fits a run to this machine's cores; with --ray the cluster's size decides: give --seeds and --steps instead");
    }
    if !(args.ray_cpus > 0.0 && args.ray_cpus.is_finite()) {
        bail!(
            "--ray-cpus {}: a task needs more than 0 CPUs",
            args.ray_cpus
        );
    }
    let mut seeds = parse_seeds(&args.seeds)?;
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;

    // Every env resolves, and every input and output is usable, before anything runs: a
    // mistake found after minutes of work would throw that work away.
    let mut contract = None;
    let contract_file = match &args.external.contract {
        Some(_) if args.external.command()?.is_none() => {
            bail!("--contract holds an external env to a contract: it needs --cmd -- ARGV...")
        }
        Some(path) => {
            contract = Some(lockstep::contract::Contract::load(path)?);
            Some(
                std::path::absolute(path)
                    .with_context(|| format!("{}", path.display()))?
                    .display()
                    .to_string(),
            )
        }
        None => None,
    };
    let ignore = args.compare.with_contract(contract.as_ref())?;
    let mut worker_envs = Vec::with_capacity(envs.len());
    for (i, id) in envs.iter().enumerate() {
        let external = external_argv.as_ref().filter(|_| i + 1 == envs.len());
        let args_of = match external {
            Some(argv) => external_args(&ExternalCommand {
                argv: argv.clone(),
                timeout: args.external.timeout,
                startup_timeout: args.external.startup_timeout,
                shared_dirs: args.external.shared_dirs,
                contract: contract_file.clone(),
            }),
            None => {
                crate::envs::resolve(id)?;
                vec!["--env".to_string(), id.clone()]
            }
        };
        worker_envs.push(WorkerEnv {
            id: id.clone(),
            args: args_of,
            seedless: false,
        });
    }
    EnvSource::external(&args.external)?; // validates --timeout
    for name in &args.seedless {
        let found = worker_envs
            .iter_mut()
            .enumerate()
            .find(|(i, e)| {
                e.id == *name || (name == "cmd" && external_argv.is_some() && i + 1 == envs.len())
            })
            .map(|(_, e)| e);
        match found {
            Some(e) => e.seedless = true,
            None => bail!("--seedless {name:?} names no env of this run"),
        }
    }
    for g in &args.golden {
        Golden::load(g).map_err(|e| anyhow::anyhow!("--golden: {e}"))?;
    }
    check_writable_dir(&args.out)?;
    let cluster = args
        .ray
        .as_ref()
        .map(|address| {
            crate::cluster::connect(&crate::cluster::ClusterOptions {
                address: address.clone(),
                cpus_per_task: args.ray_cpus,
            })
        })
        .transpose()?;

    let mut params = RunParams {
        budget: None,
        envs: envs.clone(),
        seeds: seeds.clone(),
        steps: args.steps,
        checks: checks.clone(),
        goldens: args
            .golden
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        rollouts: args.rollouts,
        ignore: ignore.texts().to_vec(),
        timings: args.timings,
        env_params: worker_envs
            .iter()
            .enumerate()
            .map(|(i, e)| EnvParams {
                env: e.id.clone(),
                seedless: e.seedless,
                command: external_argv
                    .as_ref()
                    .filter(|_| i + 1 == envs.len())
                    .map(|argv| ExternalCommand {
                        argv: argv.clone(),
                        timeout: args.external.timeout,
                        startup_timeout: args.external.startup_timeout,
                        shared_dirs: args.external.shared_dirs,
                        contract: contract_file.clone(),
                    }),
            })
            .collect(),
    };
    let mut options = SuiteOptions {
        steps: args.steps,
        checks: kinds,
        rollouts: args.rollouts,
        fresh_runs: None,
        ignore: ignore.clone(),
        timings: args.timings,
    };

    // TigerBeetle's habit: say what determines the run before running it.
    let header = format!(
        "lockstep {} check: envs {} seeds {} steps {} checks {} rollouts {}{}{}{}",
        env!("CARGO_PKG_VERSION"),
        envs.join(","),
        args.seeds,
        args.steps,
        checks.join(","),
        args.rollouts
            .unwrap_or_else(|| lockstep::check::default_rollouts(args.steps)),
        external_argv
            .as_ref()
            .map(|_| format!(" timeout {}s", args.external.timeout))
            .unwrap_or_default(),
        shard
            .map(|s| format!(" shard {}/{}", s.index, s.count))
            .unwrap_or_default(),
        if ignore.is_empty() {
            String::new()
        } else {
            format!(" ignore {}", ignore.texts().join(","))
        }
    );
    if !args.quiet {
        eprintln!("{header}");
    }

    if let Some(cluster) = cluster.as_ref().filter(|_| !args.quiet) {
        eprintln!("{}", cluster.describe());
    }

    let golden_files: Vec<PathBuf> = args
        .golden
        .iter()
        .enumerate()
        .filter(|(p, _)| shard.is_none_or(|s| s.owns(*p)))
        .map(|(_, g)| g.clone())
        .collect();

    // An external env that cannot start is one error, printed once; its trials are not run
    // (not started again for every seed and check).
    let sources = envs
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let source = match external_argv.as_ref().filter(|_| i + 1 == envs.len()) {
                Some(_) => EnvSource::external(&args.external)?.expect("--cmd was given"),
                None => EnvSource::named(id)?,
            };
            Ok((id.clone(), source))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let probed = crate::envs::probe_all(&sources);
    let broken: Vec<Option<String>> = probed.iter().map(|p| p.clone().err()).collect();
    // An external env goes by its handshake `env_id` (its command line stays in
    // `params.env_params`), unless another env of the run has that name.
    if let Some(Ok(Some(env_id))) = probed.last().filter(|_| external_argv.is_some()) {
        let last = envs.len() - 1;
        if !envs.contains(env_id) {
            envs[last] = env_id.clone();
            worker_envs[last].id = env_id.clone();
            params.envs[last] = env_id.clone();
            params.env_params[last].env = env_id.clone();
        }
    }
    if let Some(budget) = args.budget {
        // What measuring took counts against the budget: the wall clock, for the plan only.
        #[allow(clippy::disallowed_methods)]
        let started = std::time::Instant::now();
        let requested = lockstep::budget::Plan {
            seeds: seeds.len(),
            rollouts: args
                .rollouts
                .unwrap_or_else(|| lockstep::check::default_rollouts(args.steps)),
            steps: args.steps,
        };
        let measured = crate::budget::measure(&sources, &broken, seeds[0], args.steps)?;
        let parallel =
            jobs.min(std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get));
        let left = budget.saturating_sub(started.elapsed());
        let fitted = lockstep::budget::fit(requested, &options.checks, measured, parallel, left);
        if !args.quiet {
            eprintln!("{}", crate::budget::header_line(budget, measured, &fitted));
        }
        seeds.truncate(fitted.plan.seeds);
        params.seeds = seeds.clone();
        options.steps = fitted.plan.steps;
        params.steps = fitted.plan.steps;
        if fitted.plan.rollouts != requested.rollouts {
            options.rollouts = Some(fitted.plan.rollouts);
            params.rollouts = Some(fitted.plan.rollouts);
        }
        params.budget = Some(lockstep::budget::BudgetRecord::of(
            budget, measured, &fitted,
        ));
    }
    let work = shard_work(envs.len(), &seeds, shard);

    // This very CLI re-run (the interpreter and `-m lockstep` when it runs inside Python).
    let me = crate::child_runner::ChildRunner::current()?;
    // The trials' fresh-process references, each run once for the whole run (on one
    // machine: the nodes of a cluster share no directory, so there each trial runs its own).
    let fresh_runs = tempfile::Builder::new()
        .prefix("lockstep-fresh-runs-")
        .tempdir()
        .context("creating the directory of fresh-process references")?;
    let workers = Workers {
        exe: me.exe,
        prefix: me.prefix,
        envs: worker_envs,
        options,
        fresh_runs: cluster.is_none().then(|| fresh_runs.path().to_path_buf()),
    };
    let runnable: Vec<(usize, u64)> = work
        .iter()
        .filter(|(e, _)| broken[*e].is_none())
        .copied()
        .collect();
    let progress = match args.quiet {
        true => indicatif::ProgressBar::hidden(),
        false => progress_bar((runnable.len() + golden_files.len()) as u64),
    };
    let (ran, verified) = match &cluster {
        None => run_isolated(&workers, &runnable, &golden_files, jobs, &|| {
            progress.inc(1)
        }),
        Some(cluster) => {
            let done = || progress.inc(1);
            let ran =
                crate::cluster::run_on(cluster.as_ref(), &workers, &runnable, &golden_files, &done);
            ran.inspect_err(|_| progress.finish_and_clear())?
        }
    };
    let trials = crate::envs::with_unstarted(&work, &broken, &envs, ran);
    progress.finish_and_clear();
    let golden_errors = verified.iter().any(|(_, errored)| *errored);
    let goldens = verified.into_iter().map(|(g, _)| g).collect();

    let report = Report::assemble(params, shard, trials, goldens);
    // Built from the report alone, as `report merge` builds them: the same commands either way.
    let replay = replay_from_report(&report);
    // The results are printed before the report is written: a write that fails at the end
    // must not lose them.
    if !args.quiet {
        crate::output::print(&crate::render::summary_text(&report, &replay, args.verbose))?;
    }
    // A run in which no env started has nothing to report but the error already printed: it
    // leaves no report behind (nor a directory it created), so a failed start is not mistaken
    // for a run.
    let nothing_ran = broken.iter().all(Option::is_some) && golden_files.is_empty();
    if nothing_ran {
        eprintln!("no env started: no report written");
    } else {
        write_report(&report, &args.out, &replay)?;
        if !args.quiet {
            crate::output::print(&format!(
                "report: {}\n",
                args.out.join("report.html").display()
            ))?;
        }
    }
    // An environment that could not be checked is an error (2), not a finding (1); the report
    // is written either way when anything ran, with everything gathered before the error.
    let errored = golden_errors || report.trials.iter().any(|t| t.error.is_some());
    Ok(ExitCode::from(if errored {
        2
    } else if report.passed {
        0
    } else {
        1
    }))
}

/// The flags that name an external env for a worker or a replay command: `--cmd`, its
/// limits, and its command line after `--`, last.
fn external_args(c: &ExternalCommand) -> Vec<String> {
    let mut a = vec![
        "--cmd".to_string(),
        "--timeout".to_string(),
        c.timeout.to_string(),
    ];
    if let Some(s) = c.startup_timeout {
        a.extend(["--startup-timeout".to_string(), s.to_string()]);
    }
    if c.shared_dirs {
        a.push("--shared-dirs".to_string());
    }
    if let Some(contract) = &c.contract {
        a.extend(["--contract".to_string(), contract.clone()]);
    }
    a.push("--".to_string());
    a.extend(c.argv.iter().cloned());
    a
}

/// The command that replays a trial's failed checks (every failure ends with it), with every
/// flag that decides the result (`--steps`, `--rollouts`, `--seedless`, an external env's
/// command and limits), all read from the report's parameters, so that `check` and
/// `report merge` give the same commands; with no check named, the `lockstep check` of that
/// one seed, which re-runs its reset-contract audit. `None` for an env the report does not
/// say how to run (a built-in name this lockstep does not know).
pub fn replay_from_report(report: &Report) -> impl Fn(&Trial, &[&str]) -> Option<String> + '_ {
    move |t, failed| {
        let p = report.params.env_params_of(&t.env);
        let args = match &p.command {
            Some(c) => external_args(c),
            None => {
                crate::envs::resolve(&t.env).ok()?;
                vec!["--env".to_string(), t.env.clone()]
            }
        };
        let e = WorkerEnv {
            id: t.env.clone(),
            args,
            seedless: p.seedless,
        };
        Some(replay_of(
            &e,
            report.params.steps,
            report.params.rollouts,
            &report.params.ignore,
            t,
            failed,
        ))
    }
}

fn replay_of(
    e: &WorkerEnv,
    steps: u64,
    rollouts: Option<usize>,
    ignore: &[String],
    t: &Trial,
    failed: &[&str],
) -> String {
    // The env's flags first, its command after `--` last.
    let split = e
        .args
        .iter()
        .position(|a| a == "--")
        .unwrap_or(e.args.len());
    let (flags, argv) = e.args.split_at(split);
    if failed.is_empty() {
        return audit_command(steps, rollouts, ignore, e, t.seed, flags, argv);
    }
    let mut words = vec!["lockstep".to_string(), "replay".to_string()];
    words.extend(flags.iter().cloned());
    words.extend([
        "--seed".to_string(),
        t.seed.to_string(),
        "--steps".to_string(),
        steps.to_string(),
        "--checks".to_string(),
        failed.join(","),
    ]);
    if let Some(r) = rollouts {
        words.extend(["--rollouts".to_string(), r.to_string()]);
    }
    if e.seedless {
        words.push("--seedless".to_string());
    }
    words.extend(ignore_flags(ignore));
    words.extend(argv.iter().cloned());
    crate::shell::join(&words)
}

fn ignore_flags(ignore: &[String]) -> impl Iterator<Item = String> + '_ {
    ignore
        .iter()
        .flat_map(|p| ["--ignore".to_string(), p.clone()])
}

/// `lockstep check` of one env and seed, the replay of a failed reset-contract audit.
fn audit_command(
    steps: u64,
    rollouts: Option<usize>,
    ignore: &[String],
    e: &WorkerEnv,
    seed: u64,
    flags: &[String],
    argv: &[String],
) -> String {
    let mut words = vec!["lockstep".to_string(), "check".to_string()];
    // A built-in env is named by itself (`check` takes env names, not `--env`).
    match flags {
        [env_flag, id] if env_flag == "--env" => words.push(id.clone()),
        _ => words.extend(flags.iter().cloned()),
    }
    words.extend([
        "--seeds".to_string(),
        format!("{seed}..{}", seed + 1),
        "--steps".to_string(),
        steps.to_string(),
    ]);
    if let Some(r) = rollouts {
        words.extend(["--rollouts".to_string(), r.to_string()]);
    }
    if e.seedless {
        let name = if flags.first().is_some_and(|f| f == "--cmd") {
            "cmd".to_string()
        } else {
            e.id.clone()
        };
        words.extend(["--seedless".to_string(), name]);
    }
    words.extend(ignore_flags(ignore));
    words.extend(argv.iter().cloned());
    crate::shell::join(&words)
}

/// Proves a file can be written in `dir` before anything runs, creating it for the proof and
/// removing it again when it did not exist (the report creates it at the end).
fn check_writable_dir(dir: &Path) -> anyhow::Result<()> {
    let existed = dir.is_dir();
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
    let probe = tempfile::Builder::new()
        .prefix(".lockstep-probe-")
        .tempfile_in(dir)
        .with_context(|| format!("--out {}: cannot write there", dir.display()));
    drop(probe?);
    if !existed {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}

/// Writes report.json and report.html (with `replay`'s commands) into `dir` (created if
/// needed), each atomically.
pub fn write_report(report: &Report, dir: &Path, replay: &ReplayCommand<'_>) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json = dir.join("report.json");
    lockstep::atomic_file::write_atomic(&json, &report.to_json())
        .with_context(|| format!("cannot write {}", json.display()))?;
    let html = dir.join("report.html");
    lockstep::atomic_file::write_atomic(&html, render_html_with(report, replay).as_bytes())
        .with_context(|| format!("cannot write {}", html.display()))?;
    Ok(())
}

fn progress_bar(len: u64) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{bar:40}] {pos}/{len} trials {elapsed}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_specs() {
        assert_eq!(parse_seeds("3").unwrap(), vec![0, 1, 2]);
        assert_eq!(parse_seeds("9001..9004").unwrap(), vec![9001, 9002, 9003]);
        assert!(parse_seeds("5..5").is_err());
        assert!(parse_seeds("x").is_err());
        assert!(parse_seeds("0").is_err());
    }
}
