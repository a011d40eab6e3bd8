//! `lockstep check`: the main job. Audits environments end to end (reset contract, the five
//! replay checks, golden files) and writes report.json and report.html.
//!
//! Work is (env, seed) trials spread over `--jobs` threads; the report is assembled from the
//! results in run order, so it is byte-identical whatever the thread count or sharding.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use lockstep::report::{render_html, Report, RunParams, Shard, CHECK_NAMES};
use lockstep::suite::{run_trials, shard_work, verify_golden, SuiteEnv, SuiteOptions};

use crate::envs::{EnvSource, ExternalEnvArgs};

/// Environments checked when none are named: the seed-000 experiment env and three range
/// scenarios.
pub const DEFAULT_ENVS: [&str; 4] = [
    "experiment",
    "range:ransomware",
    "range:apt_espionage",
    "range:ot_stuxnet",
];

#[derive(clap::Args)]
pub struct Args {
    /// Environments to check (see `lockstep replay --help` for names). Default: the seed-000
    /// experiment env and range:ransomware, range:apt_espionage, range:ot_stuxnet.
    envs: Vec<String>,
    #[command(flatten)]
    external: ExternalEnvArgs,
    /// Seeds: a count N (seeds 0..N) or a half-open range A..B.
    #[arg(long, default_value = "0..5")]
    seeds: String,
    /// Steps per rollout.
    #[arg(long, default_value_t = 200)]
    steps: u64,
    /// Golden trajectory files to verify (repeatable).
    #[arg(long)]
    golden: Vec<PathBuf>,
    /// Directory for report.json and report.html.
    #[arg(long, default_value = "lockstep-report")]
    out: PathBuf,
    /// Worker threads (default: the number of CPUs). The report is the same bytes whatever
    /// the number.
    #[arg(long)]
    jobs: Option<usize>,
    /// Run only shard I of N (seeds and goldens by position); merge with `lockstep report merge`.
    #[arg(long)]
    shard: Option<String>,
    /// Replay checks to run, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "same,other,interleaved,process,parallel"
    )]
    checks: Vec<String>,
}

/// Parses `N` (0..N) or `A..B` (half-open).
pub fn parse_seeds(text: &str) -> anyhow::Result<Vec<u64>> {
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
    let external = EnvSource::external(&args.external)?;
    if external.is_some() {
        envs.push(lockstep_protocol::display_argv(&args.external.argv));
    }
    if envs.is_empty() {
        envs = DEFAULT_ENVS.iter().map(|s| s.to_string()).collect();
    }
    for (i, e) in envs.iter().enumerate() {
        if envs[..i].contains(e) {
            bail!("env {e:?} is named twice");
        }
    }
    for c in &args.checks {
        if !CHECK_NAMES.contains(&c.as_str()) {
            bail!("unknown check {c:?}; known: {}", CHECK_NAMES.join(", "));
        }
    }
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    if jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    let seeds = parse_seeds(&args.seeds)?;
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let params = RunParams {
        envs: envs.clone(),
        seeds: seeds.clone(),
        steps: args.steps,
        checks: args.checks.clone(),
        goldens: args
            .golden
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    };

    // TigerBeetle's habit: say what determines the run before running it.
    eprintln!(
        "lockstep {} check: envs {} seeds {} steps {}{}",
        env!("CARGO_PKG_VERSION"),
        envs.join(","),
        args.seeds,
        args.steps,
        shard
            .map(|s| format!(" shard {}/{}", s.index, s.count))
            .unwrap_or_default()
    );

    let mut external = external;
    let mut factories = Vec::with_capacity(envs.len());
    for (i, id) in envs.iter().enumerate() {
        // The external env, when there is one, is the last name in the list.
        let source = match external.take_if(|_| i + 1 == envs.len()) {
            Some(source) => source,
            None => EnvSource::named(id)?,
        };
        factories.push((id.clone(), source));
    }

    let suite_envs: Vec<SuiteEnv<'_>> = factories
        .iter()
        .map(|(id, source)| SuiteEnv {
            id: id.clone(),
            factory: source.factory(),
            runner: source.runner(),
        })
        .collect();
    let work = shard_work(suite_envs.len(), &seeds, shard);
    // An env that cannot start is one error, printed once; its trials are not run.
    let broken = crate::envs::probe_all(&factories);
    let golden_files: Vec<&PathBuf> = args
        .golden
        .iter()
        .enumerate()
        .filter(|(p, _)| shard.is_none_or(|s| s.owns(*p)))
        .map(|(_, g)| g)
        .collect();

    let progress = progress_bar((work.len() + golden_files.len()) as u64);
    let options = SuiteOptions {
        steps: args.steps,
        checks: args.checks.clone(),
        jobs,
    };
    let runnable: Vec<(usize, u64)> = work
        .iter()
        .filter(|(e, _)| broken[*e].is_none())
        .copied()
        .collect();
    let ran = run_trials(&suite_envs, &runnable, &options, &|| progress.inc(1));
    let trials = crate::envs::with_unstarted(&work, &broken, &envs, ran);
    let mut goldens = Vec::new();
    let mut golden_errors = false;
    let resolve = |name: &str| crate::envs::resolve(name).map_err(|e| format!("{e:#}"));
    for g in golden_files {
        let (outcome, errored) = verify_golden(g, &resolve);
        golden_errors |= errored;
        goldens.push(outcome);
        progress.inc(1);
    }
    progress.finish_and_clear();

    let report = Report::assemble(params, shard, trials, goldens);
    write_report(&report, &args.out)?;
    print!("{}", crate::render::summary_text(&report));
    println!("report: {}", args.out.join("report.html").display());
    // An environment that could not be checked is an error (2), not a finding (1); the report
    // is written either way, with everything gathered before the error.
    let errored = golden_errors || report.trials.iter().any(|t| t.error.is_some());
    Ok(ExitCode::from(if errored {
        2
    } else if report.passed {
        0
    } else {
        1
    }))
}

/// Writes report.json and report.html into `dir`, each atomically.
pub fn write_report(report: &Report, dir: &Path) -> anyhow::Result<()> {
    let json = dir.join("report.json");
    lockstep::atomic_file::write_atomic(&json, &report.to_json())
        .with_context(|| format!("cannot write {}", json.display()))?;
    let html = dir.join("report.html");
    lockstep::atomic_file::write_atomic(&html, render_html(report).as_bytes())
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
