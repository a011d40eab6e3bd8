//! Trials on other machines: `lockstep check --ray ADDRESS`. The run is planned and its report
//! assembled exactly as on one machine (`cmd::check`); a [`Cluster`] only runs the same
//! `lockstep worker ...` command lines elsewhere and hands back what each printed, in whatever
//! order they finish. [`run_on`] puts each answer in the one slot of the plan it belongs to.
//!
//! The Python package installs the Ray implementation (crates/python, `lockstep.ray`) with
//! [`set_connector`]; the standalone binary has none, and `--ray` says how to get it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{bail, Context as _};
use lockstep::report::{GoldenOutcome, Trial};

use crate::isolated::{golden_args, golden_of, Workers};

/// One worker process to run on some node: `lockstep worker relay ARGS...`, which runs
/// `lockstep worker ARGS...` in a fresh process there.
pub struct Task {
    /// The arguments after `worker`.
    pub args: Vec<String>,
    /// Files the worker reads that the node may not have (a golden file, a contract): the node
    /// writes each to a directory of its own and puts that copy's path in `args[arg]`.
    pub files: Vec<ShippedFile>,
}

/// A file shipped with a [`Task`].
pub struct ShippedFile {
    /// The index in [`Task::args`] of the argument naming it.
    pub arg: usize,
    /// Its file name (the copy keeps it).
    pub name: String,
    pub bytes: Vec<u8>,
}

/// What a node says of one finished task.
pub struct Answer {
    /// The index of the task in the slice given to [`Cluster::run`].
    pub task: usize,
    /// The lockstep version the node ran.
    pub version: String,
    /// Which node ran it (for messages only).
    pub node: String,
    /// The worker's result line, or why it has none: what `lockstep worker relay` printed
    /// on the node (its [`RelayAnswer`](crate::cmd::worker::RelayAnswer)).
    pub result: Result<String, String>,
}

/// Somewhere else to run worker processes.
pub trait Cluster {
    /// One line for the terminal: where the trials run and on how much.
    fn describe(&self) -> String;
    /// Runs every task, each in a fresh worker process, and calls `answer` once per finished
    /// task, in any order. A task lost with its node is run again by the cluster, never
    /// answered as failed; an error from `answer` stops the run.
    fn run(
        &self,
        tasks: &[Task],
        answer: &mut dyn FnMut(Answer) -> anyhow::Result<()>,
    ) -> anyhow::Result<()>;
}

/// How to reach a cluster: `--ray ADDRESS` and `--ray-cpus`.
pub struct ClusterOptions {
    /// `auto` (the cluster this machine belongs to) or `HOST:PORT`.
    pub address: String,
    /// CPUs the cluster reserves for each task.
    pub cpus_per_task: f64,
}

type Connector = Box<dyn Fn(&ClusterOptions) -> anyhow::Result<Box<dyn Cluster>> + Send + Sync>;

static CONNECTOR: OnceLock<Connector> = OnceLock::new();

/// Installs the way to reach a cluster (the Python package's Ray). The first call wins.
pub fn set_connector(connector: Connector) {
    let _ = CONNECTOR.set(connector);
}

/// Connects to the cluster `options` names.
pub fn connect(options: &ClusterOptions) -> anyhow::Result<Box<dyn Cluster>> {
    match CONNECTOR.get() {
        Some(connect) => connect(options),
        None => bail!(
            "--ray runs the trials on a Ray cluster, which this standalone binary cannot reach: \
             install the Python package with Ray (pip install './python[ray]') and run \
             `python -m lockstep check --ray {} ...` (docs/check.md, \"Many machines\")",
            options.address
        ),
    }
}

/// One answer per slot of the plan, whatever order they come in.
struct Slots<T> {
    filled: Vec<Option<T>>,
}

impl<T> Slots<T> {
    fn new(len: usize) -> Slots<T> {
        Slots {
            filled: (0..len).map(|_| None).collect(),
        }
    }

    /// Fills slot `i`; a slot outside the plan or answered before is refused.
    fn fill(&mut self, i: usize, value: T, what: impl Fn() -> String) -> anyhow::Result<()> {
        match self.filled.get_mut(i) {
            None => bail!(
                "the cluster answered task {i}, which is not in this run's plan of {} tasks",
                self.filled.len()
            ),
            Some(Some(_)) => bail!("the cluster answered {} twice", what()),
            Some(slot) => {
                *slot = Some(value);
                Ok(())
            }
        }
    }

    /// Every slot's value, in plan order; an unanswered slot is an error naming it.
    fn into_values(self, what: impl Fn(usize) -> String) -> anyhow::Result<Vec<T>> {
        self.filled
            .into_iter()
            .enumerate()
            .map(|(i, v)| v.with_context(|| format!("the cluster never answered {}", what(i))))
            .collect()
    }
}

/// The trials and the verified goldens of a run, in plan order.
pub type Ran = (Vec<Trial>, Vec<(GoldenOutcome, bool)>);

/// Runs `work` (trials) and `goldens` on `cluster`, one task each; results in the order of
/// `work` and `goldens`, as [`lockstep::suite::run_isolated`] gives them. `done` is called
/// after each answer (progress). Every node must run this lockstep's version.
pub fn run_on(
    cluster: &dyn Cluster,
    workers: &Workers,
    work: &[(usize, u64)],
    goldens: &[PathBuf],
    done: &dyn Fn(),
) -> anyhow::Result<Ran> {
    let mut tasks = Vec::with_capacity(work.len() + goldens.len());
    for &(env, seed) in work {
        let args = workers.trial_args(env, seed);
        let files = shipped_contract(&args)?;
        tasks.push(Task { args, files });
    }
    for file in goldens {
        tasks.push(golden_task(file)?);
    }

    let trial_name = |i: usize| {
        let (env, seed) = work[i];
        format!("the trial of {} for seed {seed}", workers.envs[env].id)
    };
    let golden_name = |i: usize| format!("the golden file {}", goldens[i].display());
    let mut trials = Slots::new(work.len());
    let mut verified = Slots::new(goldens.len());
    let mine = env!("CARGO_PKG_VERSION");
    cluster.run(&tasks, &mut |answer| {
        if answer.version != mine {
            bail!(
                "node {} runs lockstep {}, and this driver lockstep {mine}: a report must come \
                 from one version; install this version's wheel on every node (docs/check.md, \
                 \"Many machines\")",
                answer.node,
                answer.version
            );
        }
        let result = answer.result;
        let i = answer.task;
        if i < work.len() {
            let (env, seed) = work[i];
            trials.fill(i, workers.trial_of(env, seed, result), || trial_name(i))?;
        } else {
            let g = i - work.len();
            let file = goldens.get(g).map_or(Path::new(""), PathBuf::as_path);
            verified.fill(g, golden_of(file, result), || golden_name(g))?;
        }
        done();
        Ok(())
    })?;
    Ok((
        trials.into_values(trial_name)?,
        verified.into_values(golden_name)?,
    ))
}

/// A golden file's task: the file travels with it, and the outcome names the caller's path.
fn golden_task(file: &Path) -> anyhow::Result<Task> {
    let bytes = std::fs::read(file).with_context(|| format!("--golden {}", file.display()))?;
    let mut args: Vec<String> = golden_args(file)
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    args.extend(["--shown-as".to_string(), file.display().to_string()]);
    Ok(Task {
        args,
        files: vec![ShippedFile {
            arg: 1,
            name: file_name(file),
            bytes,
        }],
    })
}

/// The contract file a trial's `--contract PATH` names (before `--`), shipped with it.
fn shipped_contract(args: &[String]) -> anyhow::Result<Vec<ShippedFile>> {
    let flags = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let Some(at) = args[..flags].iter().position(|a| a == "--contract") else {
        return Ok(Vec::new());
    };
    let path = Path::new(&args[at + 1]);
    let bytes = std::fs::read(path).with_context(|| format!("--contract {}", path.display()))?;
    Ok(vec![ShippedFile {
        arg: at + 1,
        name: file_name(path),
        bytes,
    }])
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| "file".to_string(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_takes_one_answer_and_only_inside_the_plan() {
        let mut slots = Slots::new(2);
        slots.fill(1, "b", || "slot 1".into()).unwrap();
        let twice = slots.fill(1, "b again", || "slot 1".into()).unwrap_err();
        assert_eq!(twice.to_string(), "the cluster answered slot 1 twice");
        let outside = slots.fill(2, "c", || "slot 2".into()).unwrap_err();
        assert!(outside
            .to_string()
            .contains("not in this run's plan of 2 tasks"));
        let missing = slots.into_values(|i| format!("slot {i}")).unwrap_err();
        assert_eq!(missing.to_string(), "the cluster never answered slot 0");
    }

    #[test]
    fn answers_in_any_order_come_back_in_plan_order() {
        let mut slots = Slots::new(3);
        for i in [2, 0, 1] {
            slots.fill(i, i * 10, String::new).unwrap();
        }
        assert_eq!(
            slots.into_values(|_| String::new()).unwrap(),
            vec![0, 10, 20]
        );
    }

    #[test]
    fn a_contract_travels_with_its_trial() {
        let dir = tempfile::tempdir().unwrap();
        let contract = dir.path().join("reset.toml");
        std::fs::write(&contract, b"name = \"x\"").unwrap();
        let args: Vec<String> = [
            "trial",
            "--cmd",
            "--contract",
            &contract.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(["--", "python", "--contract", "not-ours"].map(String::from))
        .collect();
        let files = shipped_contract(&args).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!((files[0].arg, files[0].name.as_str()), (3, "reset.toml"));
        assert_eq!(files[0].bytes, b"name = \"x\"");
        let after_dashes: Vec<String> = ["trial", "--", "python", "--contract", "x"]
            .map(String::from)
            .to_vec();
        assert!(shipped_contract(&after_dashes).unwrap().is_empty());
    }

    /// A cluster that answers every task itself, last task first.
    struct Fake {
        version: &'static str,
        answer_twice: bool,
        fail_seed: Option<u64>,
    }

    fn value_after<'a>(args: &'a [String], flag: &str) -> &'a str {
        let at = args
            .iter()
            .position(|a| a == flag)
            .expect("the flag is there");
        &args[at + 1]
    }

    impl Cluster for Fake {
        fn describe(&self) -> String {
            "fake".into()
        }

        fn run(
            &self,
            tasks: &[Task],
            answer: &mut dyn FnMut(Answer) -> anyhow::Result<()>,
        ) -> anyhow::Result<()> {
            for (i, task) in tasks.iter().enumerate().rev() {
                let result = if task.args[0] == "golden" {
                    Err(format!("golden {} as {}", task.args[1], task.args[3]))
                } else {
                    let seed: u64 = value_after(&task.args, "--seed").parse().unwrap();
                    let id = value_after(&task.args, "--id");
                    match self.fail_seed == Some(seed) {
                        true => Err("the worker process of this trial failed (signal: 9)".into()),
                        false => Ok(serde_json::to_string(&Trial::errored(
                            id,
                            seed,
                            "ran".into(),
                        ))?),
                    }
                };
                for _ in 0..(1 + usize::from(self.answer_twice)) {
                    answer(Answer {
                        task: i,
                        version: self.version.into(),
                        node: "node-2".into(),
                        result: result.clone(),
                    })?;
                }
            }
            Ok(())
        }
    }

    fn workers() -> Workers {
        Workers {
            exe: PathBuf::from("lockstep"),
            prefix: Vec::new(),
            envs: vec![crate::isolated::WorkerEnv {
                id: "fixture".into(),
                args: vec!["--env".into(), "fixture".into()],
                seedless: false,
            }],
            options: lockstep::suite::SuiteOptions {
                steps: 5,
                checks: lockstep::suite::parse_checks(&["same".into()]).unwrap(),
                rollouts: None,
                fresh_runs: None,
                ignore: Default::default(),
                timings: false,
            },
            fresh_runs: None,
        }
    }

    #[test]
    fn answers_fill_the_plan_in_order_and_a_worker_failure_is_that_trials_error() {
        let dir = tempfile::tempdir().unwrap();
        let golden = dir.path().join("g.json");
        std::fs::write(&golden, b"{}").unwrap();
        let fake = Fake {
            version: env!("CARGO_PKG_VERSION"),
            answer_twice: false,
            fail_seed: Some(8),
        };
        let work = [(0, 7), (0, 8), (0, 9)];
        let done = std::cell::Cell::new(0);
        let (trials, goldens) = run_on(
            &fake,
            &workers(),
            &work,
            std::slice::from_ref(&golden),
            &|| done.set(done.get() + 1),
        )
        .unwrap();
        assert_eq!(done.get(), 4);
        let seeds: Vec<u64> = trials.iter().map(|t| t.seed).collect();
        assert_eq!(seeds, [7, 8, 9]);
        assert_eq!(trials[0].error.as_deref(), Some("ran"));
        assert!(trials[1].error.as_deref().unwrap().contains("signal: 9"));
        // The golden travelled as a file of its own, shown by the caller's path.
        let shown = &goldens[0].0;
        assert_eq!(shown.file, golden.display().to_string());
        assert!(shown.summary.ends_with(&format!("as {}", golden.display())));
    }

    #[test]
    fn another_version_or_a_second_answer_is_refused() {
        let old = Fake {
            version: "0.0.1",
            answer_twice: false,
            fail_seed: None,
        };
        let err = run_on(&old, &workers(), &[(0, 1)], &[], &|| {}).unwrap_err();
        assert!(
            err.to_string().contains("node node-2 runs lockstep 0.0.1"),
            "{err}"
        );
        let twice = Fake {
            version: env!("CARGO_PKG_VERSION"),
            answer_twice: true,
            fail_seed: None,
        };
        let err = run_on(&twice, &workers(), &[(0, 1)], &[], &|| {}).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the cluster answered the trial of fixture for seed 1 twice"
        );
    }
}
