//! Comparing rollouts with a reference by check digests ([`crate::trace::Against`]).
//!
//! The same-seed and other-seed checks play many rollouts against one reference. The
//! reference is recorded in format v1 and by check digests (its v1 episode digest is the
//! report's `episode`, as `lockstep trace` and a golden give it); every other rollout is
//! recorded against it, in [`crate::trace::CHECK_FORMAT`] while the two agree and in v1 from
//! the first step where they do not. A rollout that differs thus has the v1 trace a v1
//! recording of it gives, and a failure's report (its step, agent, key, element, timeline) is
//! byte for byte what a check recording every rollout in v1 reports, without a re-run.

use super::EpisodeStat;
use crate::trace::{Recorded, FORMAT};

/// The first step at which two rollouts' check digests differ, or the first step only one of
/// them has; `None` when they are equal. The step [`super::first_divergence`] of their v1
/// traces gives.
pub(super) fn first_step(a: &Recorded, b: &Recorded) -> Option<u64> {
    let (x, y) = (&a.checked.digests, &b.checked.digests);
    x.iter()
        .zip(y)
        .position(|(p, q)| p != q)
        .or_else(|| (x.len() != y.len()).then(|| x.len().min(y.len())))
        .map(|k| k as u64)
}

impl EpisodeStat {
    /// [`EpisodeStat::of`] a recorded rollout, one with a v1 trace or one equal to its
    /// reference (a trace of check digests only, and the returns beside it).
    pub fn of_recorded(r: &Recorded) -> EpisodeStat {
        if r.trace.format == FORMAT {
            return EpisodeStat::of(&r.trace);
        }
        EpisodeStat {
            steps: r.trace.step_digests.len().saturating_sub(1) as u64,
            finished: r.trace.end == crate::trace::End::Done,
            returns: r.checked.returns.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::env::EnvFactory;
    use crate::fixtures;
    use crate::trace::{rollout, Against, RolloutOptions, Trace, CHECK_FORMAT};

    fn recorded(seed: u64, steps: u64, action_seed: u64, opts: &RolloutOptions) -> Recorded {
        let f = fixtures::factory("fixture").unwrap();
        let mut env = f.make().unwrap();
        let opts = RolloutOptions {
            action_seed: Some(action_seed),
            ..opts.clone()
        };
        rollout(env.as_mut(), seed, steps, &opts).unwrap()
    }

    fn reference(steps: u64, action_seed: u64) -> Arc<Against> {
        let opts = RolloutOptions {
            check_digests: true,
            ..RolloutOptions::default()
        };
        Arc::new(Against::of(&recorded(3, steps, action_seed, &opts)).unwrap())
    }

    fn v1(seed: u64, steps: u64, action_seed: u64) -> Trace {
        recorded(seed, steps, action_seed, &RolloutOptions::default()).trace
    }

    /// A rollout recorded against a reference keeps check digests only while it equals it,
    /// and from its first difference on gives the v1 trace a v1 recording gives: when it
    /// differs from the reset (another seed), from a later step (other actions), by being
    /// longer or shorter.
    #[test]
    fn a_rollout_against_a_reference_has_the_v1_trace_wherever_it_differs() {
        let against = |a: Arc<Against>| RolloutOptions {
            against: Some(a),
            ..RolloutOptions::default()
        };
        let same = recorded(3, 20, 1, &against(reference(20, 1)));
        assert_eq!(same.trace.format, CHECK_FORMAT.as_str());
        assert_eq!(same.checked.digests, reference(20, 1).checks);
        assert_eq!(
            EpisodeStat::of_recorded(&same),
            EpisodeStat::of(&v1(3, 20, 1))
        );
        for (seed, steps, action_seed) in [(4, 20, 1), (3, 20, 2), (3, 30, 1), (3, 12, 1)] {
            let r = recorded(seed, steps, action_seed, &against(reference(20, 1)));
            let full = v1(seed, steps, action_seed);
            assert_eq!(
                r.trace, full,
                "seed {seed}, {steps} steps, actions {action_seed}"
            );
            assert_eq!(EpisodeStat::of_recorded(&r), EpisodeStat::of(&full));
            let k = first_step(
                &recorded(3, 20, 1, &against(reference(20, 1))),
                &recorded(seed, steps, action_seed, &against(reference(20, 1))),
            );
            let d = super::super::first_divergence(&v1(3, 20, 1).step_digests, &full.step_digests);
            assert_eq!(k, d.map(|d| d.step));
        }
    }

    /// A rollout recorded against a reference keeps the first transitions it keeps recorded
    /// on its own (sharing the reference's while it equals it), whether it equals the
    /// reference, differs from the reset, from a later step, or is longer or shorter; with a
    /// budget of steps, of bytes, the checks' own, or none.
    #[test]
    fn a_rollout_against_a_reference_keeps_what_it_keeps_alone() {
        use crate::trace::KeepFirst;
        for keep in [
            KeepFirst {
                steps: 4,
                bytes: usize::MAX,
            },
            KeepFirst {
                steps: 100,
                bytes: 300,
            },
            KeepFirst::CHECKS,
            KeepFirst::NONE,
        ] {
            let reference = Arc::new(
                Against::of(&recorded(
                    3,
                    20,
                    1,
                    &RolloutOptions {
                        check_digests: true,
                        keep_first: keep,
                        ..RolloutOptions::default()
                    },
                ))
                .unwrap(),
            );
            for (seed, steps, action_seed) in [
                (3, 20, 1),
                (4, 20, 1),
                (3, 20, 2),
                (3, 30, 1),
                (3, 12, 1),
                (3, 2, 1),
            ] {
                let against = RolloutOptions {
                    against: Some(reference.clone()),
                    keep_first: keep,
                    ..RolloutOptions::default()
                };
                let alone = RolloutOptions {
                    keep_first: keep,
                    ..RolloutOptions::default()
                };
                let got = recorded(seed, steps, action_seed, &against).kept;
                let want = recorded(seed, steps, action_seed, &alone).kept;
                assert_eq!(
                    got, want,
                    "{keep:?}: seed {seed}, {steps} steps, actions {action_seed}"
                );
            }
        }
    }
}
