//! Per-seed plots of an env's same-seed rollouts (episode length, return), drawn as inline
//! SVG by the project: no script, no library, nothing fetched.
//!
//! One column per seed; in it one mark per distinct value of the rollouts of that seed. The
//! rollouts that gave what rollout 1 gave share one blue mark; a rollout that gave another
//! value is a red mark and its column is shaded, so a seed that does not replay stands out
//! at a glance, and a page of agreeing seeds is one blue dot per column.

use std::fmt::Write;

use super::esc;
use crate::report::EpisodeGroup;

/// Seeds drawn per plot; a longer run draws its first ones and says so.
pub(super) const SEEDS_MAX: usize = 200;

const TOP: f64 = 22.0;
const PLOT_H: f64 = 100.0;
const LEFT: f64 = 70.0;

/// What a plot draws from a group of rollouts.
pub(super) struct Metric {
    /// Title, e.g. "episode length (steps)".
    pub title: &'static str,
    pub value: fn(&EpisodeGroup) -> f64,
}

/// One column per `(seed, groups)`, at most [`SEEDS_MAX`].
pub(super) fn seed_plot(metric: &Metric, columns: &[(u64, &[EpisodeGroup])]) -> String {
    let columns = &columns[..columns.len().min(SEEDS_MAX)];
    let finite: Vec<f64> = columns
        .iter()
        .flat_map(|(_, gs)| gs.iter().map(metric.value))
        .filter(|v| v.is_finite())
        .collect();
    let (mut lo, mut hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if finite.is_empty() {
        (lo, hi) = (0.0, 1.0);
    }
    if hi - lo < 1e-9 {
        let pad = (hi.abs() * 0.1).max(1.0);
        (lo, hi) = (lo - pad, hi + pad);
    }
    let y_of = |v: f64| {
        if v.is_finite() {
            TOP + (hi - v) / (hi - lo) * PLOT_H
        } else {
            TOP
        }
    };
    let col_w = (640.0 / columns.len().max(1) as f64).clamp(4.0, 48.0);
    let plot_w = col_w * columns.len() as f64;
    let width = (LEFT + plot_w + 20.0).max(320.0);
    let height = TOP + PLOT_H + 34.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         role=\"img\" aria-label=\"{} per seed, one mark per distinct value of its rollouts\">\
         <text x=\"0\" y=\"12\" font-size=\"12\" font-weight=\"600\">{}</text>",
        esc(metric.title),
        esc(metric.title)
    );
    // The value axis: its two ends and its middle, labelled.
    for v in [hi, (hi + lo) / 2.0, lo] {
        let y = y_of(v);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#e0e0e0\"/>\
             <text x=\"{:.0}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#555\">{}</text>",
            LEFT + plot_w,
            LEFT - 6.0,
            y + 3.0,
            esc(&number(v))
        );
    }
    let tick = [1usize, 2, 5, 10, 20, 50, 100]
        .into_iter()
        .find(|k| columns.len() / k <= 12)
        .unwrap_or(100);
    let axis_y = TOP + PLOT_H + 6.0;
    let _ = write!(
        s,
        "<g class=\"axis\"><line x1=\"{LEFT}\" y1=\"{axis_y:.1}\" x2=\"{:.1}\" y2=\"{axis_y:.1}\" stroke=\"#888\"/>\
         <text x=\"0\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\">seed</text>",
        LEFT + plot_w,
        axis_y + 14.0
    );
    for (i, (seed, _)) in columns.iter().enumerate().filter(|(i, _)| i % tick == 0) {
        let x = LEFT + (i as f64 + 0.5) * col_w;
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#555\">{seed}</text>",
            axis_y + 14.0
        );
    }
    s.push_str("</g>");
    for (i, (seed, groups)) in columns.iter().enumerate() {
        let x = LEFT + (i as f64 + 0.5) * col_w;
        let Some(reference) = groups
            .iter()
            .find(|g| g.rollouts.contains(&1))
            .or(groups.first())
        else {
            continue;
        };
        let same =
            |g: &EpisodeGroup| (metric.value)(g).to_bits() == (metric.value)(reference).to_bits();
        let odd: Vec<&EpisodeGroup> = groups.iter().filter(|g| !same(g)).collect();
        if !odd.is_empty() {
            let _ = write!(
                s,
                "<rect class=\"disagrees\" x=\"{:.1}\" y=\"{TOP}\" width=\"{col_w:.1}\" height=\"{PLOT_H}\" fill=\"#fdecea\"/>",
                x - col_w / 2.0
            );
        }
        let agreeing: Vec<u32> = groups
            .iter()
            .filter(|g| same(g))
            .flat_map(|g| g.rollouts.iter().copied())
            .collect();
        let r = (col_w / 2.0 - 0.5).clamp(1.5, 4.0);
        let _ = write!(
            s,
            "<circle class=\"agrees\" cx=\"{x:.1}\" cy=\"{:.1}\" r=\"{r:.1}\" fill=\"#1565c0\"><title>seed {seed}, {}: {}</title></circle>",
            y_of((metric.value)(reference)),
            rollouts_text(&agreeing),
            esc(&number((metric.value)(reference)))
        );
        for g in odd {
            let _ = write!(
                s,
                "<circle class=\"odd\" cx=\"{x:.1}\" cy=\"{:.1}\" r=\"{:.1}\" fill=\"#e53935\" stroke=\"#7f0000\"><title>seed {seed}, {}: {}</title></circle>",
                y_of((metric.value)(g)),
                r + 1.0,
                rollouts_text(&g.rollouts),
                esc(&number((metric.value)(g)))
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

fn rollouts_text(rollouts: &[u32]) -> String {
    match rollouts {
        [one] => format!("rollout {one}"),
        many => format!(
            "rollouts {}",
            crate::report::seeds_text(&many.iter().map(|&r| u64::from(r)).collect::<Vec<_>>())
        ),
    }
}

/// A value for an axis or a tooltip: integers as integers, others to 4 significant digits.
fn number(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN"
        } else if v > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .into();
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let text = format!("{v:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    match text {
        "-0" => "0".into(),
        t => t.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(rollouts: &[u32], steps: u64, ret: f64) -> EpisodeGroup {
        EpisodeGroup {
            rollouts: rollouts.to_vec(),
            steps,
            finished: true,
            returns: [("agent".to_string(), ret)].into_iter().collect(),
        }
    }

    const LENGTH: Metric = Metric {
        title: "episode length (steps)",
        value: |g| g.steps as f64,
    };

    #[test]
    fn agreeing_seeds_are_one_blue_mark_each_and_a_stray_rollout_is_red() {
        let agree = [group(&[1, 2, 3], 10, 1.0)];
        let split = [group(&[1, 3], 10, 1.0), group(&[2], 7, 1.0)];
        let svg = seed_plot(
            &LENGTH,
            &[(0, &agree[..]), (1, &split[..]), (2, &agree[..])],
        );
        assert_eq!(svg.matches("class=\"agrees\"").count(), 3);
        assert_eq!(svg.matches("class=\"odd\"").count(), 1);
        assert_eq!(
            svg.matches("class=\"disagrees\"").count(),
            1,
            "one shaded column"
        );
        assert!(svg.contains("<title>seed 1, rollout 2: 7</title>"), "{svg}");
        assert!(
            svg.contains("<title>seed 0, rollouts 1-3: 10</title>"),
            "{svg}"
        );
        // A group that differs in another metric only is not red in this one.
        let returns_differ = [group(&[1], 10, 1.0), group(&[2], 10, 2.0)];
        let svg = seed_plot(&LENGTH, &[(0, &returns_differ[..])]);
        assert_eq!(svg.matches("class=\"odd\"").count(), 0);
        assert!(
            svg.contains("<title>seed 0, rollouts 1, 2: 10</title>"),
            "{svg}"
        );
    }

    #[test]
    fn many_seeds_are_capped_and_numbers_read_well() {
        let g = [group(&[1], 5, 0.5)];
        let cols: Vec<(u64, &[EpisodeGroup])> = (0..500).map(|s| (s, &g[..])).collect();
        let svg = seed_plot(&LENGTH, &cols);
        assert_eq!(svg.matches("<circle").count(), SEEDS_MAX);
        assert_eq!(number(200.0), "200");
        assert_eq!(number(94.05000000000014), "94.05");
        assert_eq!(number(-0.0123456), "-0.01235");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(-3.0001), "-3");
    }
}
