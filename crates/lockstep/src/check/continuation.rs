//! The continuation check: `reset(seed=S)` once, then episodes each started with an unseeded
//! `reset()`, as training loops drive an env.
//!
//! Gymnasium's vector envs, Stable-Baselines3 and RLlib's env runner seed only the first reset;
//! every later episode starts with `reset()` and continues from the env's own RNG. An env whose
//! unseeded reset draws from a process-global RNG (`np.random.randint`) or seeds itself from the
//! clock replays its first episode and never the second, and every check that reseeds each
//! rollout passes it. Here two fresh instances in one process play the same sequence (seeded
//! episode, then [`CONTINUATION_EPISODES`] unseeded ones, each with the same actions on both) and
//! every episode is compared; so is the same plan in a fresh process when the runner can play
//! it (an unseeded reset seeded from the pid or the string hash agrees between two instances of
//! one process, not across processes). The failure names the episode and its first divergence.
//!
//! An env with no unseeded reset ([`crate::env::Env::reset_unseeded`] answers `None`: the
//! built-in envs derive every episode from its seed) gets a not-applicable outcome, never a pass.

use super::{first_divergence, CheckConfig, CheckError, CheckOutcome, Ctx, ProcessRunner};
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

impl CheckConfig {
    /// The options of episode `e` (0 is the seeded one), with the transition at step `capture`
    /// kept when asked. The action sampler's seed is S+e: the same on every side compared,
    /// another for each episode, so an episode is not a copy of the previous one. Episode 0
    /// is the rollout every other check plays of the seed.
    fn continuation_opts(&self, e: usize, capture: Option<u64>) -> RolloutOptions {
        RolloutOptions {
            action_seed: Some(self.seed.wrapping_add(e as u64)),
            unseeded: e > 0,
            ..self.opts(capture)
        }
    }

    /// Every episode's options, with `capture` kept in episode `capture.0`.
    pub(super) fn continuation_plan(&self, capture: Option<(usize, u64)>) -> Vec<RolloutOptions> {
        (0..=CONTINUATION_EPISODES)
            .map(|e| self.continuation_opts(e, capture.and_then(|(ce, k)| (ce == e).then_some(k))))
            .collect()
    }
}

impl Ctx<'_> {
    /// One fresh instance in this process plays the plan.
    fn continued_here(
        &self,
        instance: usize,
        capture: Option<(usize, u64)>,
    ) -> Result<Played, CheckError> {
        let mut env = self.make()?;
        let mut episodes = Vec::with_capacity(CONTINUATION_EPISODES + 1);
        for (e, opts) in self.cfg.continuation_plan(capture).iter().enumerate() {
            match crate::trace::rollout(env.as_mut(), self.cfg.seed, self.cfg.steps, opts) {
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

    /// The plan in a fresh process, when the runner can play it.
    fn continued_fresh(
        &self,
        runner: &dyn ProcessRunner,
        capture: Option<(usize, u64)>,
    ) -> Result<Option<Vec<Recorded>>, CheckError> {
        runner
            .run_continued(
                &self.factory.id(),
                self.cfg.seed,
                self.cfg.steps,
                &self.cfg.continuation_plan(capture),
            )
            .map_err(|e| CheckError::Runner(format!("continuation in a fresh process: {e}")))
    }

    /// Side `side` of the comparison (1: a second instance here, 2: a fresh process), played
    /// again with `capture`, episode `e` of it.
    fn continued_side(
        &self,
        side: usize,
        runner: Option<&dyn ProcessRunner>,
        capture: (usize, u64),
    ) -> Result<Recorded, CheckError> {
        let gone = || {
            CheckError::Runner("continuation: the env stopped offering an unseeded reset".into())
        };
        let mut runs = match (side, runner) {
            (2, Some(runner)) => self
                .continued_fresh(runner, Some(capture))?
                .ok_or_else(gone)?,
            _ => match self.continued_here(side, Some(capture))? {
                Played::Episodes(runs) => runs,
                Played::NoUnseededReset => return Err(gone()),
            },
        };
        Ok(runs.swap_remove(capture.0))
    }

    pub(super) fn continuation(
        &self,
        runner: Option<&dyn ProcessRunner>,
    ) -> Result<CheckOutcome, CheckError> {
        let Played::Episodes(first) = self.continued_here(0, None)? else {
            return Ok(CheckOutcome::not_applicable(
                self.kind,
                NO_UNSEEDED_RESET.into(),
            ));
        };
        let Played::Episodes(second) = self.continued_here(1, None)? else {
            return Err(CheckError::Runner(
                "continuation: a second instance of the env has no unseeded reset".into(),
            ));
        };
        let fresh = match runner {
            Some(runner) => self.continued_fresh(runner, None)?,
            None => None,
        };
        let labels = ["instance 1", "instance 2", "a fresh process"];
        let mut sides: Vec<&[Recorded]> = vec![&first, &second];
        if let Some(fresh) = &fresh {
            sides.push(fresh);
        }
        let seed = self.cfg.seed;
        // The earliest episode that differs, the second instance before the fresh process.
        let found = (0..first.len()).find_map(|e| {
            (1..sides.len()).find_map(|side| {
                first_divergence(
                    &first[e].trace.step_digests,
                    &sides[side][e].trace.step_digests,
                )
                .map(|d| (e, side, d))
            })
        });
        let played = CONTINUATION_EPISODES + 1;
        Ok(match found {
            None => self.outcome(
                &first[CONTINUATION_EPISODES],
                labels[0].into(),
                labels[sides.len() - 1].into(),
                None,
                true,
                format!(
                    "reset(seed={seed}) then {CONTINUATION_EPISODES} episodes after an unseeded reset() give the same {played} episodes on two instances{}",
                    if fresh.is_some() { " and in a fresh process" } else { "" }
                ),
            ),
            Some((e, side, d)) => {
                let d = self.localised((&first[e], &sides[side][e]), d, |k| {
                    let left = self.continued_side(0, runner, (e, k))?;
                    let right = self.continued_side(side, runner, (e, k))?;
                    Ok((left, right))
                })?;
                let (l, r) = (labels[0].to_string(), labels[side].to_string());
                let mut summary =
                    format!("{}: {}", episode_label(e), self.fail_summary(&d, &l, &r));
                if e > 0 {
                    summary.push_str(&format!(
                        " (the seed {seed} went to the first reset only, as training loops do)"
                    ));
                }
                self.failed((&first[e], &sides[side][e]), l, r, d, summary)
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
