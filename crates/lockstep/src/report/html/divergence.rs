//! A check's first divergence, and diff values, as tables in words (never JSON text).

use std::fmt::Write;

use serde_json::Value;

use super::esc;

/// The first divergence as a small table: step, agent, key, element, both values, the note.
pub(super) fn divergence_table(h: &mut String, d: &Value, left: &str, right: &str) {
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
pub(super) fn plain(v: &Value) -> String {
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
pub(super) fn value_cell(v: &Value) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
