//! Plain-text rendering of a check report for the terminal: a compact table, then every
//! failure explained. Stable when not a terminal (no colour, no widths from the terminal).

use std::fmt::Write;

use lockstep::report::{Report, Tally, Trial, CHECK_NAMES};

/// Gives the command that replays a trial's failed checks (named), when there is one.
pub type ReplayCommand<'a> = dyn Fn(&Trial, &[&str]) -> Option<String> + 'a;

/// The summary table and failure explanations.
pub fn summary_text(report: &Report, replay: &ReplayCommand<'_>) -> String {
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

    for t in report.trials.iter().filter(|t| !t.passed()) {
        let _ = writeln!(out, "\nFAIL {} seed {}", t.env, t.seed);
        if let Some(e) = &t.error {
            let _ = writeln!(out, "  error: {e}");
        }
        if let Some(a) = t.audit.as_ref().filter(|a| !a.conforms) {
            let _ = writeln!(
                out,
                "  reset contract: starting fingerprint {} -> {}",
                short(a.initial_fingerprint.as_deref()),
                short(a.repeat_fingerprint.as_deref())
            );
            if !a.different_fields.is_empty() {
                let _ = writeln!(out, "  different fields: {}", a.different_fields.join(", "));
            }
            for p in &a.missing {
                let _ = writeln!(out, "  missing field {p}");
            }
            for p in &a.unexpected {
                let _ = writeln!(out, "  unexpected field {p}");
            }
            for c in &a.changes {
                let get = |k: &str| c.get(k).cloned().unwrap_or(serde_json::Value::Null);
                let _ = writeln!(
                    out,
                    "    {} {}: {} -> {}",
                    get("kind").as_str().unwrap_or("changed"),
                    get("pointer").as_str().unwrap_or(""),
                    compact(&get("before")),
                    compact(&get("after"))
                );
            }
        }
        for c in t.checks.iter().filter(|c| !c.passed && c.applicable) {
            let _ = writeln!(out, "  {} check: {}", c.check, c.summary);
            if let Some(d) = &c.divergence {
                let _ = writeln!(out, "    {}", compact(d));
            }
        }
        // TigerBeetle's habit: every failure ends with the command that replays it.
        let failed: Vec<&str> = t
            .checks
            .iter()
            .filter(|c| !c.passed && c.applicable)
            .map(|c| c.check.as_str())
            .collect();
        if let Some(cmd) = (!failed.is_empty()).then(|| replay(t, &failed)).flatten() {
            let _ = writeln!(out, "  replay: {cmd}");
        }
    }
    if !report.goldens.is_empty() {
        let reproduced = report.goldens.iter().filter(|g| g.passed).count();
        let _ = writeln!(
            out,
            "goldens: {reproduced}/{} reproduced",
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

fn cell(t: Tally) -> String {
    t.to_string()
}

fn short(hex: Option<&str>) -> String {
    hex.map_or_else(|| "-".to_string(), |h| h.chars().take(16).collect())
}

/// One-line JSON, cut to keep the terminal readable (the report keeps everything).
fn compact(v: &serde_json::Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    if s.chars().count() > 160 {
        let cut: String = s.chars().take(157).collect();
        format!("{cut}...")
    } else {
        s
    }
}
