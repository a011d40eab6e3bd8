//! Plain-text rendering of a check report for the terminal: a compact table with a legend,
//! then the failures, each said once in words. Stable when not a terminal (no colour, no
//! widths from the terminal).
//!
//! Failures are grouped across seeds (`lockstep::report::failure_groups`, as report.html
//! groups them). The terminal never shows JSON: report.json and `--json` are for programs.

use std::fmt::Write;

use lockstep::report::env_error;
use lockstep::report::{
    failure_groups, seed_list, AuditRecord, CheckOutcome, FailureGroup, FailureKind, Report, Tally,
    Trial, CHECK_NAMES,
};
use lockstep::words::value_words;
use serde_json::Value;

pub use lockstep::report::ReplayCommand;

/// How much of a group's detail the terminal shows: the rest is in report.json.
const MAX_VARIANTS: usize = 3;
const MAX_CHANGES: usize = 3;
/// Frames of the user's code shown per error (innermost first).
const MAX_FRAMES: usize = 3;

/// What each column of the summary table counts, one line under it: the two audit columns,
/// then each check's entry when it ran, then goldens.
const LEGEND_START: &str = "columns: conformity = starting state after reset(seed) is the same on a fresh instance and after an episode; success = task outcome, for envs that report one";
const LEGEND_CHECKS: [(&str, &str); 9] = [
    ("same", "one seed twice on one instance"),
    ("other", "other seeds give other episodes"),
    ("interleaved", "seeds stepped in turn in one process, each compared with the seed alone in a fresh process"),
    ("process", "a fresh process"),
    ("parallel", "parallel threads"),
    ("fork", "a worker forked from a warm process"),
    ("continuation", "reset(seed) once, then episodes after reset() without a seed, on two instances and in a fresh process"),
    ("leftover", "a fresh process given the home and temp directories an earlier one used"),
    ("vector", "each sub-env of a vector env against a single env of its seed, through auto-resets"),
];
const LEGEND_END: &str = "goldens = golden files reproduced";

/// The legend line for the checks `report` ran.
fn legend(report: &Report) -> String {
    let mut parts = vec![LEGEND_START.to_string()];
    for (name, what) in LEGEND_CHECKS {
        if report.params.checks.iter().any(|c| c == name) {
            parts.push(format!("{name} = {what}"));
        }
    }
    parts.push(LEGEND_END.to_string());
    parts.join("; ")
}

/// The summary table and the failures: grouped across seeds, or one block per trial with
/// `verbose` (every trial, passing ones on one line each).
pub fn summary_text(report: &Report, replay: &ReplayCommand<'_>, verbose: bool) -> String {
    let mut out = table(report);
    let _ = writeln!(out, "{}", legend(report));
    for line in skipped_state_lines(report) {
        let _ = writeln!(out, "{line}");
    }
    for w in report.effect_warnings() {
        let _ = writeln!(out, "warning: {} ({}): {}", w.env, w.seed_words(), w.text);
    }
    if verbose {
        for t in &report.trials {
            trial_block(&mut out, t, replay);
        }
    } else {
        grouped_blocks(&mut out, report, replay);
    }
    if !report.goldens.is_empty() {
        let reproduced = report.goldens.iter().filter(|g| g.passed).count();
        let _ = writeln!(
            out,
            "\ngoldens: {reproduced}/{} reproduced",
            report.goldens.len()
        );
    }
    for g in report.goldens.iter().filter(|g| !g.passed) {
        let _ = writeln!(out, "\nFAIL golden {}: {}", g.file, g.summary);
    }
    let errors: u64 = report.summary.iter().map(|s| s.errors).sum();
    let verdict = if errors > 0 {
        format!("{errors} trial(s) hit an environment error: their results are incomplete")
    } else if report.passed {
        "all checks pass".to_string()
    } else {
        "some checks fail".to_string()
    };
    let _ = writeln!(out, "\n{verdict}");
    out
}

/// For each env whose contract was inferred from its state, what of that state lockstep could
/// not read: a check that passes says what it did not see.
fn skipped_state_lines(report: &Report) -> Vec<String> {
    const SHOWN: usize = 4;
    let mut lines = Vec::new();
    for e in &report.envs {
        let Some(about) = &e.about else { continue };
        let skipped = &about.contract.skipped;
        if about.contract.declared || skipped.is_empty() {
            continue;
        }
        let mut named: Vec<String> = skipped
            .iter()
            .take(SHOWN)
            .map(|(pointer, why)| format!("{pointer} ({why})"))
            .collect();
        if skipped.len() > SHOWN {
            named.push(format!("+{} more in report.json", skipped.len() - SHOWN));
        }
        lines.push(format!(
            "state of {}: every attribute after a reset, but not read: {}",
            e.env,
            named.join(", ")
        ));
    }
    lines
}

fn table(report: &Report) -> String {
    let checks: Vec<&str> = CHECK_NAMES
        .iter()
        .copied()
        .filter(|c| report.params.checks.iter().any(|p| p == c))
        .collect();
    let mut header = vec!["env", "seeds", "conformity", "success"];
    header.extend(checks.iter().copied());
    header.push("goldens");
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for s in &report.summary {
        let mut row = vec![
            s.env.clone(),
            s.seeds.to_string(),
            cell(s.conformity),
            cell(s.success),
        ];
        for c in &checks {
            row.push(
                s.checks
                    .get(*c)
                    .map_or_else(|| "-".to_string(), |t| cell(*t)),
            );
        }
        row.push(cell(s.goldens));
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

/// One block per env and kind of failure (environment error, reset contract, each replay
/// check), in report order, each listing its seeds and ending with a replay command.
fn grouped_blocks(out: &mut String, report: &Report, replay: &ReplayCommand<'_>) {
    for g in failure_groups(report) {
        out.push_str(&group_text(&g, replay));
    }
}

/// One group's block as `check` prints it (a group of one trial reads as that trial's
/// failure: the Python package's `Failure`).
pub fn group_text(g: &FailureGroup<'_>, replay: &ReplayCommand<'_>) -> String {
    let mut out = String::new();
    group_block(&mut out, g, replay);
    out
}

fn group_block(out: &mut String, g: &FailureGroup<'_>, replay: &ReplayCommand<'_>) {
    let (word, what) = match g.kind {
        FailureKind::Error => ("ERROR", "environment error".to_string()),
        FailureKind::ResetContract => ("FAIL", "reset contract".to_string()),
        FailureKind::Check(name) => ("FAIL", format!("{name} check")),
    };
    let _ = writeln!(out, "\n{word} {}: {what}, {}", g.env, seed_list(&g.trials));
    let lines_of = |t: &Trial| -> Vec<String> {
        match g.kind {
            FailureKind::Error => cause_lines(t.error.as_deref().unwrap_or_default()),
            FailureKind::ResetContract => t.audit.as_ref().map(audit_lines).unwrap_or_default(),
            FailureKind::Check(name) => t
                .checks
                .iter()
                .find(|c| c.check == name)
                .map(check_lines)
                .unwrap_or_default(),
        }
    };
    for ts in g.variants.iter().take(MAX_VARIANTS) {
        let mut lines = lines_of(ts[0]).into_iter();
        if let Some(first) = lines.next() {
            let _ = writeln!(out, "  seed {}: {first}", ts[0].seed);
        }
        for line in lines {
            let _ = writeln!(out, "    {line}");
        }
        if ts.len() > 1 {
            let _ = writeln!(
                out,
                "  {}: the same, with their own values",
                seed_list(&ts[1..])
            );
        }
    }
    if g.variants.len() > MAX_VARIANTS {
        let rest: Vec<&Trial> = g.variants[MAX_VARIANTS..]
            .iter()
            .flat_map(|ts| ts.iter().copied())
            .collect();
        let _ = writeln!(
            out,
            "  {}: fail elsewhere (`check -v` or report.json says where)",
            seed_list(&rest)
        );
    }
    if g.kind != FailureKind::Error {
        replay_line(out, &g.trials, &g.checks(), replay);
    }
}

/// A trial's error read for its causes (lockstep::report::env_error): each distinct error
/// once, where the user's code raised it, and which parts of the trial hit it; the whole
/// text is in `check -v` and report.json.
fn cause_lines(error: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for c in env_error::causes(error) {
        let users = c.users_frames();
        let innermost = c.frames.last();
        let shown: Vec<&env_error::Frame> = if users.is_empty() {
            innermost.into_iter().collect()
        } else {
            users.into_iter().take(MAX_FRAMES).collect()
        };
        let in_request = c
            .request
            .as_deref()
            .map(|r| format!(" in {r}"))
            .unwrap_or_default();
        let whose = if c.frames.iter().any(env_error::Frame::is_users) {
            ", raised in your code:"
        } else if shown.is_empty() {
            ""
        } else {
            ":"
        };
        lines.push(format!("error: {}{in_request}{whose}", c.message));
        for (i, f) in shown.iter().enumerate() {
            let called = if i == 0 { "" } else { "called from " };
            lines.push(format!(
                "  {called}{}:{} in {}: {}",
                f.file, f.line, f.function, f.code
            ));
        }
        lines.push(format!("  hit by: {}", c.hit_by.join(", ")));
    }
    lines.push("(whole tracebacks: `lockstep check -v`, or trials[].error in report.json)".into());
    lines
}

/// Each error of a trial on its own line (the suite joins them with newlines).
fn error_lines(error: &str) -> Vec<String> {
    error.lines().map(|l| format!("error: {l}")).collect()
}

fn audit_lines(a: &AuditRecord) -> Vec<String> {
    let mut lines = vec![
        "after an episode, reset(seed) does not give the state a fresh instance starts in"
            .to_string(),
    ];
    if a.initial_fingerprint != a.repeat_fingerprint {
        lines.push(format!(
            "fingerprint {} on a fresh instance, {} after the reset",
            short(a.initial_fingerprint.as_deref()),
            short(a.repeat_fingerprint.as_deref())
        ));
    }
    if !a.different_fields.is_empty() {
        lines.push(format!(
            "different fields: {}",
            a.different_fields.join(", ")
        ));
    }
    for p in &a.missing {
        lines.push(format!("missing field {p}"));
    }
    for p in &a.unexpected {
        lines.push(format!("unexpected field {p}"));
    }
    for c in first_change_of_each_field(&a.changes).take(MAX_CHANGES) {
        lines.push(change_line(c));
    }
    if a.changes.len() > MAX_CHANGES {
        lines.push(format!(
            "(+{} more changes in report.json)",
            a.changes.len() - MAX_CHANGES
        ));
    }
    lines
}

fn check_lines(c: &CheckOutcome) -> Vec<String> {
    let mut lines = vec![c.summary.clone()];
    if let Some(note) = c
        .divergence
        .as_ref()
        .and_then(|d| d.get("note"))
        .and_then(Value::as_str)
    {
        lines.push(format!("note: {note}"));
    }
    let parsed = c
        .divergence
        .as_ref()
        .and_then(|d| serde_json::from_value::<lockstep::check::Divergence>(d.clone()).ok());
    if let Some(d) = parsed {
        let (left, right) = c
            .timeline
            .as_ref()
            .map_or(("left", "right"), |t| (&t.left_label, &t.right_label));
        lines.extend(d.more_lines(left, right, MAX_ALSO_SITES));
    }
    if let Some(t) = &c.timing {
        lines.push(format!("timing: {}", t.summary));
    }
    if let Some(cause) = &c.cause {
        lines.extend(cause.lines(MAX_CAUSE_SITES));
    }
    lines
}

/// Other differing parts of a divergent step shown (the rest are in report.json).
const MAX_ALSO_SITES: usize = 6;

/// Sites of a cause shown after the first (the rest are in report.json).
const MAX_CAUSE_SITES: usize = 3;

/// `replay: CMD` for the group's first trial, naming the other seeds it also replays.
fn replay_line(out: &mut String, trials: &[&Trial], checks: &[&str], replay: &ReplayCommand<'_>) {
    let Some(first) = trials.first() else { return };
    if let Some(cmd) = replay(first, checks) {
        let _ = writeln!(out, "  replay: {cmd}");
        if trials.len() > 1 {
            let _ = writeln!(
                out,
                "  (for {}: the same command with that seed)",
                seed_list(&trials[1..])
            );
        }
    }
}

/// Every failure of one trial, as before grouping (`check -v`); a passing trial on one line.
fn trial_block(out: &mut String, t: &Trial, replay: &ReplayCommand<'_>) {
    if t.passed() {
        let _ = writeln!(out, "ok   {} seed {}", t.env, t.seed);
        return;
    }
    let _ = writeln!(out, "\nFAIL {} seed {}", t.env, t.seed);
    if let Some(e) = &t.error {
        for line in error_lines(e) {
            let _ = writeln!(out, "  {line}");
        }
    }
    if let Some(a) = t.audit.as_ref().filter(|a| !a.conforms) {
        for line in audit_lines(a) {
            let _ = writeln!(out, "  {line}");
        }
    }
    let failed: Vec<&CheckOutcome> = t
        .checks
        .iter()
        .filter(|c| !c.passed && c.applicable)
        .collect();
    for c in &failed {
        let mut lines = check_lines(c).into_iter();
        if let Some(first) = lines.next() {
            let _ = writeln!(out, "  {} check: {first}", c.check);
        }
        for line in lines {
            let _ = writeln!(out, "    {line}");
        }
    }
    let names: Vec<&str> = failed.iter().map(|c| c.check.as_str()).collect();
    if let Some(cmd) = (!names.is_empty()).then(|| replay(t, &names)).flatten() {
        let _ = writeln!(out, "  replay: {cmd}");
    }
}

/// A JSON value in words: scalars as written, containers by their size (report.json holds
/// them in full).
/// The changes in the order the terminal shows them: the first change of each top-level field,
/// then the rest, so three lines name three fields rather than three members of one.
fn first_change_of_each_field(changes: &[Value]) -> impl Iterator<Item = &Value> {
    let field = |c: &Value| {
        let p = c.get("pointer").and_then(Value::as_str).unwrap_or("");
        p.split('/').nth(1).unwrap_or("").to_string()
    };
    let mut seen = std::collections::BTreeSet::new();
    let (firsts, rest): (Vec<&Value>, Vec<&Value>) =
        changes.iter().partition(|c| seen.insert(field(c)));
    firsts.into_iter().chain(rest)
}

/// One change of a reset-contract diff: `changed P: B -> A`, or the one value of what was
/// added or removed (a field, an element, a set's member).
fn change_line(c: &Value) -> String {
    let kind = c.get("kind").and_then(Value::as_str).unwrap_or("changed");
    let pointer = c.get("pointer").and_then(Value::as_str).unwrap_or("");
    match (c.get("before"), c.get("after")) {
        (Some(b), Some(a)) => format!("{kind} {pointer}: {} -> {}", value_words(b), value_words(a)),
        (Some(v), None) | (None, Some(v)) => format!("{kind} {pointer}: {}", value_words(v)),
        (None, None) => format!("{kind} {pointer}"),
    }
}

fn cell(t: Tally) -> String {
    t.to_string()
}

fn short(hex: Option<&str>) -> String {
    hex.map_or_else(|| "-".to_string(), |h| h.chars().take(16).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_added_member_shows_one_value() {
        let c = serde_json::json!({"kind": "added member", "pointer": "/seen", "after": [0, 1]});
        assert_eq!(change_line(&c), "added member /seen: [0, 1]");
        let c = serde_json::json!({"kind": "changed", "pointer": "/t", "before": 0, "after": 10});
        assert_eq!(change_line(&c), "changed /t: 0 -> 10");
    }
}
