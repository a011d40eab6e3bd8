//! report.html: one self-contained page (inline CSS and SVG, no script, no network) rendered
//! from a [`Report`], so it can be attached to a ticket or opened offline years later.

use std::fmt::Write;

use serde_json::Value;

use super::groups::{failure_groups, seed_list as seeds_of, FailureGroup, FailureKind};
use super::{AuditRecord, CheckOutcome, Report, Tally, Timeline, Trial, CHECK_NAMES};

/// Gives the command that replays a trial's failed checks (named), when there is one; with no
/// checks named, the command that re-runs the trial's reset-contract audit.
pub type ReplayCommand<'a> = dyn Fn(&Trial, &[&str]) -> Option<String> + 'a;

/// Most rows of a field-level diff shown per failure (report.json has all of them).
const DIFF_ROWS_MAX: usize = 20;

/// Most steps drawn in a timeline; longer runs show a window around the first divergence.
const TIMELINE_CELLS_MAX: usize = 120;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1d1d1f;max-width:1200px}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}table{border-collapse:collapse;margin:.5em 0}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}th{background:#f3f3f3}\
.pass{color:#176f2c;font-weight:600}.fail{color:#b3261e;font-weight:600}.na{color:#777}\
code,pre{font:12px/1.4 ui-monospace,monospace}pre{background:#f7f7f7;padding:.5em;overflow-x:auto;margin:0}\
.diff td pre{background:transparent}.diff td.before{background:#fdecea}.diff td.after{background:#e8f5e9}.verdict{font-size:1.2em}\
details{margin:.3em 0}section.failure{border-left:4px solid #b3261e;padding-left:1em;margin:1em 0}\
pre.replay{background:#1d1d1f;color:#f5f5f7;padding:.6em;user-select:all;white-space:pre-wrap}\
table.divergence th{width:9em}svg.timeline{max-width:100%;height:auto;display:block;margin:.4em 0}ul.errors{margin:.3em 0}.legend{color:#555;max-width:60em}";

/// Renders the report as a complete HTML document, without replay commands.
pub fn render_html(report: &Report) -> String {
    render_html_with(report, &|_, _| None)
}

/// Renders the report as a complete HTML document: failures first, grouped across seeds as
/// on the terminal, each with its replay command; passing trials one line per env.
pub fn render_html_with(report: &Report, replay: &ReplayCommand<'_>) -> String {
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
    failures(&mut h, report, replay);
    goldens(&mut h, report);
    passing(&mut h, report);
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
        "</tbody></table>\n<p class=\"legend\" id=\"legend\"><b>conformity</b>: the starting state after a \
                played episode and a reset fingerprints as on a fresh instance; <b>task success</b>: \
                the repeat episode's outcome, only for envs that report one (\"&ndash;\" otherwise), \
                never deciding a verdict; <b>same</b>: one seed twice on one instance; <b>other</b>: \
                other seeds give other episodes; <b>interleaved</b>: seeds stepped in turn; \
                <b>process</b>: a fresh process; <b>parallel</b>: parallel threads; <b>goldens</b>: \
                golden files reproduced.</p>\n",
    );
}

fn failures(h: &mut String, report: &Report, replay: &ReplayCommand<'_>) {
    let groups = failure_groups(report);
    if groups.is_empty() {
        return;
    }
    h.push_str("<h2 id=\"failures\">Failures</h2>\n");
    for g in &groups {
        failure_group(h, g, replay);
    }
}

/// One group: its header with the seeds, each variant explained by its first trial, the
/// replay command of the first seed.
fn failure_group(h: &mut String, g: &FailureGroup<'_>, replay: &ReplayCommand<'_>) {
    let what = match g.kind {
        FailureKind::Error => "environment error".to_string(),
        FailureKind::ResetContract => "reset contract".to_string(),
        FailureKind::Check(name) => format!("{name} check"),
    };
    let _ = writeln!(
        h,
        "<section class=\"failure\"><h3><code>{}</code>: {} &mdash; {}</h3>",
        esc(g.env),
        esc(&what),
        esc(&seeds_of(&g.trials))
    );
    for ts in &g.variants {
        let t = ts[0];
        if ts.len() > 1 {
            let _ = writeln!(
                h,
                "<p class=\"na\">{} fail the same way (their own values in report.json); seed {}:</p>",
                esc(&seeds_of(ts)),
                t.seed
            );
        } else {
            let _ = writeln!(h, "<p class=\"na\">seed {}:</p>", t.seed);
        }
        match g.kind {
            FailureKind::Error => {
                h.push_str("<ul class=\"errors\">");
                for line in t.error.as_deref().unwrap_or_default().lines() {
                    let _ = write!(h, "<li class=\"fail\">{}</li>", esc(line));
                }
                h.push_str("</ul>\n");
            }
            FailureKind::ResetContract => {
                if let Some(a) = &t.audit {
                    audit_failure(h, a);
                }
            }
            FailureKind::Check(name) => {
                if let Some(c) = t.checks.iter().find(|c| c.check == name) {
                    check_failure(h, c);
                }
            }
        }
    }
    if g.kind != FailureKind::Error {
        if let Some(cmd) = replay(g.trials[0], &g.checks()) {
            let _ = writeln!(
                h,
                "<p>Replay seed {}:</p><pre class=\"replay\"><code>{}</code></pre>",
                g.trials[0].seed,
                esc(&cmd)
            );
            if g.trials.len() > 1 {
                let _ = writeln!(
                    h,
                    "<p class=\"na\">For {}: the same command with that seed.</p>",
                    esc(&seeds_of(&g.trials[1..]))
                );
            }
        }
    }
    h.push_str("</section>\n");
}

fn audit_failure(h: &mut String, a: &AuditRecord) {
    let _ = writeln!(
        h,
        "<p>After an episode, <code>reset(seed)</code> does not give the state a fresh instance \
         starts in: fingerprint <code>{}</code> on a fresh instance, <code>{}</code> after the \
         reset; differing fields: <code>{}</code></p>",
        esc(short(a.initial_fingerprint.as_deref())),
        esc(short(a.repeat_fingerprint.as_deref())),
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
    if a.changes.is_empty() {
        return;
    }
    h.push_str(
        "<table class=\"diff\"><thead><tr><th>path</th><th>change</th>\
         <th>fresh reset</th><th>reset after an episode</th></tr></thead><tbody>\n",
    );
    for c in a.changes.iter().take(DIFF_ROWS_MAX) {
        let field = |k: &str| c.get(k).cloned().unwrap_or(Value::Null);
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"before\">{}</td>\
             <td class=\"after\">{}</td></tr>",
            esc(field("pointer").as_str().unwrap_or("")),
            esc(field("kind").as_str().unwrap_or("")),
            value_cell(&field("before")),
            value_cell(&field("after"))
        );
    }
    h.push_str("</tbody></table>\n");
    if a.changes.len() > DIFF_ROWS_MAX {
        let _ = writeln!(
            h,
            "<p class=\"na\">{} more changes in report.json.</p>",
            a.changes.len() - DIFF_ROWS_MAX
        );
    }
}

fn check_failure(h: &mut String, c: &CheckOutcome) {
    let _ = writeln!(h, "<p class=\"fail\">{}</p>", esc(&c.summary));
    if let Some(d) = &c.divergence {
        let (left, right) = c
            .timeline
            .as_ref()
            .map_or(("left", "right"), |t| (&t.left_label, &t.right_label));
        divergence_table(h, d, left, right);
    }
    if let Some(t) = &c.timeline {
        h.push_str(&timeline_svg(t));
    }
}

/// The first divergence as a small table: step, agent, key, element, both values, the note.
fn divergence_table(h: &mut String, d: &Value, left: &str, right: &str) {
    let text = |p: &str| d.pointer(p).map(plain);
    let mut rows: Vec<(String, String)> = Vec::new();
    if let Some(step) = text("/step") {
        rows.push(("step".into(), step));
    }
    if let Some(agent) = text("/site/agent") {
        rows.push(("agent".into(), agent));
    }
    let what = text("/site/key").or_else(|| text("/site/kind"));
    if let Some(key) = what {
        rows.push(("key".into(), key));
    }
    let (a, b) = match d.pointer("/detail/kind").and_then(Value::as_str) {
        Some("element") => {
            rows.push((
                "element".into(),
                format!(
                    "{} {} ({})",
                    text("/detail/index").unwrap_or_default(),
                    text("/detail/multi_index").unwrap_or_default(),
                    text("/detail/dtype").unwrap_or_default()
                ),
            ));
            (text("/detail/left"), text("/detail/right"))
        }
        Some("info") => {
            rows.push((
                "info".into(),
                text("/detail/changes/0/pointer").unwrap_or_default(),
            ));
            (
                text("/detail/changes/0/left"),
                text("/detail/changes/0/right"),
            )
        }
        Some("log") => {
            rows.push((
                "log line".into(),
                format!(
                    "{}, char {}",
                    text("/detail/line").unwrap_or_default(),
                    text("/detail/char_index").unwrap_or_default()
                ),
            ));
            (text("/detail/left"), text("/detail/right"))
        }
        Some("layout") => (
            Some(format!(
                "{} {}",
                text("/detail/left_dtype").unwrap_or_default(),
                text("/detail/left_shape").unwrap_or_default()
            )),
            Some(format!(
                "{} {}",
                text("/detail/right_dtype").unwrap_or_default(),
                text("/detail/right_shape").unwrap_or_default()
            )),
        ),
        _ => (text("/site/left"), text("/site/right")),
    };
    if let Some(a) = a {
        rows.push((left.to_string(), a));
    }
    if let Some(b) = b {
        rows.push((right.to_string(), b));
    }
    if let Some(note) = text("/note") {
        rows.push(("note".into(), note));
    }
    h.push_str("<table class=\"divergence\"><caption>first divergence</caption><tbody>");
    for (k, v) in rows {
        let _ = write!(
            h,
            "<tr><th>{}</th><td><code>{}</code></td></tr>",
            esc(&k),
            esc(&v)
        );
    }
    h.push_str("</tbody></table>\n");
}

/// A value in words for a table cell: strings bare, numbers and flags as written, lists of
/// scalars joined with commas, containers of containers by their size.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) if a.iter().all(|x| !x.is_array() && !x.is_object()) => {
            format!("[{}]", a.iter().map(plain).collect::<Vec<_>>().join(", "))
        }
        Value::Array(a) => format!("a list of {} item(s)", a.len()),
        Value::Object(o) => format!("an object with {} key(s)", o.len()),
        other => other.to_string(),
    }
}

/// A diff value: a scalar as written, an object as a nested key/value table (never JSON text).
fn value_cell(v: &Value) -> String {
    match v {
        Value::Object(o) if !o.is_empty() => {
            let mut s = String::from("<table>");
            for (k, x) in o {
                let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), value_cell(x));
            }
            s.push_str("</table>");
            s
        }
        Value::Array(a) if a.iter().any(|x| x.is_object() || x.is_array()) => {
            let mut s = String::from("<table>");
            for (i, x) in a.iter().enumerate() {
                let _ = write!(s, "<tr><th>{i}</th><td>{}</td></tr>", value_cell(x));
            }
            s.push_str("</table>");
            s
        }
        Value::String(text) => format!("<code>{}</code>", esc(&format!("{text:?}"))),
        other => format!("<code>{}</code>", esc(&plain(other))),
    }
}

fn short(hex: Option<&str>) -> &str {
    hex.map_or("-", |h| &h[..h.len().min(16)])
}

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

/// Passing trials, one collapsed line per env; opened, one row per seed.
fn passing(h: &mut String, report: &Report) {
    h.push_str("<h2 id=\"passing\">Passing trials</h2>\n");
    for env in &report.params.envs {
        let mine: Vec<&Trial> = report.trials.iter().filter(|t| &t.env == env).collect();
        let ok: Vec<&Trial> = mine.iter().copied().filter(|t| t.passed()).collect();
        if ok.is_empty() {
            continue;
        }
        let _ = write!(
            h,
            "<details class=\"passing\"><summary><code>{}</code>: {} of {} trials pass ({})</summary>\
             <table><thead><tr><th>seed</th><th>fingerprint</th><th>task success</th><th>checks</th></tr></thead><tbody>",
            esc(env),
            ok.len(),
            mine.len(),
            esc(&seeds_of(&ok))
        );
        for t in ok {
            let (fingerprint, success) = t.audit.as_ref().map_or(("-", None), |a| {
                (short(a.initial_fingerprint.as_deref()), a.success)
            });
            let checks: Vec<String> = t
                .checks
                .iter()
                .map(|c| format!("{} {}", c.check, if c.applicable { "pass" } else { "n/a" }))
                .collect();
            let _ = write!(
                h,
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                t.seed,
                esc(fingerprint),
                success.map_or_else(na, |s| if s { "yes".into() } else { "no".into() }),
                esc(&checks.join(", "))
            );
        }
        h.push_str("</tbody></table></details>\n");
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
        let html = render_html_with(&report, &|t, checks| {
            Some(format!(
                "lockstep replay --env {} --seed {} --checks {}",
                t.env,
                t.seed,
                checks.join(",")
            ))
        });
        assert!(html.starts_with("<!DOCTYPE html>"));
        // Failures first, grouped; passing trials one line per env; a copyable replay.
        let failures = html.find("id=\"failures\"").unwrap();
        let passing = html.find("id=\"passing\"").unwrap();
        assert!(failures < passing);
        assert!(html.contains("<code>a-env</code>: same check &mdash; seed 1"));
        assert!(html.contains("<pre class=\"replay\"><code>lockstep replay --env a-env --seed 1 --checks same</code></pre>"));
        assert!(html.contains("<code>b-env</code>: 1 of 1 trials pass (seed 1)"));
        assert!(html.contains("id=\"legend\""));
        assert!(
            !html.contains("{&quot;") && !html.contains("{\""),
            "no JSON text"
        );
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
    fn divergence_is_a_table_in_words() {
        let mut h = String::new();
        let d = serde_json::json!({"step": 1, "site": {"kind": "obs", "agent": "blue", "key": "noise"},
            "detail": {"kind": "element", "index": 0, "multi_index": [0], "dtype": "float32", "left": "0.5", "right": "0.7"},
            "note": "a re-run to step 1 did not reproduce the difference"});
        divergence_table(&mut h, &d, "seed 0 solo", "seed 0 interleaved");
        for row in [
            "<th>step</th><td><code>1</code>",
            "<th>agent</th><td><code>blue</code>",
            "<th>key</th><td><code>noise</code>",
            "<th>element</th><td><code>0 [0] (float32)</code>",
            "<th>seed 0 solo</th><td><code>0.5</code>",
            "<th>seed 0 interleaved</th><td><code>0.7</code>",
            "<th>note</th><td><code>a re-run",
        ] {
            assert!(h.contains(row), "{row}: {h}");
        }
        let cell = value_cell(&serde_json::json!({"json": {"side": "left"}, "size": 17}));
        assert!(
            cell.contains("<th>side</th><td><code>&quot;left&quot;</code>") && !cell.contains('{'),
            "{cell}"
        );
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
