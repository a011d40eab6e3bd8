//! A check's first divergence, and diff values, as tables in words (never JSON text).

use std::fmt::Write;

use serde_json::Value;

use super::esc;
use crate::check::{line_diff, Detail, Divergence};

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
        Some("text") => {
            rows.push(("text line".into(), text("/detail/line").unwrap_or_default()));
            (text("/detail/left"), text("/detail/right"))
        }
        Some("image") => {
            let bbox = |i: usize| text(&format!("/detail/bbox/{i}")).unwrap_or_default();
            rows.push((
                "image".into(),
                format!(
                    "{} of {} pixels differ, rows {}..{}, columns {}..{}",
                    text("/detail/differing_pixels").unwrap_or_default(),
                    text("/detail/pixels").unwrap_or_default(),
                    bbox(0),
                    bbox(2),
                    bbox(1),
                    bbox(3)
                ),
            ));
            rows.push((
                "element".into(),
                format!(
                    "{} {} (uint8)",
                    text("/detail/index").unwrap_or_default(),
                    text("/detail/multi_index").unwrap_or_default()
                ),
            ));
            (text("/detail/left"), text("/detail/right"))
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
    if let Ok(d) = serde_json::from_value::<Divergence>(d.clone()) {
        pictures(h, &d, left, right);
    }
}

/// What a table row cannot show: the line diff of a text, both frames and the mask of an
/// image (the site's and the other differing parts'), the list of the other parts that differ.
fn pictures(h: &mut String, d: &Divergence, left: &str, right: &str) {
    if let Some(detail) = &d.detail {
        detail_picture(h, detail, left, right);
    }
    if d.also.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<table class=\"divergence\"><caption>{} more part(s) differ at step {}</caption><tbody>",
        d.also.len() as u64 + d.also_more,
        d.step
    );
    for other in &d.also {
        let what = other.site.describe(left, right);
        let how = other
            .detail
            .as_ref()
            .map(|x| x.describe(left, right))
            .unwrap_or_default();
        let _ = write!(
            h,
            "<tr><th><code>{}</code></th><td><code>{}</code></td></tr>",
            esc(&what),
            esc(&how)
        );
    }
    if d.also_more > 0 {
        let _ = write!(
            h,
            "<tr><td colspan=\"2\" class=\"na\">{} more in report.json</td></tr>",
            d.also_more
        );
    }
    h.push_str("</tbody></table>\n");
    for other in &d.also {
        if let Some(detail) = &other.detail {
            let before = h.len();
            detail_picture(h, detail, left, right);
            if h.len() > before {
                let caption = other.site.describe(left, right);
                h.insert_str(before, &format!("<p class=\"na\">{}:</p>", esc(&caption)));
            }
        }
    }
}

fn detail_picture(h: &mut String, detail: &Detail, left: &str, right: &str) {
    match detail {
        Detail::Text {
            diff, diff_more, ..
        } => line_diff_pre(h, diff, *diff_more, left, right),
        Detail::Image {
            left_png: Some(a),
            right_png: Some(b),
            mask_png: Some(m),
            ..
        } => {
            h.push_str("<div class=\"frames\">");
            for (src, caption) in [
                (a, left.to_string()),
                (b, right.to_string()),
                (m, "differing pixels (white)".to_string()),
            ] {
                let _ = write!(
                    h,
                    "<figure><img alt=\"{0}\" src=\"data:image/png;base64,{1}\"><figcaption>{0}</figcaption></figure>",
                    esc(&caption),
                    src
                );
            }
            h.push_str("</div>\n");
        }
        Detail::Info { changes } => {
            // A changed string of several lines (a page's text in an info) as a line diff.
            let string = |v: &Option<String>| {
                v.as_deref()
                    .and_then(|t| serde_json::from_str::<Value>(t).ok())
                    .and_then(|v| v.as_str().map(str::to_string))
            };
            for c in changes.iter().take(1) {
                if let (Some(a), Some(b)) = (string(&c.left), string(&c.right)) {
                    if a.contains('\n') || b.contains('\n') {
                        if let Some(d) = line_diff(&a, &b) {
                            line_diff_pre(h, &d.lines, d.more, left, right);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// A unified line diff, deletions and insertions marked.
fn line_diff_pre(h: &mut String, lines: &[String], more: u64, left: &str, right: &str) {
    let _ = write!(
        h,
        "<p class=\"na\">line diff: <span class=\"del\">- {}</span>, <span class=\"ins\">+ {}</span></p><pre class=\"line-diff\">",
        esc(left),
        esc(right)
    );
    for line in lines {
        let class = match line.chars().next() {
            Some('-') => "del",
            Some('+') => "ins",
            Some('@') => "hunk",
            _ => "ctx",
        };
        let _ = write!(h, "<span class=\"{class}\">{}</span>", esc(line));
    }
    if more > 0 {
        let _ = write!(
            h,
            "<span class=\"hunk\">({more} more diff lines in report.json)</span>"
        );
    }
    h.push_str("</pre>\n");
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
