//! Line diffs of text values: an accessibility tree or a DOM that differs in one node reads as
//! the lines that changed, not as two JSON strings of 40 KB or "element 5123 (uint8): 49, 50".
//!
//! The diff is `similar`'s Myers diff of lines, in unified form with [`CONTEXT`] lines of context
//! around each change; it is kept to [`DIFF_LINES_MAX`] lines and the rest counted, so a report
//! stays small when a whole page differs.

use similar::{ChangeTag, TextDiff};

/// Unchanged lines shown around a change.
pub const CONTEXT: usize = 2;
/// Lines of a diff kept in the report; the rest are counted in [`LineDiff::more`].
pub const DIFF_LINES_MAX: usize = 60;

/// The line diff of two texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineDiff {
    /// First differing line (0-based).
    pub first_line: u64,
    /// That line on each side (`None` when a side has fewer lines).
    pub left: Option<String>,
    pub right: Option<String>,
    /// Unified diff lines: `@@ -L,N +L,N @@` hunk headers, then `-`, `+` or ` ` and the line.
    pub lines: Vec<String>,
    /// Diff lines left out after [`DIFF_LINES_MAX`].
    pub more: u64,
}

/// `a` and `b` one JSON value per line when both are JSON arrays or objects (a Sequence of
/// chat messages, an `AnyDict` DOM, which travel as canonical JSON on one line), else as they
/// are: a line diff of one 40 KB line says nothing.
pub fn json_laid_out<'t>(
    a: &'t str,
    b: &'t str,
) -> (std::borrow::Cow<'t, str>, std::borrow::Cow<'t, str>) {
    use std::borrow::Cow;
    let container = |t: &str| {
        let t = t.trim_start();
        (t.starts_with('[') || t.starts_with('{'))
            .then(|| serde_json::from_str::<serde_json::Value>(t).ok())
            .flatten()
    };
    match (container(a), container(b)) {
        (Some(x), Some(y)) => match (
            serde_json::to_string_pretty(&x),
            serde_json::to_string_pretty(&y),
        ) {
            (Ok(x), Ok(y)) if x != y => (Cow::Owned(x), Cow::Owned(y)),
            _ => (Cow::Borrowed(a), Cow::Borrowed(b)),
        },
        _ => (Cow::Borrowed(a), Cow::Borrowed(b)),
    }
}

/// The line diff of `a` and `b`, `None` when they are equal.
pub fn line_diff(a: &str, b: &str) -> Option<LineDiff> {
    if a == b {
        return None;
    }
    let diff = TextDiff::from_lines(a, b);
    let mut lines = Vec::new();
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (old, new) = (first.old_range().start, first.new_range().start);
        let (old_end, new_end) = (last.old_range().end, last.new_range().end);
        lines.push(format!(
            "@@ -{},{} +{},{} @@",
            old + 1,
            old_end - old,
            new + 1,
            new_end - new
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let text = change.value();
                let text = text.strip_suffix('\n').unwrap_or(text);
                lines.push(format!("{sign}{}", text.strip_suffix('\r').unwrap_or(text)));
            }
        }
    }
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    // Texts that differ only in a final newline differ after their last line.
    let first = (0..la.len().max(lb.len()))
        .find(|&i| la.get(i) != lb.get(i))
        .unwrap_or(la.len().min(lb.len()));
    let more = lines.len().saturating_sub(DIFF_LINES_MAX) as u64;
    lines.truncate(DIFF_LINES_MAX);
    Some(LineDiff {
        first_line: first as u64,
        left: la.get(first).map(|s| s.to_string()),
        right: lb.get(first).map(|s| s.to_string()),
        lines,
        more,
    })
}

/// Whether `bytes` read as text a person would want diffed by line: UTF-8, with no control
/// characters but tab, newline and carriage return. An observation of this form is BrowserGym's
/// axtree, a DOM, a mission or a chat message (the adapter sends text as its UTF-8 bytes).
pub fn as_text(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    let plain = text
        .chars()
        .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'));
    (plain && !text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_on_one_line_is_laid_out_one_value_a_line() {
        let a = r#"[{"message":"click button b4","role":"assistant"},{"message":"click('b0')","role":"user"}]"#;
        let b = r#"[{"message":"click button b4","role":"assistant"}]"#;
        let (x, y) = json_laid_out(a, b);
        let d = line_diff(&x, &y).unwrap();
        assert!(
            d.lines
                .iter()
                .any(|l| l == r#"-    "message": "click('b0')","#),
            "{:?}",
            d.lines
        );
        // Text that is not JSON, or only on one side, stays as it is.
        assert_eq!(json_laid_out("a\nb", "[1]").0, "a\nb");
    }

    #[test]
    fn the_changed_line_with_context() {
        let a = "a\nb\nc\nd\ne\nf\ng\n";
        let b = "a\nb\nc\nD\ne\nf\ng\n";
        let d = line_diff(a, b).unwrap();
        assert_eq!(d.first_line, 3);
        assert_eq!(
            (d.left.as_deref(), d.right.as_deref()),
            (Some("d"), Some("D"))
        );
        assert_eq!(
            d.lines,
            ["@@ -2,5 +2,5 @@", " b", " c", "-d", "+D", " e", " f"]
        );
        assert_eq!(d.more, 0);
        assert_eq!(line_diff(a, a), None);
    }

    #[test]
    fn a_long_diff_is_counted_past_the_limit() {
        let a: String = (0..200).map(|i| format!("{i}\n")).collect();
        let b: String = (0..200).map(|i| format!("x{i}\n")).collect();
        let d = line_diff(&a, &b).unwrap();
        assert_eq!(d.lines.len(), DIFF_LINES_MAX);
        assert_eq!(d.more, 401 - DIFF_LINES_MAX as u64);
    }

    #[test]
    fn a_missing_final_line_is_named() {
        let d = line_diff("a\nb", "a").unwrap();
        assert_eq!((d.first_line, d.right), (1, None));
    }

    #[test]
    fn text_is_utf8_without_control_characters() {
        assert_eq!(
            as_text("RootWebArea 'Click'\n\tbutton".as_bytes()),
            Some("RootWebArea 'Click'\n\tbutton")
        );
        assert_eq!(as_text("é".as_bytes()), Some("é"));
        assert_eq!(as_text(&[0, 1, 2]), None);
        assert_eq!(as_text(&[0xff, 0xfe]), None);
        assert_eq!(as_text(b""), None);
    }
}
