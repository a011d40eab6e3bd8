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
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.prefix)
            .arg("worker")
            .args(args)
            .stdin(Stdio::null());
        // A home and temp directories of its own, removed when it ended; the working
        // directory stays the caller's (see lockstep::private_dirs).
        let dirs = PrivateDirs::new().map_err(|e| format!("private directories: {e}"))?;
        dirs.apply(&mut cmd, false);
        if let Some(store) = &self.fresh_runs {
            cmd.env(FRESH_RUNS_VAR, store);
        }
        die_with_parent(&mut cmd);
        let out = cmd
            .output()
            .map_err(|e| format!("cannot start the worker {}: {e}", self.exe.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
        match (out.status.success(), last) {
            (true, Some(line)) => Ok(line.to_string()),
            _ => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let lines: Vec<&str> = stderr.lines().collect();
                let tail = lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..].join("\n");
                Err(format!(
                    "the worker process of this trial failed ({}){}",
                    out.status,
                    if tail.trim().is_empty() {
                        String::new()
                    } else {
                        format!(":\n{tail}")
                    }
                ))
            }
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
        let failed = |error: String| Trial::errored(&e.id, seed, error);
        match self.run(&args) {
            Ok(line) => match serde_json::from_str::<Trial>(&line) {
                Ok(t) if t.env == e.id && t.seed == seed => t,
                Ok(t) => failed(format!(
                    "the worker answered for env {:?} seed {}, not this trial",
                    t.env, t.seed
                )),
                Err(err) => failed(format!("the worker's result is not a trial: {err}")),
            },
            Err(err) => failed(err),
        }
    }

    fn golden(&self, file: &Path) -> (GoldenOutcome, bool) {
        let args = [std::ffi::OsStr::new("golden"), file.as_os_str()];
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
        match self.run(&args) {
            Ok(line) => match serde_json::from_str::<GoldenResult>(&line) {
                Ok(r) => (r.outcome, r.errored),
                Err(err) => failed(format!(
                    "the worker's result is not a golden outcome: {err}"
                )),
            },
            Err(err) => failed(err),
        }
    }
}
