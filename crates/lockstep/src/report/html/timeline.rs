//! The divergence timeline of a failed check: an SVG of per-step digests of the two runs.

use std::fmt::Write;

use super::esc;
use crate::report::Timeline;

/// Most steps drawn in a timeline; longer runs show a window around the first divergence.
const TIMELINE_CELLS_MAX: usize = 120;

/// Two rows of step cells (one per run): equal digests green, differing red, absent grey;
/// under them a step axis, and the first divergent step marked and labelled in full. Every
/// timeline uses the same scale (one cell per step), so the checks of a trial line up.
pub(crate) fn timeline_svg(t: &Timeline) -> String {
    let steps = t.left.len().max(t.right.len());
    let first = t.first_divergent_step.map(|s| s as usize);
    let start = match first {
        Some(f) if steps > TIMELINE_CELLS_MAX => f
            .saturating_sub(TIMELINE_CELLS_MAX / 4)
            .min(steps - TIMELINE_CELLS_MAX),
        _ => 0,
    };
    let end = (start + TIMELINE_CELLS_MAX).min(steps);
    // Short episodes get wider cells (a 2-step run is not two specks), long ones 8px; the
    // width depends only on the episode length, so the checks of a trial share one scale.
    let cell = (480 / steps.max(1)).clamp(8, 24);
    // About 6.5px a character at 11px.
    let text_w = |chars: usize| chars * 13 / 2;
    let longest = t
        .left_label
        .chars()
        .count()
        .max(t.right_label.chars().count());
    let label_w = (text_w(longest) + 12).max(90);
    let first_label = first.map(|f| format!("first divergent step {f}"));
    let x_of = |i: usize| label_w + (i - start) * cell;
    let cells_w = (end - start) * cell;
    // Wide enough for the whole label of the first divergent step wherever it falls.
    let label_end = first
        .filter(|f| (start..end).contains(f))
        .zip(first_label.as_ref())
        .map_or(0, |(f, l)| x_of(f) + text_w(l.chars().count()) + 8);
    let width = (label_w + cells_w + 20).max(label_end);
    let height = 96usize;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         role=\"img\" aria-label=\"per-step digests of two runs, steps {start} to {}\">",
        end.saturating_sub(1)
    );
    for (row, (label, digests)) in [(&t.left_label, &t.left), (&t.right_label, &t.right)]
        .into_iter()
        .enumerate()
    {
        let y = 10 + row * 22;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" font-size=\"11\">{}</text>",
            y + 10,
            esc(label)
        );
        for i in start..end {
            let colour = match (t.left.get(i), t.right.get(i)) {
                (Some(a), Some(b)) if a == b => "#4caf50",
                (Some(_), Some(_)) => "#e53935",
                _ => "#bdbdbd",
            };
            let present = digests.get(i).is_some();
            let _ = write!(
                s,
                "<rect x=\"{}\" y=\"{y}\" width=\"{}\" height=\"14\" fill=\"{}\"><title>step {i}: {}</title></rect>",
                x_of(i),
                cell - 1,
                if present { colour } else { "#eeeeee" },
                esc(digests.get(i).map_or("absent", |d| d.as_str()))
            );
        }
    }
    // The step axis: a tick every 1, 5, 10, 25, 50... steps, about ten ticks in all.
    let span = end - start;
    let tick = [1usize, 5, 10, 25, 50, 100]
        .into_iter()
        .find(|k| span / k <= 12)
        .unwrap_or(100);
    let axis_y = 56;
    let _ = write!(
        s,
        "<g class=\"axis\"><line x1=\"{label_w}\" y1=\"{axis_y}\" x2=\"{}\" y2=\"{axis_y}\" stroke=\"#888\"/>\
         <text x=\"0\" y=\"{}\" font-size=\"11\" fill=\"#555\">step</text>",
        label_w + cells_w,
        axis_y + 12
    );
    for i in (start..end).filter(|i| i % tick == 0) {
        let x = x_of(i) + cell / 2;
        let _ = write!(
            s,
            "<line x1=\"{x}\" y1=\"{axis_y}\" x2=\"{x}\" y2=\"{}\" stroke=\"#888\"/>\
             <text x=\"{x}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#555\">{i}</text>",
            axis_y + 4,
            axis_y + 14
        );
    }
    s.push_str("</g>");
    if let (Some(f), Some(label)) = (first.filter(|f| (start..end).contains(f)), &first_label) {
        let x = x_of(f);
        let _ = write!(
            s,
            "<line x1=\"{x}\" y1=\"4\" x2=\"{x}\" y2=\"{}\" stroke=\"#000\" stroke-width=\"2\"/>\
             <text class=\"first\" x=\"{x}\" y=\"{}\" font-size=\"11\" font-weight=\"600\">{}</text>",
            axis_y + 20,
            axis_y + 32,
            esc(label)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_timelines_show_a_window_around_the_divergence() {
        let left: Vec<String> = (0..1000).map(|i| format!("{i:02x}")).collect();
        let mut right = left.clone();
        right[700] = "zz".into();
        let svg = timeline_svg(&Timeline {
            left_label: "a".into(),
            right_label: "b".into(),
            left,
            right,
            first_divergent_step: Some(700),
        });
        assert!(svg.contains("first divergent step 700"));
        // A step axis with labelled ticks, and the label of the divergence inside the picture.
        assert!(
            svg.contains("text-anchor=\"middle\" fill=\"#555\">700</text>"),
            "{svg}"
        );
        let width: usize = svg
            .split("width=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let x: usize = svg
            .split("class=\"first\" x=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            x + "first divergent step 700".len() * 6 < width,
            "label fits: {x} {width}"
        );
        assert_eq!(svg.matches("<rect").count(), 2 * TIMELINE_CELLS_MAX);
    }
}
