//! The vector check: does each sub-env of a vector env replay like a single env of its seed?
//!
//! Training runs `gymnasium.make_vec(ENV_ID, num_envs=N)` (or a `SyncVectorEnv` /
//! `AsyncVectorEnv`, or an env's own vectorised implementation): `reset(seed=S)` seeds sub-env
//! `i` with `S + i`, and a sub-env whose episode ended is reset at its next step without a
//! seed. A vector env served with its sub-envs as agents (`env_0`, `env_1`, ...) is played
//! against its twin ([`crate::env::EnvFactory::vector_twin`]: the same sub-envs as single envs
//! driven that way by hand) with the same actions; the first difference names the sub-env, its
//! seed, the episode (auto-resets before it, counted from the flags) and the step.

use super::{first_divergence, CheckError, CheckOutcome, Ctx};
use crate::trace::{Recorded, Trace};

/// The handshake `config` key a vector env declares its sub-env count with.
const NUM_ENVS: &str = "num_envs";

impl Ctx<'_> {
    fn vector_runs(
        &self,
        twin: &dyn crate::env::EnvFactory,
        capture: Option<u64>,
    ) -> Result<(Recorded, Recorded), CheckError> {
        let (seed, steps) = (self.cfg.seed, self.cfg.steps);
        let opts = self.cfg.opts(capture);
        let mut single = twin.make().map_err(|source| CheckError::Make {
            check: self.kind,
            source,
        })?;
        let reference = crate::trace::rollout(single.as_mut(), seed, steps, &opts)
            .map_err(self.rollout_err("the single envs".into()))?;
        drop(single);
        let mut env = self.make()?;
        let vector = crate::trace::rollout(env.as_mut(), seed, steps, &opts)
            .map_err(self.rollout_err("the vector env".into()))?;
        Ok((reference, vector))
    }

    pub(super) fn vector(&self) -> Result<CheckOutcome, CheckError> {
        let env = self.make()?;
        let config = &env.spec().config;
        let num_envs = config
            .get(NUM_ENVS)
            .and_then(|v| v.as_i64())
            .and_then(|n| u64::try_from(n).ok());
        let is_twin = config.get("twin").is_some();
        drop(env);
        let not_applicable = |why: &str| {
            Ok(CheckOutcome::not_applicable(
                self.kind,
                format!("not applicable: {why}"),
            ))
        };
        let Some(n) = num_envs.filter(|_| !is_twin) else {
            return not_applicable(
                "not a vector env (python -m lockstep_adapter gymnasium-vector, or a factory returning a Gymnasium vector env)",
            );
        };
        let Some(twin) = self.factory.vector_twin() else {
            return not_applicable("this vector env has no twin of single envs");
        };
        let (single, vector) = self.vector_runs(twin.as_ref(), None)?;
        let seed = self.cfg.seed;
        let last = seed.wrapping_add(n.saturating_sub(1));
        let (l, r) = ("the single envs".to_string(), "the vector env".to_string());
        match first_divergence(&single.trace.step_digests, &vector.trace.step_digests) {
            None => {
                let resets = auto_resets(&single.trace);
                Ok(self.outcome(
                    &single,
                    l,
                    r,
                    None,
                    true,
                    format!(
                        "{n} sub-envs each replay a single env seeded {seed}..={last} through {resets} auto-resets ({} transitions)",
                        single.trace.step_digests.len()
                    ),
                ))
            }
            Some(d) => {
                let d = self.localised((&single, &vector), d, |k| {
                    self.vector_runs(twin.as_ref(), Some(k))
                })?;
                let sub = d.agent().map(str::to_string);
                let what = match sub.as_deref().and_then(sub_env_index) {
                    Some(i) => format!(
                        "sub-env {i} (seed {}), episode {}",
                        seed.wrapping_add(i),
                        episode_at(&single.trace, &format!("env_{i}"), d.step)
                    ),
                    None => "the vector env".to_string(),
                };
                let summary = format!("{what}, step {}: {}", d.step, self.fail_summary(&d, &l, &r));
                Ok(self.failed((&single, &vector), l, r, d, summary))
            }
        }
    }
}

/// `env_3` -> 3.
fn sub_env_index(agent: &str) -> Option<u64> {
    agent.strip_prefix("env_")?.parse().ok()
}

/// The episode (1, 2, ...) `agent` is in at `step`: one more than the episodes it ended before.
fn episode_at(trace: &Trace, agent: &str, step: u64) -> u64 {
    1 + trace
        .step_digests
        .iter()
        .take(step as usize)
        .filter(|s| {
            s.agents
                .get(agent)
                .is_some_and(|a| a.terminated || a.truncated)
        })
        .count() as u64
}

/// Episodes that ended (and were reset by the next step) across all sub-envs.
fn auto_resets(trace: &Trace) -> u64 {
    trace
        .step_digests
        .iter()
        .flat_map(|s| s.agents.values())
        .filter(|a| a.terminated || a.truncated)
        .count() as u64
}
