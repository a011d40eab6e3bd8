//! The other-process runner of the replay checks for built-in envs: re-runs this very
//! executable as `lockstep trace --env NAME --json` and reads the trace it prints.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use anyhow::Context as _;
use lockstep::check::ProcessRunner;
use lockstep::private_dirs::PrivateDirs;
use lockstep::trace::{Recorded, Trace, TransitionRecord};

/// What `lockstep trace --json` prints: the trace, plus the captured transition when asked.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct TraceOutput {
    #[serde(flatten)]
    pub trace: Trace,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captured: Option<TransitionRecord>,
    /// The child's wall time of the reset and of each step, in microseconds (the timing hint).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_times_us: Vec<u64>,
}

/// The command that runs this CLI again, when it is not this executable: inside the Python
/// package the executable is the interpreter, and the CLI is `python -m lockstep`.
static SELF_COMMAND: OnceLock<Vec<OsString>> = OnceLock::new();

/// Sets the command line that re-runs this CLI (program first) for the other-process check.
/// The first call wins; without one the CLI re-runs its own executable.
pub fn set_self_command(argv: Vec<OsString>) {
    if !argv.is_empty() {
        let _ = SELF_COMMAND.set(argv);
    }
}

/// Runs `lockstep trace ... --json` in a child process: a fresh process, so nothing of this
/// one (hash seeds, global state, the clock at start) can leak into the child's trace.
pub struct ChildRunner {
    pub exe: PathBuf,
    /// Arguments before `trace` (`-m lockstep` when the CLI runs inside Python).
    pub prefix: Vec<OsString>,
    /// The private directories of each reference run (env, seed, steps) that ended: the
    /// leftover check's first process, when it asks for that seed.
    reference_dirs: Mutex<BTreeMap<(String, u64, u64), PrivateDirs>>,
    /// The fields the checks leave out, left out by the child's trace too (`--ignore`).
    pub ignore: lockstep::ignore::Ignore,
}

impl ChildRunner {
    /// A runner of this very CLI: the self command when one was set, else this executable.
    pub fn current() -> anyhow::Result<ChildRunner> {
        if let Some((exe, prefix)) = SELF_COMMAND.get().and_then(|argv| argv.split_first()) {
            return Ok(ChildRunner {
                exe: PathBuf::from(exe),
                prefix: prefix.to_vec(),
                reference_dirs: Mutex::default(),
                ignore: Default::default(),
            });
        }
        Ok(ChildRunner {
            exe: std::env::current_exe().context("locating the lockstep executable")?,
            prefix: Vec::new(),
            reference_dirs: Mutex::default(),
            ignore: Default::default(),
        })
    }
}

impl ChildRunner {
    /// `lockstep trace --env ENV --json` in `dirs` (see [`lockstep::private_dirs`]).
    fn run_in(
        &self,
        dirs: &PrivateDirs,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.prefix);
        cmd.args(["trace", "--env", env, "--json"]).args([
            "--seed",
            &seed.to_string(),
            "--steps",
            &steps.to_string(),
        ]);
        if let Some(k) = capture {
            cmd.args(["--capture", &k.to_string()]);
        }
        cmd.args(crate::envs::IgnoreArgs::flags(&self.ignore));
        // The CLI re-run keeps the caller's working directory, where the user's paths mean
        // what they typed; an env's child it starts gets its own.
        dirs.apply(&mut cmd, false);
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
        let parsed: TraceOutput = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("the child's trace is not valid JSON: {e}"))?;
        let captured = parsed
            .captured
            .map(|c| c.to_transition())
            .transpose()
            .map_err(|e| e.to_string())?;
        Ok(Recorded {
            trace: parsed.trace,
            captured,
            // The child's kept prefix is not sent: a divergence is explained from re-runs.
            kept: Default::default(),
            step_times: lockstep::trace::from_micros(&parsed.step_times_us),
            checked: Default::default(),
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn private_dirs() -> Result<PrivateDirs, String> {
    PrivateDirs::new().map_err(|e| format!("private directories: {e}"))
}

impl ProcessRunner for ChildRunner {
    fn run(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String> {
        self.run_in(&private_dirs()?, env, seed, steps, capture)
    }

    fn run_reference(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Option<Recorded>, String> {
        let dirs = private_dirs()?;
        let recorded = self.run_in(&dirs, env, seed, steps, capture)?;
        if capture.is_none() {
            lock(&self.reference_dirs).insert((env.to_string(), seed, steps), dirs);
        }
        Ok(Some(recorded))
    }

    fn run_after(
        &self,
        env: &str,
        earlier: u64,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Option<Recorded>, String> {
        // The directories a reference run of `earlier` used and left, taken once; else a first
        // process plays `earlier` now.
        let used = lock(&self.reference_dirs).remove(&(env.to_string(), earlier, steps));
        let dirs = match used {
            Some(dirs) => dirs,
            None => {
                let dirs = private_dirs()?;
                self.run_in(&dirs, env, earlier, steps, None)?;
                dirs
            }
        };
        self.run_in(&dirs, env, seed, steps, capture).map(Some)
    }
}
