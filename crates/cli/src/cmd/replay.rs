//! `lockstep replay`: the five replay checks on one env.
//!
//! Prints the lockstep version and every parameter first (the seed above all: TigerBeetle's
//! habit, so any run can be replayed), then one line per check, the explanation of each
//! failure (first divergence with both values), and the command that replays the failures.
//! Exit 0 when every check passes, 1 when one fails, 2 on an error.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use lockstep::cause::Cause;
use lockstep::check::{run_check, CheckConfig, CheckOutcome};
use lockstep::suite::parse_checks;

use crate::envs::EnvArgs;
use crate::shell::{join, quote};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: EnvArgs,
    #[arg(long, default_value_t = 0, value_parser = crate::counts::seed, allow_negative_numbers = true)]
    pub seed: u64,
    /// Steps per rollout after the reset (fewer when the episode ends first).
    #[arg(long, default_value_t = 100, value_parser = crate::counts::steps, allow_negative_numbers = true)]
    pub steps: u64,
    /// Rollouts of the same-seed check on one instance (default: 10, fewer when --steps is
    /// above 1000: max(3, 10000 / steps)).
    #[arg(long, value_name = "N", value_parser = crate::counts::rollouts, allow_negative_numbers = true)]
    pub rollouts: Option<usize>,
    /// Declare the env seedless (it has no randomness): the other-seed check is then not
    /// applicable, unless seeds do differ.
    #[arg(long)]
    pub seedless: bool,
    /// Checks to run, comma-separated, each once: same, other, interleaved, process, parallel,
    /// continuation, and by name only fork (forked workers: external envs whose child can fork).
    #[arg(long, value_delimiter = ',', default_value = lockstep::check::DEFAULT_CHECKS)]
    pub checks: Vec<String>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub compare: crate::envs::IgnoreArgs,
}

/// The `--json` file (format `lockstep/replay/v1`, docs/replay.md).
#[derive(serde::Serialize)]
struct Report<'a> {
    format: &'static str,
    lockstep: &'static str,
    env: &'a str,
    seed: u64,
    steps: u64,
    passed: bool,
    checks: &'a [Replayed],
    /// Checks that could not run (an env error), with the reason.
    errors: &'a [String],
    /// The command that replays the failed checks (absent when all pass).
    #[serde(skip_serializing_if = "Option::is_none")]
    replay: Option<String>,
}

/// One check's outcome, and for a failure the line of the env's code that caused it, as
/// `lockstep check` finds it (`lockstep::cause::of_failure`).
#[derive(serde::Serialize)]
struct Replayed {
    #[serde(flatten)]
    outcome: CheckOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<Cause>,
}

/// Sites of a cause shown after the first, as `lockstep check` shows them.
const CAUSE_SITES_SHOWN: usize = 3;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let source = args.target.source()?;
    let ignore = args.compare.with_contract(source.contract())?;
    let source = source.ignoring(&ignore);
    let kinds = parse_checks(&args.checks).map_err(|e| anyhow::anyhow!("--checks: {e}"))?;
    if args.rollouts.is_some_and(|r| r < 2) {
        anyhow::bail!("--rollouts must be at least 2 (the same-seed check compares rollouts)");
    }
    let version = env!("CARGO_PKG_VERSION");
    let cfg = {
        let mut cfg = CheckConfig::new(args.seed, args.steps);
        if let Some(r) = args.rollouts {
            cfg.rollouts = r;
        }
        cfg.seedless = args.seedless;
        cfg.ignore = ignore.clone();
        cfg
    };
    // Every flag that decides a result is in the command, so that it replays the same run.
    let command = |checks: &str| {
        let (which, argv) = match &args.target.env {
            Some(name) => (format!("--env {}", quote(name)), String::new()),
            None => (
                format!("--cmd --timeout {}", args.target.external.timeout),
                format!(" -- {}", join(&args.target.external.argv)),
            ),
        };
        let rollouts = args
            .rollouts
            .map(|r| format!(" --rollouts {r}"))
            .unwrap_or_default();
        let seedless = if args.seedless { " --seedless" } else { "" };
        let ignored: String = ignore
            .texts()
            .iter()
            .map(|p| format!(" --ignore {}", quote(p)))
            .collect();
        format!(
            "lockstep replay {which} --seed {} --steps {}{rollouts}{seedless}{ignored}{checks}{argv}",
            args.seed, args.steps
        )
    };
    outln!("lockstep {version} {}", &command("")["lockstep ".len()..]);
    // An env that cannot start is one error, said once, not one per check.
    source.probe()?;
    // One trial: its instances share one child when an external env offers lockstep/2.
    let session = source.factory().session();
    let factory = session.as_deref().unwrap_or(source.factory());
    let runner = source.runner();
    let mut outcomes = Vec::with_capacity(kinds.len());
    let mut errors = Vec::new();
    for kind in kinds {
        // A check that cannot run is reported and the others still run: what was gathered
        // before an error is kept (and written to --json).
        let o = match run_check(kind, factory, &cfg, Some(runner)) {
            Ok(o) => o,
            Err(e) => {
                outln!("ERR  {:<17} {e}", kind.name());
                errors.push(format!("{}: {e}", kind.name()));
                continue;
            }
        };
        let mark = match (o.applicable, o.passed) {
            (false, _) => "n/a ",
            (true, true) => "ok  ",
            (true, false) => "FAIL",
        };
        outln!("{mark} {:<17} {}", o.check.name(), o.summary);
        if let Some(note) = o.divergence.as_ref().and_then(|d| d.note.as_ref()) {
            if !o.passed {
                outln!("     {:<17} note: {note}", "");
            }
        }
        // The symptom is above; the cause, for an env with a source tracer, is the line of
        // its code that read a nondeterministic source (a traced re-run in a fresh session).
        let cause = lockstep::cause::of_failure(kind, source.factory(), runner, &cfg, &o);
        for line in cause.iter().flat_map(|c| c.lines(CAUSE_SITES_SHOWN)) {
            outln!("     {:<17} {line}", "");
        }
        outcomes.push(Replayed { outcome: o, cause });
    }
    let failed: Vec<&CheckOutcome> = outcomes
        .iter()
        .map(|r| &r.outcome)
        .filter(|o| !o.passed && o.applicable)
        .collect();
    let not_applicable = outcomes.iter().filter(|r| !r.outcome.applicable).count();
    let replay = (!failed.is_empty()).then(|| {
        let names: Vec<&str> = failed.iter().map(|o| o.check.short()).collect();
        command(&format!(" --checks {}", names.join(",")))
    });
    if let Some(path) = &args.json {
        let report = Report {
            format: "lockstep/replay/v1",
            lockstep: version,
            env: &factory.id(),
            seed: args.seed,
            steps: args.steps,
            passed: failed.is_empty() && errors.is_empty(),
            checks: &outcomes,
            errors: &errors,
            replay: replay.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&report)?;
        bytes.push(b'\n');
        lockstep::atomic_file::write_atomic(path, &bytes)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(cmd) = &replay {
        outln!(
            "{} of {} checks failed",
            failed.len(),
            outcomes.len() + errors.len()
        );
        outln!("replay the failures with: {cmd}");
    }
    if !errors.is_empty() {
        anyhow::bail!(
            "{} of the checks could not run:\n  {}",
            errors.len(),
            errors.join("\n  ")
        );
    }
    if replay.is_some() {
        return Ok(ExitCode::from(1));
    }
    if not_applicable > 0 {
        outln!(
            "all {} checks that apply passed ({not_applicable} not applicable)",
            outcomes.len() - not_applicable
        );
    } else {
        outln!("all {} checks passed", outcomes.len());
    }
    Ok(ExitCode::SUCCESS)
}
