//! Timing named as timing. A browser env's action times out at 500 ms under load, a caret
//! blinks into a screenshot, a page is still loading: the runs differ, but not because one run
//! left state for another, and a failure of the interleaved or parallel check must not read
//! as shared state when it is not. Two signs, each cheap because the runs are already there:
//!
//! - **the divergence moves**: the same-seed rollouts of one seed on one instance, each
//!   compared with the first, first differ at different steps (or some not at all). A fault of
//!   state repeats at the same step in every rollout (a counter, a cache, a clock read, a
//!   global draw all show at their first use); a race lands wherever the machine was slow;
//! - **the divergent step was slow**: on one side it took at least [`SLOW_FACTOR`] times its
//!   run's median step, at least [`SLOW_MIN`], and at least twice the same step on the other
//!   side: a timeout fired or a wait ran out there, and only there.
//!
//! The step times are wall times measured around `reset` and `step` only; they are never part
//! of a trace or a digest, and a report carries them only when asked (`--timings`), so that
//! two runs of one check keep writing the same bytes.

use std::time::Duration;

use crate::trace::Recorded;

/// How many times its run's median step the divergent step must take to count as slow.
pub const SLOW_FACTOR: u32 = 10;

/// The least wall time of a slow step: below it, a scheduler hiccup, not a timeout.
pub const SLOW_MIN: Duration = Duration::from_millis(50);

/// Why a failure looks like timing, with its figures.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimingHint {
    /// One sentence for people, with the figures.
    pub summary: String,
    /// The first divergent step of each same-seed rollout after the first against the first
    /// (`None`: identical), when they are not all the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub divergent_steps: Vec<Option<u64>>,
    /// The divergent step, when it was slow on one side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_step: Option<SlowStep>,
}

/// A divergent step that took far longer on one side than the env's usual step.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SlowStep {
    pub step: u64,
    /// The run where it was slow.
    pub run: String,
    /// Its wall time there, the median step of that run, and the same step in the other run,
    /// in milliseconds (to 0.1 ms).
    pub ms: f64,
    pub median_ms: f64,
    pub other_ms: f64,
}

/// The slow divergent step of `left` and `right` (labelled `labels`), if one side was slow at
/// `step` (see the module doc). The reset (step 0) is not compared with steps.
pub fn slow_step(
    (left, right): (&Recorded, &Recorded),
    labels: (&str, &str),
    step: u64,
) -> Option<SlowStep> {
    if step == 0 {
        return None;
    }
    let at = |r: &Recorded| r.step_times.get(usize::try_from(step).ok()?).copied();
    let (l, r) = (at(left)?, at(right)?);
    let (slow, run, other) = if l >= r { (l, left, r) } else { (r, right, l) };
    let label = if std::ptr::eq(run, left) {
        labels.0
    } else {
        labels.1
    };
    let median = median_step(&run.step_times)?;
    let is_slow = slow >= SLOW_MIN && slow >= median * SLOW_FACTOR && slow >= other * 2;
    is_slow.then(|| SlowStep {
        step,
        run: label.to_string(),
        ms: ms(slow),
        median_ms: ms(median),
        other_ms: ms(other),
    })
}

/// The median of the steps' times, the reset left out; `None` without a step.
fn median_step(times: &[Duration]) -> Option<Duration> {
    let mut steps: Vec<Duration> = times.iter().skip(1).copied().collect();
    if steps.is_empty() {
        return None;
    }
    steps.sort_unstable();
    // The lower median: in a short episode the one slow step must not be the middle.
    Some(steps[(steps.len() - 1) / 2])
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

/// The hint for a failure whose divergent step may have been slow, and whose same-seed
/// rollouts first differed at `divergent_steps` (empty when not known). `None` when neither
/// sign is there.
pub fn hint(divergent_steps: &[Option<u64>], slow: Option<SlowStep>) -> Option<TimingHint> {
    let moving = moves(divergent_steps);
    if !moving && slow.is_none() {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(s) = &slow {
        parts.push(format!(
            "step {} took {} ms in {}, {}x its median step ({} ms) and {}x the same step on the other side ({} ms)",
            s.step,
            s.ms,
            s.run,
            times(s.ms, s.median_ms),
            s.median_ms,
            times(s.ms, s.other_ms),
            s.other_ms
        ));
    }
    if moving {
        parts.push(format!(
            "the same-seed rollouts first differ from rollout 1 at different steps ({})",
            steps_text(divergent_steps)
        ));
    }
    let source = if slow.is_some() {
        "on timing"
    } else {
        "on timing or on another source that varies from run to run"
    };
    Some(TimingHint {
        summary: format!(
            "the env's behaviour depends {source}, not on state one run leaves for another: {}",
            parts.join("; ")
        ),
        divergent_steps: if moving {
            divergent_steps.to_vec()
        } else {
            Vec::new()
        },
        slow_step: slow,
    })
}

/// The hint of the same-seed check, carried to another failing check of the same seed: the
/// divergence that moves there explains this one too.
pub fn carried(same_seed: &TimingHint) -> Option<TimingHint> {
    if same_seed.divergent_steps.is_empty() {
        return None;
    }
    Some(TimingHint {
        summary: format!(
            "this may be timing too, not state shared between instances: in the same-seed check the rollouts first differ from rollout 1 at different steps ({})",
            steps_text(&same_seed.divergent_steps)
        ),
        divergent_steps: same_seed.divergent_steps.clone(),
        slow_step: None,
    })
}

/// Whether the first divergent steps are not all the same (at least one divergence).
fn moves(steps: &[Option<u64>]) -> bool {
    steps.iter().any(Option::is_some) && steps.iter().any(|s| *s != steps[0])
}

/// `rollout 2 at step 4, rollout 3 identical, ...`: rollouts numbered from 2.
fn steps_text(steps: &[Option<u64>]) -> String {
    const SHOWN: usize = 6;
    let mut parts: Vec<String> = steps
        .iter()
        .take(SHOWN)
        .enumerate()
        .map(|(i, s)| match s {
            Some(k) => format!("rollout {} at step {k}", i + 2),
            None => format!("rollout {} identical", i + 2),
        })
        .collect();
    if steps.len() > SHOWN {
        parts.push(format!("{} more", steps.len() - SHOWN));
    }
    parts.join(", ")
}

/// `39` or `2.5`: how many times `a` is `b`.
fn times(a: f64, b: f64) -> String {
    if b <= 0.0 {
        return "many".to_string();
    }
    let x = a / b;
    if x >= 10.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{End, Trace};

    fn run(ms: &[u64]) -> Recorded {
        Recorded {
            trace: Trace {
                format: "v1".into(),
                env: "x".into(),
                seed: 0,
                steps: ms.len() as u64,
                end: End::StepsExhausted,
                episode: crate::trace::Digest::ZERO,
                step_digests: Vec::new(),
            },
            captured: None,
            kept: Default::default(),
            step_times: ms.iter().map(|&m| Duration::from_millis(m)).collect(),
            checked: Default::default(),
        }
    }

    #[test]
    fn a_step_that_timed_out_on_one_side_is_slow() {
        let (a, b) = (run(&[900, 20, 21, 19, 22]), run(&[900, 20, 21, 520, 22]));
        let s = slow_step((&a, &b), ("rollout 1", "rollout 2"), 3).unwrap();
        assert_eq!((s.step, s.run.as_str(), s.ms), (3, "rollout 2", 520.0));
        assert_eq!((s.median_ms, s.other_ms), (21.0, 19.0));
        let h = hint(&[], Some(s)).unwrap();
        assert!(
            h.summary
                .starts_with("the env's behaviour depends on timing, not on state"),
            "{}",
            h.summary
        );
        assert!(h.summary.contains("step 3 took 520 ms in rollout 2, 25x its median step (21 ms) and 27x the same step on the other side (19 ms)"), "{}", h.summary);
    }

    #[test]
    fn a_step_slow_on_both_sides_or_short_is_not() {
        // A page load at step 3 in every run is the env's own pace, not a timeout.
        let (a, b) = (run(&[9, 20, 21, 500, 22]), run(&[9, 20, 21, 520, 22]));
        assert_eq!(slow_step((&a, &b), ("l", "r"), 3), None);
        // Ten times a 1 ms median, but under SLOW_MIN: a scheduler hiccup.
        let (a, b) = (run(&[9, 1, 1, 1, 1]), run(&[9, 1, 1, 30, 1]));
        assert_eq!(slow_step((&a, &b), ("l", "r"), 3), None);
        // The reset is not a step; an unmeasured run says nothing.
        let (a, b) = (run(&[9, 1, 1]), run(&[900, 1, 1]));
        assert_eq!(slow_step((&a, &b), ("l", "r"), 0), None);
        assert_eq!(slow_step((&a, &run(&[])), ("l", "r"), 1), None);
    }

    #[test]
    fn a_divergence_that_moves_is_named_and_one_that_repeats_is_not() {
        assert_eq!(hint(&[Some(1), Some(1), Some(1)], None), None);
        assert_eq!(hint(&[None, None], None), None);
        let h = hint(&[Some(4), None, Some(9)], None).unwrap();
        assert!(
            h.summary
                .contains("depends on timing or on another source that varies from run to run"),
            "{}",
            h.summary
        );
        assert!(
            h.summary
                .ends_with("(rollout 2 at step 4, rollout 3 identical, rollout 4 at step 9)"),
            "{}",
            h.summary
        );
        let c = carried(&h).unwrap();
        assert!(
            c.summary.starts_with("this may be timing too"),
            "{}",
            c.summary
        );
        // A slow step alone is this check's own, not carried to another.
        let slow = SlowStep {
            step: 3,
            run: "r".into(),
            ms: 520.0,
            median_ms: 21.0,
            other_ms: 19.0,
        };
        assert_eq!(carried(&hint(&[], Some(slow)).unwrap()), None);
    }
}
