//! report.html: one self-contained page (inline CSS and SVG, no script, no network) rendered
//! from a [`Report`], so it can be attached to a ticket or opened offline years later.

use std::fmt::Write;

use super::{CheckOutcome, Report, Tally, Timeline, Trial, CHECK_NAMES};

/// Most steps drawn in a timeline; longer runs show a window around the first divergence.
const TIMELINE_CELLS_MAX: usize = 120;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1d1d1f;max-width:1200px}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}table{border-collapse:collapse;margin:.5em 0}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}th{background:#f3f3f3}\
.pass{color:#176f2c;font-weight:600}.fail{color:#b3261e;font-weight:600}.na{color:#777}\
code,pre{font:12px/1.4 ui-monospace,monospace}pre{background:#f7f7f7;padding:.5em;overflow-x:auto;margin:0}\
.diff td pre{background:transparent}.diff td.before{background:#fdecea}.diff td.after{background:#e8f5e9}.verdict{font-size:1.2em}\
details{margin:.3em 0}section.failure{border-left:4px solid #b3261e;padding-left:1em;margin:1em 0}";

/// Renders the report as a complete HTML document.
pub fn render_html(report: &Report) -> String {
    let mut h = String::with_capacity(16 * 1024);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>lockstep report</title><style>{STYLE}</style></head><body>\n"
    );
    let verdict = if report.passed {
        "<span class=\"pass\">all checks pass</span>"
    } else {
        "<span class=\"fail\">some checks fail</span>"
    };
    let _ = write!(
        h,
        "<h1>lockstep report</h1>\n<p class=\"verdict\" id=\"verdict\">{verdict}</p>\n\
         <p>lockstep {} &middot; schema <code>{}</code> &middot; seeds {} &middot; {} steps per rollout{}</p>\n",
        esc(&report.lockstep_version),
        esc(&report.schema),
        esc(&seed_list(&report.params.seeds)),
        report.params.steps,
        report
            .shard
            .map(|s| format!(" &middot; shard {}/{}", s.index, s.count))
            .unwrap_or_default()
    );
    summary_table(&mut h, report);
    failures(&mut h, report);
    goldens(&mut h, report);
    trial_details(&mut h, report);
    h.push_str("</body></html>\n");
    h
}

fn summary_table(h: &mut String, report: &Report) {
    h.push_str(
        "<h2>Summary</h2>\n<table id=\"summary\"><thead><tr><th>env</th><th>seeds</th>\
                <th>conformity</th><th>task success</th>",
    );
    let checks = ordered_checks(report);
    for c in &checks {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("<th>goldens</th><th>errors</th></tr></thead><tbody>\n");
    for s in &report.summary {
        let _ = write!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&s.env),
            s.seeds,
            tally(s.conformity, true),
            tally(s.success, false)
        );
        for c in &checks {
            let cell = s.checks.get(*c).map_or_else(na, |t| tally(*t, true));
            let _ = write!(h, "<td>{cell}</td>");
        }
        let _ = writeln!(
            h,
            "<td>{}</td><td>{}</td></tr>",
            tally(s.goldens, true),
            if s.errors == 0 {
                "0".to_string()
            } else {
                format!("<span class=\"fail\">{}</span>", s.errors)
            }
        );
    }
    h.push_str(
        "</tbody></table>\n<p class=\"na\">Conformity: the starting state after a played \
                episode and a reset fingerprints as on a fresh instance. Task success is reported \
                beside it and never decides it.</p>\n",
    );
}

fn failures(h: &mut String, report: &Report) {
    let failing: Vec<&Trial> = report.trials.iter().filter(|t| !t.passed()).collect();
    if failing.is_empty() {
        return;
    }
    h.push_str("<h2>Failures</h2>\n");
    for t in failing {
        let _ = writeln!(
            h,
            "<section class=\"failure\"><h3><code>{}</code> seed {}</h3>",
            esc(&t.env),
            t.seed
        );
        if let Some(e) = &t.error {
            let _ = writeln!(h, "<p class=\"fail\">error: {}</p>", esc(e));
        }
        if let Some(a) = t.audit.as_ref().filter(|a| !a.conforms) {
            let _ = writeln!(
                h,
                "<p><b>Reset contract:</b> starting fingerprint <code>{}</code> became <code>{}</code>; \
                 differing fields: <code>{}</code></p>",
                esc(a.initial_fingerprint.as_deref().unwrap_or("-")),
                esc(a.repeat_fingerprint.as_deref().unwrap_or("-")),
                esc(&a.different_fields.join(", "))
            );
            for (label, paths) in [("missing", &a.missing), ("unexpected", &a.unexpected)] {
                if !paths.is_empty() {
                    let _ = writeln!(
                        h,
                        "<p>{label} fields: <code>{}</code></p>",
                        esc(&paths.join(", "))
                    );
                }
            }
            if !a.changes.is_empty() {
                h.push_str("<table class=\"diff\"><thead><tr><th>path</th><th>change</th>\
                            <th>fresh reset</th><th>reset after an episode</th></tr></thead><tbody>\n");
                for c in &a.changes {
                    let field = |k: &str| c.get(k).cloned().unwrap_or(serde_json::Value::Null);
                    let _ = writeln!(
                        h,
                        "<tr><td><code>{}</code></td><td>{}</td><td class=\"before\"><pre>{}</pre></td>\
                         <td class=\"after\"><pre>{}</pre></td></tr>",
                        esc(field("pointer").as_str().unwrap_or("")),
                        esc(field("kind").as_str().unwrap_or("")),
                        esc(&pretty(&field("before"))),
                        esc(&pretty(&field("after")))
                    );
                }
                h.push_str("</tbody></table>\n");
            }
        }
        for c in t.checks.iter().filter(|c| !c.passed && c.applicable) {
            check_failure(h, c);
        }
        h.push_str("</section>\n");
    }
}

fn check_failure(h: &mut String, c: &CheckOutcome) {
    let _ = writeln!(
        h,
        "<p><b>{} check:</b> <span class=\"fail\">{}</span></p>",
        esc(&c.check),
        esc(&c.summary)
    );
    if let Some(t) = &c.timeline {
        h.push_str(&timeline_svg(t));
    }
    if let Some(d) = &c.divergence {
        let _ = writeln!(
            h,
            "<details open><summary>first divergence</summary><pre>{}</pre></details>",
            esc(&pretty(d))
        );
    }
}

/// Two rows of step cells (one per run): equal digests green, differing red, absent grey, with
/// the first divergent step marked.
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
    let cell = 8usize;
    // Wide enough for the longer label at 11px (about 6.5px a character).
    let longest = t
        .left_label
        .chars()
        .count()
        .max(t.right_label.chars().count());
    let label_w = (longest * 13 / 2 + 12).max(90);
    let width = label_w + (end - start) * cell + 20;
    let height = 78usize;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         role=\"img\" aria-label=\"per-step digests of two runs\">"
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
                label_w + (i - start) * cell,
                cell - 1,
                if present { colour } else { "#eeeeee" },
                esc(digests.get(i).map_or("absent", |d| d.as_str()))
            );
        }
    }
    if let Some(f) = first.filter(|f| (start..end).contains(f)) {
        let x = label_w + (f - start) * cell;
        let _ = write!(
            s,
            "<line x1=\"{x}\" y1=\"4\" x2=\"{x}\" y2=\"52\" stroke=\"#000\" stroke-width=\"2\"/>\
             <text x=\"{x}\" y=\"68\" font-size=\"11\">first divergent step {f}</text>"
        );
    }
    s.push_str("</svg>\n");
    s
}

fn goldens(h: &mut String, report: &Report) {
    if report.goldens.is_empty() {
        return;
    }
    h.push_str(
        "<h2>Golden files</h2>\n<table id=\"goldens\"><thead><tr><th>file</th><th>env</th>\
                <th>seed</th><th>result</th></tr></thead><tbody>\n",
    );
    for g in &report.goldens {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
            esc(&g.file),
            esc(g.env.as_deref().unwrap_or("-")),
            g.seed.map_or_else(|| "-".to_string(), |s| s.to_string()),
            if g.passed { "pass" } else { "fail" },
            esc(&g.summary)
        );
    }
    h.push_str("</tbody></table>\n");
}

fn trial_details(h: &mut String, report: &Report) {
    h.push_str("<h2>Trials</h2>\n");
    for t in &report.trials {
        let _ = write!(
            h,
            "<details><summary><code>{}</code> seed {} &mdash; {}</summary><table>",
            esc(&t.env),
            t.seed,
            if t.passed() {
                "<span class=\"pass\">pass</span>"
            } else {
                "<span class=\"fail\">fail</span>"
            }
        );
        if let Some(a) = &t.audit {
            let _ = write!(
                h,
                "<tr><th>initial fingerprint</th><td><code>{}</code></td></tr>\
                 <tr><th>repeat fingerprint</th><td><code>{}</code></td></tr>\
                 <tr><th>conforms</th><td>{}</td></tr><tr><th>task success</th><td>{}</td></tr>",
                esc(a.initial_fingerprint.as_deref().unwrap_or("-")),
                esc(a.repeat_fingerprint.as_deref().unwrap_or("-")),
                yes_no(a.conforms),
                a.success
                    .map_or_else(na, |s| if s { "yes".into() } else { "no".into() })
            );
        }
        for c in &t.checks {
            let _ = write!(
                h,
                "<tr><th>{}</th><td>{} {}</td></tr>",
                esc(&c.check),
                if c.applicable {
                    yes_no(c.passed)
                } else {
                    "n/a"
                },
                esc(&c.summary)
            );
        }
        h.push_str("</table></details>\n");
    }
}

fn ordered_checks(report: &Report) -> Vec<&str> {
    let mut names: Vec<&str> = CHECK_NAMES
        .iter()
        .copied()
        .filter(|c| report.params.checks.iter().any(|p| p == c))
        .collect();
    for c in &report.params.checks {
        if !names.contains(&c.as_str()) {
            names.push(c);
        }
    }
    names
}

fn tally(t: Tally, decides: bool) -> String {
    if t.total == 0 && t.not_applicable == 0 {
        return na();
    }
    let class = if !decides {
        ""
    } else if t.all_passed() {
        "pass"
    } else {
        "fail"
    };
    format!("<span class=\"{class}\">{t}</span>")
}

fn na() -> String {
    "<span class=\"na\">&ndash;</span>".to_string()
}

fn yes_no(ok: bool) -> &'static str {
    if ok {
        "<span class=\"pass\">pass</span>"
    } else {
        "<span class=\"fail\">fail</span>"
    }
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn seed_list(seeds: &[u64]) -> String {
    match seeds {
        [] => "none".into(),
        [one] => one.to_string(),
        _ if seeds.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("{}..{}", seeds[0], seeds[seeds.len() - 1] + 1)
        }
        _ => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// Escapes text for HTML element content and attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{sample_params, trial};
    use super::*;

    #[test]
    fn page_has_summary_diff_and_timeline() {
        let report = Report::assemble(
            sample_params(),
            None,
            vec![
                trial("a-env", 1, false, false),
                trial("b-env", 1, true, true),
            ],
            vec![],
        );
        let html = render_html(&report);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("id=\"summary\""));
        assert!(html.contains("<code>/cache</code>"));
        assert!(html.contains("first divergent step 3"));
        assert!(html.contains("some checks fail"));
        // The only URL is the SVG namespace, which is a name, not a fetch.
        assert_eq!(
            html.matches("://").count(),
            html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        assert!(!html.contains("<script"), "no script, no network");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

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
        assert_eq!(svg.matches("<rect").count(), 2 * TIMELINE_CELLS_MAX);
    }
}
