//! The other-process runner of the replay checks for built-in envs: re-runs this very
//! executable as `lockstep trace --env NAME --json` and reads the trace it prints.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::Context as _;
use lockstep::check::ProcessRunner;
use lockstep::trace::{Recorded, Trace, TransitionRecord};

/// What `lockstep trace --json` prints: the trace, plus the captured transition when asked.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct TraceOutput {
    #[serde(flatten)]
    pub trace: Trace,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captured: Option<TransitionRecord>,
}

/// Runs `lockstep trace ... --json` in a child process: a fresh process, so nothing of this
/// one (hash seeds, global state, the clock at start) can leak into the child's trace.
pub struct ChildRunner {
    pub exe: PathBuf,
}

impl ChildRunner {
    /// A runner of this very executable.
    pub fn current() -> anyhow::Result<ChildRunner> {
        Ok(ChildRunner {
            exe: std::env::current_exe().context("locating the lockstep executable")?,
        })
    }
}

impl ProcessRunner for ChildRunner {
    fn run(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(["trace", "--env", env, "--json"]).args([
            "--seed",
            &seed.to_string(),
            "--steps",
            &steps.to_string(),
        ]);
        if let Some(k) = capture {
            cmd.args(["--capture", &k.to_string()]);
        }
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
        })
    }
}
