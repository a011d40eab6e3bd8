//! report.html: one self-contained page (inline CSS and SVG, no script, no network) rendered
//! from a [`Report`], so it can be attached to a ticket or opened offline years later.

use std::fmt::Write;

use serde_json::Value;

mod detail_table;
mod divergence;
mod env_panel;
mod plots;
mod timeline;

use divergence::{divergence_table, value_cell};
use timeline::timeline_svg;

use super::groups::{failure_groups, seed_list as seeds_of, FailureGroup, FailureKind};
use super::{AuditRecord, CheckOutcome, Report, Tally, Trial, CHECK_NAMES};

/// Gives the command that replays a trial's failed checks (named), when there is one; with no
/// checks named, the command that re-runs the trial's reset-contract audit.
pub type ReplayCommand<'a> = dyn Fn(&Trial, &[&str]) -> Option<String> + 'a;

/// Most rows of a field-level diff shown per failure (report.json has all of them).
const DIFF_ROWS_MAX: usize = 20;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1d1d1f;max-width:1200px}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}table{border-collapse:collapse;margin:.5em 0}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}th{background:#f3f3f3}\
.pass{color:#176f2c;font-weight:600}.fail{color:#b3261e;font-weight:600}.na{color:#777}p.timing{color:#8a5a00}\
code,pre{font:12px/1.4 ui-monospace,monospace}pre{background:#f7f7f7;padding:.5em;overflow-x:auto;margin:0}\
.diff td pre{background:transparent}.diff td.before{background:#fdecea}.diff td.after{background:#e8f5e9}.verdict{font-size:1.2em}\
details{margin:.3em 0}section.failure{border-left:4px solid #b3261e;padding-left:1em;margin:1em 0}\
pre.replay{background:#1d1d1f;color:#f5f5f7;padding:.6em;user-select:all;white-space:pre-wrap}\
table.divergence th{width:9em}table.nested,table.states table{margin:0}table.nested th,table.nested td{padding:.1em .4em}\
tr.differs>th{background:#fdecea}details.detail>summary{cursor:pointer;color:#555}section.env{border-left:4px solid #1565c0;padding-left:1em;margin:1em 0}\
div.plots{display:flex;flex-wrap:wrap;gap:1.5em}svg.plot{display:block}p.plots-caption{color:#333;max-width:60em}\
svg.timeline{max-width:100%;height:auto;display:block;margin:.4em 0}ul.errors{margin:.3em 0}.legend{color:#555;max-width:60em}\
pre.line-diff{max-height:30em;overflow:auto}pre.line-diff span{display:block;min-height:1.4em}.del{background:#fdecea}.ins{background:#e8f5e9}.hunk{color:#1565c0}\
div.frames{display:flex;flex-wrap:wrap;gap:1em}div.frames figure{margin:0}div.frames img{width:320px;max-width:100%;height:auto;image-rendering:pixelated;border:1px solid #ccc}";

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
    effect_warnings(&mut h, report);
    failures(&mut h, report, replay);
    goldens(&mut h, report);
    env_panel::env_panels(&mut h, report);
    passing(&mut h, report);
    h.push_str("</body></html>\n");
    h
}

/// What the envs touched outside their process that no contract layer covers: warnings,
/// whatever the verdicts.
fn effect_warnings(h: &mut String, report: &Report) {
    let warnings = report.effect_warnings();
    if warnings.is_empty() {
        return;
    }
    h.push_str("<h2>Effects</h2>\n<ul id=\"effects\">");
    for w in &warnings {
        let _ = write!(
            h,
            "<li class=\"warn\"><code>{}</code> ({}): {}</li>",
            esc(w.env),
            esc(&w.seed_words()),
            esc(w.text)
        );
    }
    h.push_str("</ul>\n");
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
                    audit_detail(h, t.seed, a);
                }
            }
            FailureKind::Check(name) => {
                if let Some(c) = t.checks.iter().find(|c| c.check == name) {
                    check_failure(h, c);
                    if let Some(d) = &c.divergence {
                        let _ = writeln!(
                            h,
                            "<details class=\"detail\"><summary>full detail of seed {}</summary>{}</details>",
                            t.seed,
                            detail_table::detail_table(d, &[])
                        );
                    }
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

/// Behind a toggle: the states before and after the reset side by side (kept for a trial that
/// does not conform), then the rest of the audit record, as tables.
fn audit_detail(h: &mut String, seed: u64, a: &AuditRecord) {
    let _ = write!(
        h,
        "<details class=\"detail\"><summary>full detail of seed {seed}: the states before and after the reset (in red: the fields that differ from a fresh instance), the audit record</summary>"
    );
    if let (Some(before), Some(after)) = (a.detail.get("contaminated"), a.detail.get("after_reset"))
    {
        h.push_str(&detail_table::states_table(
            before,
            after,
            "before the reset (after an episode)",
            "after reset(seed)",
            &a.different_fields,
        ));
    }
    h.push_str(&detail_table::detail_table(
        &a.detail,
        &["contaminated", "after_reset"],
    ));
    h.push_str("</details>\n");
}

fn check_failure(h: &mut String, c: &CheckOutcome) {
    let _ = writeln!(h, "<p class=\"fail\">{}</p>", esc(&c.summary));
    if let Some(t) = &c.timing {
        let _ = writeln!(h, "<p class=\"timing\">timing: {}</p>", esc(&t.summary));
    }
    if let Some(cause) = &c.cause {
        h.push_str("<ul class=\"cause\">");
        for line in cause.lines(CAUSE_SITES_MAX) {
            let _ = write!(h, "<li>{}</li>", esc(&line));
        }
        h.push_str("</ul>\n");
    }
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

/// Sites of a cause listed after the first (the rest are in report.json).
const CAUSE_SITES_MAX: usize = 8;

fn short(hex: Option<&str>) -> &str {
    hex.map_or("-", |h| &h[..h.len().min(16)])
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
    fn a_cause_and_an_effect_warning_are_on_the_page() {
        let mut failing = trial("a-env", 1, true, false);
        let site = crate::cause::SourceSite {
            kind: "clock".into(),
            source: "time.time()".into(),
            via: None,
            what: "a clock".into(),
            site: Some("envs/grid.py:42".into()),
            function: Some("step".into()),
            first: "step 1".into(),
            count: 2,
            at_divergence: true,
            change: None,
        };
        failing.checks[0].cause = Some(crate::cause::Cause {
            headline: format!("cause: {}", site.sentence()),
            sources: vec![site],
            traced: "seed 1 re-run".into(),
        });
        if let Some(a) = failing.audit.as_mut() {
            a.warnings = vec!["the env wrote ~/.cache/x during reset".into()];
        }
        let report = Report::assemble(sample_params(), None, vec![failing], vec![]);
        let html = render_html_with(&report, &|_, _| None);
        assert!(
            html.contains("<li>cause: envs/grid.py:42 in step: time.time(), a clock (2 reads, first at step 1)</li>"),
            "{html}"
        );
        assert!(html.contains("id=\"effects\""), "{html}");
        assert!(
            html.contains("<code>a-env</code> (seed 1): the env wrote ~/.cache/x during reset"),
            "{html}"
        );
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
