//! `check`, `trace` and goldens over Python envs: the CLI's library calls
//! (`lockstep::suite::run_here`, `lockstep::trace::rollout`, `lockstep::golden`) on a
//! [`PyFactory`], with the GIL released while they run.

use std::cell::RefCell;
use std::path::PathBuf;

use lockstep::check::ProcessRunner;
use lockstep::contract::Contract;
use lockstep::contracted::Contracted;
use lockstep::env::EnvFactory;
use lockstep::golden::{self, Golden};
use lockstep::report::{
    failure_groups, render_html_with, EnvParams, FailureGroup, FailureKind, Report, RunParams,
    Trial,
};
use lockstep::suite::{parse_checks, run_here, SuiteEnv, SuiteOptions};
use lockstep::trace::{rollout, Recorded, RolloutOptions};
use lockstep_protocol::{ProcessEnvFactory, ProcessOptions};
use pyo3::prelude::*;

use crate::convert::serde_to_py;
use crate::errors::{error, Kind};
use crate::py_env::PyFactory;

/// Stands in for the process runner when the env is not importable by name: `process` is then
/// not among the checks, and the others have no fresh process to compare with.
struct NoProcess;

impl ProcessRunner for NoProcess {
    fn run(&self, env: &str, _: u64, _: u64, _: Option<u64>) -> Result<Recorded, String> {
        Err(format!("{env}: the process check was not asked for"))
    }

    /// No fresh process: the multi-instance checks compare with a fresh instance here, and
    /// say so.
    fn run_reference(
        &self,
        _: &str,
        _: u64,
        _: u64,
        _: Option<u64>,
    ) -> Result<Option<Recorded>, String> {
        Ok(None)
    }
}

/// One failure of one trial: `(what, env, seed, text, replay)` (see `NativeReport::failures`).
type FailureRow = (String, String, u64, String, Option<String>);

/// A finished `check`: the CLI's report (`lockstep::report::Report`).
#[pyclass(module = "lockstep._native", frozen)]
pub struct NativeReport {
    report: Report,
}

#[pymethods]
impl NativeReport {
    /// Everything passed: conformity, every check run, no errors.
    #[getter]
    fn passed(&self) -> bool {
        self.report.passed
    }

    /// The bytes of report.json, as text.
    fn to_json(&self) -> String {
        String::from_utf8(self.report.to_json()).expect("JSON is UTF-8")
    }

    /// The report as plain Python objects (the structure of report.json).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.report)
    }

    /// What `lockstep check` prints for this report (`check -v` with `verbose`): the table
    /// and its legend, the failures grouped across seeds with their causes, the verdict. The
    /// CLI's renderer itself; each replay command is `replay(env, seed, checks)`'s (a Python
    /// call: no command line replays an env object of this interpreter), none without it.
    #[pyo3(signature = (verbose = false, replay = None))]
    fn render_text(
        &self,
        py: Python<'_>,
        verbose: bool,
        replay: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        with_replay(py, replay.as_ref(), |r| {
            lockstep_cli::summary_text(&self.report, r, verbose)
        })
    }

    /// Every failure of one trial, in the order of the grouped text (per env: errors, the
    /// reset contract, the checks): `(what, env, seed, text, replay)`, `what` being `"error"`,
    /// `"reset contract"` or the check's name, `text` the CLI's block for that trial alone and
    /// `replay` the command re-running it (for an error, the check of its seed).
    #[pyo3(signature = (replay = None))]
    fn failures(&self, py: Python<'_>, replay: Option<Py<PyAny>>) -> PyResult<Vec<FailureRow>> {
        with_replay(py, replay.as_ref(), |r| {
            let mut out = Vec::new();
            for g in failure_groups(&self.report) {
                let what = match g.kind {
                    FailureKind::Error => "error".to_string(),
                    FailureKind::ResetContract => "reset contract".to_string(),
                    FailureKind::Check(name) => name.to_string(),
                };
                for t in &g.trials {
                    let alone = FailureGroup {
                        env: g.env,
                        kind: g.kind,
                        trials: vec![*t],
                        variants: vec![vec![*t]],
                    };
                    let text = lockstep_cli::group_text(&alone, r);
                    let command = r(t, &g.checks());
                    out.push((what.clone(), t.env.clone(), t.seed, text, command));
                }
            }
            out
        })
    }

    /// The `lockstep` command that replays the failed `checks` of trial (`env`, `seed`), as
    /// `lockstep check` prints it (a report of the CLI's runs: `lockstep.ray.check`).
    fn cli_replay(&self, env: &str, seed: u64, checks: Vec<String>) -> Option<String> {
        let trial = self
            .report
            .trials
            .iter()
            .find(|t| t.env == env && t.seed == seed)?;
        let checks: Vec<&str> = checks.iter().map(String::as_str).collect();
        lockstep_cli::replay_from_report(&self.report)(trial, &checks)
    }

    /// Writes report.json and report.html into `dir` (created if needed), each atomically;
    /// report.html's replay commands are `replay`'s, as in [`Self::render_text`].
    #[pyo3(signature = (dir, replay = None))]
    fn write(&self, py: Python<'_>, dir: PathBuf, replay: Option<Py<PyAny>>) -> PyResult<()> {
        let html = with_replay(py, replay.as_ref(), |r| render_html_with(&self.report, r))?;
        std::fs::create_dir_all(&dir).map_err(|e| {
            error(
                Kind::Config,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
        for (name, bytes) in [
            ("report.json", self.report.to_json()),
            ("report.html", html.into_bytes()),
        ] {
            let path = dir.join(name);
            lockstep::atomic_file::write_atomic(&path, &bytes).map_err(|e| {
                error(
                    Kind::Config,
                    format!("cannot write {}: {e}", path.display()),
                )
            })?;
        }
        Ok(())
    }
}

/// A report.json's report (`lockstep.ray.check` reads the one its run wrote); `name` names the
/// text in an error.
#[pyfunction]
pub fn report_from_json(text: &str, name: &str) -> PyResult<NativeReport> {
    Report::from_json(text.as_bytes(), name)
        .map(|report| NativeReport { report })
        .map_err(|e| error(Kind::Config, e.to_string()))
}

/// Runs `f` with a replay command that calls `replay(env, seed, checks)` (a Python callable
/// returning a string or `None`), or gives none without one; the first exception it raises is
/// raised here, after `f`.
fn with_replay<T>(
    py: Python<'_>,
    replay: Option<&Py<PyAny>>,
    f: impl FnOnce(&dyn Fn(&Trial, &[&str]) -> Option<String>) -> T,
) -> PyResult<T> {
    let failed: RefCell<Option<PyErr>> = RefCell::new(None);
    let command = |t: &Trial, checks: &[&str]| -> Option<String> {
        let replay = replay?;
        let called = replay
            .call1(py, (t.env.as_str(), t.seed, checks.to_vec()))
            .and_then(|v| v.extract::<Option<String>>(py));
        called
            .map_err(|e| {
                failed.borrow_mut().get_or_insert(e);
            })
            .ok()
            .flatten()
    };
    let out = f(&command);
    match failed.into_inner() {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

fn child_runner(
    argv: Option<Vec<String>>,
    env: Vec<(String, String)>,
    ignore: &lockstep::ignore::Ignore,
) -> Box<dyn ProcessRunner> {
    match argv {
        Some(argv) => Box::new(ProcessEnvFactory::new(
            argv,
            ProcessOptions {
                env,
                ignore: ignore.clone(),
                ..ProcessOptions::default()
            },
        )),
        None => Box::new(NoProcess),
    }
}

/// Runs the reset-contract audit and `checks` of one env for every seed, in this process
/// (one trial after another), and assembles the CLI's report. `make` returns a fresh
/// `InProcess` object; `argv` serves the same env in a fresh process for the `process` check.
#[pyfunction]
#[pyo3(signature = (make, env_id, seeds, steps, checks, argv = None, child_env = Vec::new(), rollouts = None, seedless = false, budget = None, ignore = Vec::new(), timings = false, contract_file = None))]
#[allow(clippy::too_many_arguments)]
pub fn check(
    py: Python<'_>,
    make: Py<PyAny>,
    env_id: String,
    mut seeds: Vec<u64>,
    mut steps: u64,
    checks: Vec<String>,
    argv: Option<Vec<String>>,
    child_env: Vec<(String, String)>,
    mut rollouts: Option<usize>,
    seedless: bool,
    budget: Option<f64>,
    ignore: Vec<String>,
    timings: bool,
    contract_file: Option<PathBuf>,
) -> PyResult<NativeReport> {
    let kinds = parse_checks(&checks).map_err(|e| error(Kind::Config, e))?;
    let ignore =
        lockstep::ignore::Ignore::parse(&ignore).map_err(|e| error(Kind::Config, e.to_string()))?;
    let checks: Vec<String> = kinds.iter().map(|k| k.short().to_string()).collect();
    if seeds.is_empty() {
        return Err(error(Kind::Config, "check needs at least one seed"));
    }
    let factory = PyFactory {
        id: env_id.clone(),
        make,
    };
    // Held to a contract file as `lockstep check --contract FILE` holds an env: its probed
    // layers read after every reset with the CLI's probes.
    let factory: Box<dyn EnvFactory> = match contract_file {
        None => Box::new(factory),
        Some(path) => Box::new(Contracted {
            inner: factory,
            contract: Contract::load(&path).map_err(|e| error(Kind::Config, e.to_string()))?,
            probes: lockstep_layers::probes,
        }),
    };
    let factory = factory.as_ref();
    let runner = child_runner(argv, child_env, &ignore);
    if rollouts.is_some_and(|r| r < 2) {
        return Err(error(
            Kind::Config,
            "rollouts of the same-seed check must be at least 2 (it compares them)",
        ));
    }
    // `budget` as the CLI's --budget: one short rollout measures the env, the plan is cut in
    // the documented order (lockstep::budget), and the report keeps what was cut. Trials run
    // one after another here, so one at a time.
    let mut budget_record = None;
    if let Some(seconds) = budget {
        if !(seconds > 0.0 && seconds.is_finite()) {
            return Err(error(Kind::Config, "budget must be more than zero seconds"));
        }
        let budget = std::time::Duration::from_secs_f64(seconds);
        let requested = lockstep::budget::Plan {
            seeds: seeds.len(),
            rollouts: rollouts.unwrap_or_else(|| lockstep::check::default_rollouts(steps)),
            steps,
        };
        let measured = py
            .detach(|| lockstep::budget::measure(factory, seeds[0], steps))
            .map_err(|e| error(Kind::Env, format!("budget: measuring {env_id}: {e}")))?;
        let fitted = lockstep::budget::fit(requested, &kinds, measured, 1, budget);
        eprintln!("{}", lockstep_cli::budget_line(budget, measured, &fitted));
        seeds.truncate(fitted.plan.seeds);
        steps = fitted.plan.steps;
        if fitted.plan.rollouts != requested.rollouts {
            rollouts = Some(fitted.plan.rollouts);
        }
        budget_record = Some(lockstep::budget::BudgetRecord::of(
            budget, measured, &fitted,
        ));
    }
    let options = SuiteOptions {
        steps,
        checks: kinds,
        rollouts,
        fresh_runs: None,
        ignore: ignore.clone(),
        timings,
    };
    let params = RunParams {
        budget: budget_record,
        envs: vec![env_id.clone()],
        seeds: seeds.clone(),
        steps,
        checks,
        goldens: Vec::new(),
        rollouts,
        ignore: ignore.texts().to_vec(),
        timings,
        // A Python env object: it runs in this interpreter, by no command a replay could give.
        env_params: vec![EnvParams {
            env: env_id.clone(),
            seedless,
            command: None,
        }],
    };
    let report = py.detach(|| {
        let suite_env = [SuiteEnv {
            id: env_id,
            factory,
            runner: runner.as_ref(),
            seedless,
        }];
        // In this interpreter, one trial after another: the env object lives here.
        let work: Vec<(usize, u64)> = seeds.iter().map(|&s| (0, s)).collect();
        let trials = run_here(&suite_env, &work, &options, &|| {});
        Report::assemble(params, None, trials, Vec::new())
    });
    Ok(NativeReport { report })
}

/// Seconds of a duration in `--budget`'s syntax (`90s`, `2m`, `1h30m`): one grammar for the
/// CLI and Python.
#[pyfunction]
pub fn parse_duration(text: &str) -> PyResult<f64> {
    lockstep_cli::parse_duration(text)
        .map(|d| d.as_secs_f64())
        .map_err(|e| error(Kind::Config, e))
}

/// The episode digest (hex) of one rollout, as `lockstep trace` prints it.
#[pyfunction]
pub fn trace(
    py: Python<'_>,
    make: Py<PyAny>,
    env_id: String,
    seed: u64,
    steps: u64,
) -> PyResult<String> {
    let factory = PyFactory { id: env_id, make };
    py.detach(|| {
        let mut env = lockstep::env::EnvFactory::make(&factory)?;
        let r = rollout(env.as_mut(), seed, steps, &RolloutOptions::default());
        let closed = env.close();
        let r = r.map_err(|e| lockstep::env::EnvError::new(e.to_string()))?;
        closed?;
        Ok(r.trace.episode.to_hex())
    })
    .map_err(|e: lockstep::env::EnvError| error(Kind::Env, e.to_string()))
}

/// Records a golden file at `path` (refusing to overwrite one), changelog dated `date`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn golden_record(
    py: Python<'_>,
    make: Py<PyAny>,
    env_id: String,
    path: PathBuf,
    seed: u64,
    steps: u64,
    date: String,
) -> PyResult<String> {
    let factory = PyFactory { id: env_id, make };
    py.detach(|| {
        let g = golden::record(&factory, seed, steps, &date)?;
        g.save_new(&path)?;
        Ok(g.episode.to_hex())
    })
    .map_err(|e: golden::GoldenError| error(Kind::Golden, e.to_string()))
}

/// The env id a golden file names.
#[pyfunction]
pub fn golden_env(path: PathBuf) -> PyResult<String> {
    Golden::load(&path)
        .map(|g| g.env)
        .map_err(|e| error(Kind::Golden, e.to_string()))
}

/// Verifies the golden file at `path`: `(passed, summary, divergence or None)`.
#[pyfunction]
pub fn golden_verify<'py>(
    py: Python<'py>,
    make: Py<PyAny>,
    env_id: String,
    path: PathBuf,
) -> PyResult<(bool, String, Bound<'py, PyAny>)> {
    let golden = Golden::load(&path).map_err(|e| error(Kind::Golden, e.to_string()))?;
    let factory = PyFactory { id: env_id, make };
    let v = py
        .detach(|| golden::verify(&factory, &golden))
        .map_err(|e| error(Kind::Golden, e.to_string()))?;
    let summary = match (&v.divergence, v.passed) {
        (_, true) => format!("episode {} reproduced", golden.episode.short()),
        (Some(d), false) => format!(
            "drifted at step {}: {}",
            d.step,
            d.describe("golden", "now")
        ),
        (None, false) => format!("not reproduced ({})", v.notes.join("; ")),
    };
    let divergence = match &v.divergence {
        Some(d) => crate::convert::to_py(py, &d.to_value())?,
        None => py.None().into_bound(py),
    };
    Ok((v.passed, summary, divergence))
}
