//! The forked-workers check: seed S replayed in a worker forked from a process that has
//! already played other episodes, compared with S in a fresh process.
//!
//! Worker pools often fork from a warm parent (a vector env's subprocess workers, a server's
//! pre-forked workers): the worker inherits everything process-wide the parent did, a module
//! RNG advanced by earlier episodes, a warm cache, a counter. The specification's caveat on
//! OS-level forking is exactly this. The env cannot be forked from here (lockstep knows no
//! transport), so the env's factory offers a [`Forker`] ([`crate::env::EnvFactory::forker`]);
//! without one the check does not apply and says so, never passing.

use super::{first_divergence, CheckError, CheckOutcome, Ctx};
use crate::trace::{Recorded, RolloutOptions};

/// Seeds played in the parent before it forks: the check's seed plus these offsets.
pub const WARM_UP_OFFSETS: [u64; 3] = [1, 2, 3];

/// Runs a seed fresh and in a forked worker of a warm process (implemented by an external
/// env's transport: the Python adapter forks on Unix).
pub trait Forker: Sync {
    /// In one fresh process: `seed` on a fresh instance (the reference), then the `warm_up`
    /// seeds played on that instance, then a fork of that process, in which a new instance
    /// plays `seed`. Returns (reference, forked), or `Ok(None)` when the env cannot fork.
    fn fork_runs(
        &self,
        seed: u64,
        warm_up: &[u64],
        steps: u64,
        opts: &RolloutOptions,
    ) -> Result<Option<(Recorded, Recorded)>, String>;
}

impl Ctx<'_> {
    pub(super) fn forked(&self) -> Result<CheckOutcome, CheckError> {
        let Some(forker) = self.factory.forker() else {
            return Ok(CheckOutcome::not_applicable(
                self.kind,
                "the env offers no forked workers (only an external env whose child can fork does)"
                    .into(),
            ));
        };
        let (seed, steps) = (self.cfg.seed, self.cfg.steps);
        let warm: Vec<u64> = WARM_UP_OFFSETS
            .iter()
            .map(|&o| seed.wrapping_add(o))
            .collect();
        let runs = |capture: Option<u64>| {
            forker
                .fork_runs(seed, &warm, steps, &self.cfg.opts(capture))
                .map_err(|e| CheckError::Runner(format!("forked workers: {e}")))
        };
        let Some((fresh, forked)) = runs(None)? else {
            return Ok(CheckOutcome::not_applicable(
                self.kind,
                "the env's child cannot fork (it says so in its handshake)".into(),
            ));
        };
        let warm_text = format!("{}..={}", warm[0], warm[warm.len() - 1]);
        let (l, r) = (
            "a fresh process".to_string(),
            format!("a worker forked after seeds {warm_text}"),
        );
        match first_divergence(&fresh.trace.step_digests, &forked.trace.step_digests) {
            None => {
                let summary = format!(
                    "seed {seed} gives the same episode in a worker forked after seeds {warm_text} (episode {}, {} transitions)",
                    fresh.trace.episode.short(),
                    fresh.trace.step_digests.len()
                );
                Ok(self.outcome(&fresh, l, r, None, true, summary))
            }
            Some(d) => {
                let d = self.localised((&fresh, &forked), d, |k| {
                    runs(Some(k))?.ok_or_else(|| {
                        CheckError::Runner("forked workers: the env stopped forking".into())
                    })
                })?;
                let summary = self.fail_summary(&d, &l, &r);
                Ok(self.failed((&fresh, &forked), l, r, d, summary))
            }
        }
    }
}
