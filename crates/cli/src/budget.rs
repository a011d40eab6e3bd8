//! `check --budget`: measuring each env on one short rollout, and the header line that says
//! what the budget cut (the fitting itself is `lockstep::budget`).

use std::time::Duration;

use lockstep::budget::{Fitted, Measured};

use crate::envs::EnvSource;

/// The start and step times of every env that started ([`lockstep::budget::measure`]),
/// summed: the estimate of a plan is linear in them, so the sum estimates all envs' trials.
pub fn measure(
    sources: &[(String, EnvSource)],
    broken: &[Option<String>],
    seed: u64,
    steps: u64,
) -> anyhow::Result<Measured> {
    let mut total = Measured {
        start: Duration::ZERO,
        step: Duration::ZERO,
    };
    for ((id, source), broken) in sources.iter().zip(broken) {
        if broken.is_some() {
            continue;
        }
        let m = lockstep::budget::measure(source.factory(), seed, steps)
            .map_err(|e| anyhow::anyhow!("--budget: measuring {id}: {e}"))?;
        total.start += m.start;
        total.step += m.step;
    }
    Ok(total)
}

/// `budget 2m: an instance starts in 1.2 s, a step takes 15.0 ms; cut seeds 5 -> 2, steps 200
/// -> 50; estimated 1m 52s`.
pub fn header_line(budget: Duration, m: Measured, f: &Fitted) -> String {
    let cut = if f.dropped.is_empty() {
        "nothing cut".to_string()
    } else {
        format!("cut {}", f.dropped.join(", "))
    };
    let over = if f.fits {
        String::new()
    } else {
        " (the smallest plan is over the budget; it runs anyway)".to_string()
    };
    format!(
        "budget {}: an instance starts in {}, a step takes {}; {cut}; estimated {}{over}",
        words(budget),
        words(m.start),
        words(m.step),
        words(f.estimate)
    )
}

/// A duration as people read it: `1m 52s`, `1.2 s`, `15.0 ms`.
fn words(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 60.0 {
        let whole = s.round() as u64;
        match (whole / 60, whole % 60) {
            (m, 0) => format!("{m}m"),
            (m, r) => format!("{m}m {r}s"),
        }
    } else if s >= 1.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.1} ms", s * 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(words(Duration::from_secs(112)), "1m 52s");
        assert_eq!(words(Duration::from_secs(120)), "2m");
        assert_eq!(words(Duration::from_millis(1200)), "1.2 s");
        assert_eq!(words(Duration::from_micros(15_000)), "15.0 ms");
    }
}
