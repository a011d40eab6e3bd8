//! The continuation check: `reset(seed=S)` once, then episodes each started with an unseeded
//! `reset()`, as training loops drive an env.
//!
//! Gymnasium's vector envs, Stable-Baselines3 and RLlib's env runner seed only the first reset;
//! every later episode starts with `reset()` and continues from the env's own RNG. An env whose
//! unseeded reset draws from a process-global RNG (`np.random.randint`) or seeds itself from the
//! clock replays its first episode and never the second, and every check that reseeds each
//! rollout passes it. Here two fresh instances in one process play the same sequence (seeded
//! episode, then [`CONTINUATION_EPISODES`] unseeded ones, each with the same actions on both) and
//! every episode is compared: the failure names the episode and its first divergence.
//!
//! An env with no unseeded reset ([`crate::env::Env::reset_unseeded`] answers `None`: the
//! built-in envs derive every episode from its seed) gets a not-applicable outcome, never a pass.

use super::{first_divergence, CheckError, CheckOutcome, Ctx};
use crate::trace::{Recorded, RolloutOptions, TraceError};

/// Unseeded episodes after the seeded one. Three catch a leak at the first continuation (the
/// common case: a global RNG, the clock) and one that builds up over a few episodes, for the
/// cost of 2 x 4 rollouts.
pub const CONTINUATION_EPISODES: usize = 3;

/// Why the check does not apply to an env without an unseeded reset.
const NO_UNSEEDED_RESET: &str =
    "not applicable: the env has no unseeded reset (a built-in env derives every episode from its seed)";

/// The episodes of one instance, or the sign that the env has no unseeded reset.
enum Played {
    Episodes(Vec<Recorded>),
    NoUnseededReset,
}

impl Ctx<'_> {
    /// The action sampler's seed of episode `e` (0 is the seeded one): the same on both
    /// instances, another for each episode, so an episode is not a copy of the previous one.
    fn continuation_actions(&self, e: usize) -> u64 {
        self.cfg.seed.wrapping_add(e as u64)
    }

    /// One fresh instance: `reset(seed)` and an episode, then the unseeded episodes, with the
    /// transition at step `capture` of episode `capture_episode` kept when asked.
    fn continued_run(
        &self,
        instance: usize,
        capture: Option<(usize, u64)>,
    ) -> Result<Played, CheckError> {
        let mut env = self.make()?;
        let mut episodes = Vec::with_capacity(CONTINUATION_EPISODES + 1);
        for e in 0..=CONTINUATION_EPISODES {
            let at = capture.and_then(|(ce, k)| (ce == e).then_some(k));
            let opts = RolloutOptions {
                action_seed: Some(self.continuation_actions(e)),
                unseeded: e > 0,
                ..self.cfg.opts(at)
            };
            match crate::trace::rollout(env.as_mut(), self.cfg.seed, self.cfg.steps, &opts) {
                Ok(r) => episodes.push(r),
                Err(TraceError::NoUnseededReset) => return Ok(Played::NoUnseededReset),
                Err(source) => {
                    return Err(CheckError::Rollout {
                        check: self.kind,
                        run: format!("instance {}, {}", instance + 1, episode_label(e)),
                        source,
                    })
                }
            }
        }
        Ok(Played::Episodes(episodes))
    }

    pub(super) fn continuation(&self) -> Result<CheckOutcome, CheckError> {
        let Played::Episodes(first) = self.continued_run(0, None)? else {
            return Ok(CheckOutcome::not_applicable(
                self.kind,
                NO_UNSEEDED_RESET.into(),
            ));
        };
        let Played::Episodes(second) = self.continued_run(1, None)? else {
            return Err(CheckError::Runner(
                "continuation: a second instance of the env has no unseeded reset".into(),
            ));
        };
        let seed = self.cfg.seed;
        let found = (0..first.len()).find_map(|e| {
            first_divergence(&first[e].trace.step_digests, &second[e].trace.step_digests)
                .map(|d| (e, d))
        });
        Ok(match found {
            None => self.outcome(
                &first[CONTINUATION_EPISODES],
                "instance 1".into(),
                "instance 2".into(),
                None,
                true,
                format!(
                    "reset(seed={seed}) then {CONTINUATION_EPISODES} episodes after an unseeded reset() give the same {} episodes on two fresh instances",
                    CONTINUATION_EPISODES + 1
                ),
            ),
            Some((e, d)) => {
                let rerun = |k: u64| -> Result<(Recorded, Recorded), CheckError> {
                    let pick = |played: Played| match played {
                        Played::Episodes(mut runs) => Ok(runs.swap_remove(e)),
                        Played::NoUnseededReset => Err(CheckError::Runner(
                            "continuation: the env stopped offering an unseeded reset".into(),
                        )),
                    };
                    let left = pick(self.continued_run(0, Some((e, k)))?)?;
                    let right = pick(self.continued_run(1, Some((e, k)))?)?;
                    Ok((left, right))
                };
                let d = self.localised((&first[e], &second[e]), d, rerun)?;
                let (l, r) = ("instance 1".to_string(), "instance 2".to_string());
                let mut summary = format!("{}: {}", episode_label(e), self.fail_summary(&d, &l, &r));
                if e > 0 {
                    summary.push_str(&format!(
                        " (the seed {seed} went to the first reset only, as training loops do)"
                    ));
                }
                self.failed((&first[e], &second[e]), l, r, d, summary)
            }
        })
    }
}

/// `episode 1 (reset(seed))`, `episode 2 (reset() without a seed)`, ...
fn episode_label(e: usize) -> String {
    if e == 0 {
        "episode 1 (reset with the seed)".to_string()
    } else {
        format!("episode {} (reset() without a seed)", e + 1)
    }
}
