//! Shared helpers of the protocol tests: the Python interpreter, adapter command lines, a
//! rollout loop and a first-difference finder over transitions.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use lockstep::actions::ActionSampler;
use lockstep::env::{Env, EnvError, Transition};
use lockstep_canon::Value;
use lockstep_protocol::{ProcessEnvFactory, ProcessOptions};

/// The interpreter: `LOCKSTEP_PYTHON` (scripts/test sets it to ./.venv/bin/python), else
/// `python3`.
pub fn python() -> String {
    std::env::var("LOCKSTEP_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// The folder holding the `lockstep_adapter` package.
pub fn python_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python")
}

/// Fails the test with a clear message unless `python` can import every module.
pub fn require(modules: &[&str]) {
    let code = format!("import {}", modules.join(", "));
    let out = Command::new(python())
        .args(["-c", &code])
        .output()
        .unwrap_or_else(|e| panic!("cannot run the Python interpreter {:?}: {e}", python()));
    assert!(
        out.status.success(),
        "the Python interpreter {:?} cannot import {modules:?}; run ./scripts/test (it installs \
         python/requirements-test.txt into ./.venv and sets LOCKSTEP_PYTHON), or set \
         LOCKSTEP_PYTHON to an interpreter that has them:\n{}",
        python(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `python -m MODULE ARGS...`.
pub fn module_argv(module: &str, args: &[&str]) -> Vec<String> {
    let mut argv = vec![python(), "-m".to_string(), module.to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    argv
}

/// `python -m lockstep_adapter ARGS...`.
pub fn adapter_argv(args: &[&str]) -> Vec<String> {
    module_argv("lockstep_adapter", args)
}

/// Default options plus `PYTHONPATH` pointing at python/.
pub fn options() -> ProcessOptions {
    ProcessOptions {
        env: vec![(
            "PYTHONPATH".to_string(),
            python_dir().to_string_lossy().into_owned(),
        )],
        ..ProcessOptions::default()
    }
}

pub fn options_with_timeout(timeout: Duration) -> ProcessOptions {
    ProcessOptions {
        request_timeout: timeout,
        ..options()
    }
}

pub fn factory(args: &[&str]) -> ProcessEnvFactory {
    ProcessEnvFactory::new(adapter_argv(args), options())
}

/// What one episode showed: the reset and every step, and the state after the reset.
#[derive(Debug, Clone)]
pub struct Episode {
    pub transitions: Vec<Transition>,
    pub state_after_reset: Value,
}

/// Resets with `seed`, then steps with seeded sampled actions until the episode ends or
/// `max_steps`. On an error, returns what was gathered before it with the error.
pub fn rollout(
    env: &mut dyn Env,
    seed: u64,
    max_steps: usize,
) -> Result<Episode, (Episode, EnvError)> {
    let mut sampler = ActionSampler::new(seed, env.spec());
    let mut episode = Episode {
        transitions: Vec::new(),
        state_after_reset: Value::Null,
    };
    match env.reset(seed, &Value::Null) {
        Ok(t) => episode.transitions.push(t.clone()),
        Err(e) => return Err((episode, e)),
    }
    match env.state() {
        Ok(s) => episode.state_after_reset = s,
        Err(e) => return Err((episode, e)),
    }
    for _ in 0..max_steps {
        let last = episode.transitions.last().expect("reset recorded");
        if last.is_done() {
            break;
        }
        let actions = sampler.sample(last);
        match env.step(&actions) {
            Ok(t) => episode.transitions.push(t.clone()),
            Err(e) => return Err((episode, e)),
        }
    }
    Ok(episode)
}

/// Where two episodes first differ: step (0 = reset), agent, key (`obs/KEY`, `reward`,
/// `terminated`, `truncated`, `info`, `agents`, `logs`, `length`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    pub step: usize,
    pub agent: String,
    pub key: String,
}

fn div(step: usize, agent: &str, key: &str) -> Option<Divergence> {
    Some(Divergence {
        step,
        agent: agent.to_string(),
        key: key.to_string(),
    })
}

/// Bit-exact comparison, first difference first.
pub fn first_difference(a: &[Transition], b: &[Transition]) -> Option<Divergence> {
    for (step, (x, y)) in a.iter().zip(b).enumerate() {
        let names_x: Vec<_> = x.agents.keys().collect();
        let names_y: Vec<_> = y.agents.keys().collect();
        if names_x != names_y {
            return div(step, "", "agents");
        }
        for (name, sx) in &x.agents {
            let sy = &y.agents[name];
            let keys_x: Vec<_> = sx.obs.keys().collect();
            if keys_x != sy.obs.keys().collect::<Vec<_>>() {
                return div(step, name, "obs");
            }
            for (key, ax) in &sx.obs {
                let ay = &sy.obs[key];
                if ax.dtype() != ay.dtype()
                    || ax.shape() != ay.shape()
                    || ax.to_le_bytes() != ay.to_le_bytes()
                {
                    return div(step, name, &format!("obs/{key}"));
                }
            }
            if sx.reward.to_bits() != sy.reward.to_bits() {
                return div(step, name, "reward");
            }
            if sx.terminated != sy.terminated {
                return div(step, name, "terminated");
            }
            if sx.truncated != sy.truncated {
                return div(step, name, "truncated");
            }
            if sx.info != sy.info {
                return div(step, name, "info");
            }
        }
        if x.logs != y.logs {
            return div(step, "", "logs");
        }
    }
    if a.len() != b.len() {
        return div(a.len().min(b.len()), "", "length");
    }
    None
}

/// An outcome of an honest env: passed, or the vector check of an env that is not a vector
/// env (not applicable, and saying so).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn honest(o: &lockstep::check::CheckOutcome) -> bool {
    o.passed
        || (o.check == lockstep::check::CheckKind::Vector
            && !o.applicable
            && o.summary.contains("not a vector env"))
}
