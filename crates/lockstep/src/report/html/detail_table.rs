//! The full detail of a failure as nested tables: an object is a table of its keys, a list of
//! containers a table of its items, a list of scalars one line; never JSON text.
//!
//! A page must stay openable when a state is large (a range state is ~140 KB): every table
//! draws at most [`CELLS_MAX`] values in all and [`ROWS_MAX`] rows per level, and says how
//! many it left out (report.json has everything).

use std::fmt::Write;

use serde_json::Value;

use super::divergence::plain;
use super::esc;

/// Rows drawn per object or list; the rest are counted.
const ROWS_MAX: usize = 40;
/// Scalars of one list drawn on its line.
const LIST_ITEMS_MAX: usize = 32;
/// Values drawn per table, all levels together.
const CELLS_MAX: usize = 1500;

/// `v` as a table (`class="detail"`); keys in `skip` are left out at the top level.
pub(super) fn detail_table(v: &Value, skip: &[&str]) -> String {
    let mut budget = CELLS_MAX;
    match v {
        Value::Object(o) => {
            let kept: Vec<(&String, &Value)> = o
                .iter()
                .filter(|(k, _)| !skip.contains(&k.as_str()))
                .collect();
            rows_table(&kept, "detail", &mut budget)
        }
        other => format!(
            "<table class=\"detail\"><tr><td>{}</td></tr></table>",
            cell(other, &mut budget)
        ),
    }
}

/// The top-level fields of two states side by side, one row per field, the fields in `marked`
/// marked (`class="differs"`): the states before and after a reset, the fields that differ
/// from a fresh instance's marked.
pub(super) fn states_table(
    left: &Value,
    right: &Value,
    left_label: &str,
    right_label: &str,
    marked: &[String],
) -> String {
    let mut budget = CELLS_MAX;
    let empty = serde_json::Map::new();
    let (l, r) = (
        left.as_object().unwrap_or(&empty),
        right.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = l.keys().chain(r.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut s = format!(
        "<table class=\"states\"><thead><tr><th>field</th><th>{}</th><th>{}</th></tr></thead><tbody>",
        esc(left_label),
        esc(right_label)
    );
    for k in &keys {
        let (a, b) = (l.get(*k), r.get(*k));
        let side = |x: Option<&Value>, budget: &mut usize| {
            x.map_or_else(
                || "<span class=\"na\">absent</span>".to_string(),
                |v| cell(v, budget),
            )
        };
        let _ = write!(
            s,
            "<tr{}><th>{}</th><td>{}</td><td>{}</td></tr>",
            if marked.contains(*k) {
                " class=\"differs\""
            } else {
                ""
            },
            esc(k),
            side(a, &mut budget),
            side(b, &mut budget)
        );
    }
    s.push_str("</tbody></table>");
    s
}

fn rows_table(rows: &[(&String, &Value)], class: &str, budget: &mut usize) -> String {
    let mut s = format!("<table class=\"{class}\">");
    for (i, (k, x)) in rows.iter().enumerate() {
        if i == ROWS_MAX || *budget == 0 {
            let _ = write!(
                s,
                "<tr><td colspan=\"2\" class=\"na\">{} more in report.json</td></tr>",
                rows.len() - i
            );
            break;
        }
        let _ = write!(
            s,
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(k),
            cell(x, budget)
        );
    }
    s.push_str("</table>");
    s
}

fn cell(v: &Value, budget: &mut usize) -> String {
    *budget = budget.saturating_sub(1);
    match v {
        Value::Object(o) if o.is_empty() => "<span class=\"na\">no keys</span>".into(),
        Value::Array(a) if a.is_empty() => "<span class=\"na\">no items</span>".into(),
        _ if *budget == 0 => format!("<span class=\"na\">{}</span>", esc(&plain(v))),
        Value::Object(o) => {
            let rows: Vec<(&String, &Value)> = o.iter().collect();
            rows_table(&rows, "nested", budget)
        }
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let shown: Vec<String> = a.iter().take(LIST_ITEMS_MAX).map(scalar).collect();
            let more = a.len().saturating_sub(LIST_ITEMS_MAX);
            *budget = budget.saturating_sub(shown.len() / 8);
            format!(
                "<code>{}</code>{}",
                esc(&shown.join(", ")),
                if more > 0 {
                    format!(" <span class=\"na\">and {more} more</span>")
                } else {
                    String::new()
                }
            )
        }
        Value::Array(a) => {
            let labels: Vec<String> = (0..a.len()).map(|i| i.to_string()).collect();
            let rows: Vec<(&String, &Value)> = labels.iter().zip(a.iter()).collect();
            rows_table(&rows, "nested", budget)
        }
        other => format!("<code>{}</code>", esc(&scalar(other))),
    }
}

/// A scalar as written; a string quoted, so that `"1"` and `1` read differently.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => plain(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_values_are_nested_tables_never_json() {
        let v = serde_json::json!({
            "diff": {"changes": [{"pointer": "/cache", "before": null, "after": 1}]},
            "first": {"steps": 3, "returns": {"agent": 1.5}},
            "contaminated": {"cache": 1},
            "list": [1, 2, 3],
            "empty": {}
        });
        let t = detail_table(&v, &["contaminated"]);
        assert!(t.starts_with("<table class=\"detail\">"), "{t}");
        for part in [
            "<th>pointer</th><td><code>&quot;/cache&quot;</code>",
            "<th>agent</th><td><code>1.5</code>",
            "<th>list</th><td><code>1, 2, 3</code>",
            "<th>empty</th><td><span class=\"na\">no keys</span>",
        ] {
            assert!(t.contains(part), "{part}: {t}");
        }
        assert!(!t.contains("contaminated"), "skipped key");
        assert!(!t.contains('{') && !t.contains('}'), "no JSON text: {t}");
    }

    #[test]
    fn big_values_are_cut_and_say_so() {
        let big: serde_json::Map<String, Value> = (0..5000)
            .map(|i| {
                (
                    format!("k{i:05}"),
                    serde_json::json!({"a": [i, i], "b": {"c": i}}),
                )
            })
            .collect();
        let t = detail_table(&Value::Object(big), &[]);
        assert!(
            t.contains("4960 more in report.json"),
            "rows per level are capped"
        );
        assert!(t.len() < 20_000, "{} bytes", t.len());
        let long: Vec<u32> = (0..100).collect();
        let t = detail_table(&serde_json::json!({ "xs": long }), &[]);
        assert!(t.contains("and 68 more"), "{t}");
    }

    #[test]
    fn states_side_by_side_mark_the_fields_that_differ() {
        let before = serde_json::json!({"cache": 1, "seed": 3});
        let after = serde_json::json!({"cache": null, "seed": 3, "extra": true});
        let t = states_table(
            &before,
            &after,
            "before the reset",
            "after reset(seed)",
            &["cache".to_string()],
        );
        assert!(
            t.contains(
                "<tr class=\"differs\"><th>cache</th><td><code>1</code></td><td><code>null</code>"
            ),
            "{t}"
        );
        assert!(t.contains("<tr><th>seed</th>"), "{t}");
        assert!(
            t.contains("<th>extra</th><td><span class=\"na\">absent</span>"),
            "{t}"
        );
    }
}
