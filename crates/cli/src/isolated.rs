//! Trials in fresh processes: `lockstep check`'s implementation of
//! [`lockstep::suite::Isolated`]. Each trial and each golden is this very executable re-run as
//! `lockstep worker trial ...` / `lockstep worker golden FILE`, which prints its result as one
//! JSON line. A worker that crashes, is killed or prints no result becomes an error of that
//! trial alone, with the end of its stderr.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use lockstep::private_dirs::PrivateDirs;
use lockstep::report::{GoldenOutcome, Trial};
use lockstep::suite::{Isolated, SuiteOptions};

use crate::cmd::worker::GoldenResult;

/// How a worker names one env of the run.
pub struct WorkerEnv {
    /// The env's id in the report.
    pub id: String,
    /// `--env NAME`, or `--cmd --timeout S -- ARGV...` (always last: `--` ends the flags).
    pub args: Vec<String>,
    /// The user declared it seedless.
    pub seedless: bool,
}

/// The variable that hands workers the run's store of fresh-process references
/// (`lockstep::check::FreshRuns::with_store`): trials of one run share them.
pub const FRESH_RUNS_VAR: &str = "LOCKSTEP_FRESH_RUNS";

/// Starts one worker process per trial or golden.
pub struct Workers {
    pub exe: PathBuf,
    /// Arguments before `worker` (`-m lockstep` when the CLI runs inside Python).
    pub prefix: Vec<std::ffi::OsString>,
    pub envs: Vec<WorkerEnv>,
    pub options: SuiteOptions,
    /// The run's store of fresh-process references, removed when the run ends.
    pub fresh_runs: Option<PathBuf>,
}

/// Lines of a failed worker's stderr kept in the error.
const STDERR_TAIL_LINES: usize = 20;

impl Workers {
    /// Runs the worker with `args`; its last stdout line, or why there is none.
    fn run<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Result<String, String> {
        run_worker(&self.exe, &self.prefix, args, self.fresh_runs.as_deref())
    }

    /// The arguments after `worker` that run the trial of env `env` for `seed`.
    pub fn trial_args(&self, env: usize, seed: u64) -> Vec<String> {
        let e = &self.envs[env];
        let checks: Vec<&str> = self.options.checks.iter().map(|k| k.short()).collect();
        let mut args: Vec<String> = vec![
            "trial".into(),
            "--id".into(),
            e.id.clone(),
            "--seed".into(),
            seed.to_string(),
            "--steps".into(),
            self.options.steps.to_string(),
            "--checks".into(),
            checks.join(","),
        ];
        if let Some(r) = self.options.rollouts {
            args.extend(["--rollouts".into(), r.to_string()]);
        }
        if e.seedless {
            args.push("--seedless".into());
        }
        if self.options.timings {
            args.push("--timings".into());
        }
        args.extend(crate::envs::IgnoreArgs::flags(&self.options.ignore));
        args.extend(e.args.iter().cloned());
        args
    }

    /// The trial a worker's answer holds (`answer` as [`worker_answer`] gives it), or the
    /// trial's error: the answer must be a trial, and this one.
    pub fn trial_of(&self, env: usize, seed: u64, answer: Result<String, String>) -> Trial {
        let id = &self.envs[env].id;
        let failed = |error: String| Trial::errored(id, seed, error);
        match answer {
            Ok(line) => match serde_json::from_str::<Trial>(&line) {
                Ok(t) if t.env == *id && t.seed == seed => t,
                Ok(t) => failed(format!(
                    "the worker answered for env {:?} seed {}, not this trial",
                    t.env, t.seed
                )),
                Err(err) => failed(format!("the worker's result is not a trial: {err}")),
            },
            Err(err) => failed(err),
        }
    }
}

/// The arguments after `worker` that verify the golden file `file` (the file at index 1).
pub fn golden_args(file: &Path) -> Vec<std::ffi::OsString> {
    vec!["golden".into(), file.as_os_str().to_owned()]
}

/// The golden outcome a worker's answer holds, or the golden's error.
pub fn golden_of(file: &Path, answer: Result<String, String>) -> (GoldenOutcome, bool) {
    let failed = |summary: String| {
        (
            GoldenOutcome {
                file: file.display().to_string(),
                env: None,
                seed: None,
                passed: false,
                summary,
                divergence: None,
            },
            true,
        )
    };
    match answer {
        Ok(line) => match serde_json::from_str::<GoldenResult>(&line) {
            Ok(r) => (r.outcome, r.errored),
            Err(err) => failed(format!(
                "the worker's result is not a golden outcome: {err}"
            )),
        },
        Err(err) => failed(err),
    }
}

/// Runs `EXE PREFIX... worker ARGS...` in a fresh process with directories of its own that
/// dies with the calling thread; its last stdout line, or why there is none. `fresh_runs` is
/// the run's store of fresh-process references, if it has one.
pub fn run_worker<S: AsRef<std::ffi::OsStr>>(
    exe: &Path,
    prefix: &[std::ffi::OsString],
    args: &[S],
    fresh_runs: Option<&Path>,
) -> Result<String, String> {
    let mut cmd = Command::new(exe);
    cmd.args(prefix)
        .arg("worker")
        .args(args)
        .stdin(Stdio::null());
    // A home and temp directories of its own, removed when it ended; the working directory
    // stays the caller's (see lockstep::private_dirs).
    let dirs = PrivateDirs::new().map_err(|e| format!("private directories: {e}"))?;
    dirs.apply(&mut cmd, false);
    if let Some(store) = fresh_runs {
        cmd.env(FRESH_RUNS_VAR, store);
    }
    // This process's own starter's pid (a relay's) means nothing to its worker: the worker
    // dies with this thread through the signal set below.
    cmd.env_remove(crate::cmd::worker::DIE_WITH_PARENT_VAR);
    die_with_parent(&mut cmd);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start the worker {}: {e}", exe.display()))?;
    worker_answer(
        &out.status.to_string(),
        out.status.success(),
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    )
}

/// A finished worker's result line: the last line of its stdout when it exited 0, else why it
/// has none, with the end of its stderr. `status` says how it ended (`exit status: 3`,
/// `signal: 9 (SIGKILL)`), wherever it ran.
pub fn worker_answer(
    status: &str,
    success: bool,
    stdout: &str,
    stderr: &str,
) -> Result<String, String> {
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
    match (success, last) {
        (true, Some(line)) => Ok(line.to_string()),
        _ => {
            let lines: Vec<&str> = stderr.lines().collect();
            let tail = lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..].join("\n");
            Err(format!(
                "the worker process of this trial failed ({status}){}",
                if tail.trim().is_empty() {
                    String::new()
                } else {
                    format!(":\n{tail}")
                }
            ))
        }
    }
}

/// A worker dies when `lockstep check` does, even by SIGKILL (no destructor runs then), so
/// that it never goes on running an env, its servers or its browser with nobody to report to.
/// Linux's parent-death signal is tied to the thread that forked the worker: that thread waits
/// for the worker to end, so it always outlives it.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and only calls prctl(2),
    // which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

impl Isolated for Workers {
    fn trial(&self, env: usize, seed: u64) -> Trial {
        self.trial_of(env, seed, self.run(&self.trial_args(env, seed)))
    }

    fn golden(&self, file: &Path) -> (GoldenOutcome, bool) {
        golden_of(file, self.run(&golden_args(file)))
    }
}
