//! Values in words, as people read them in a terminal line or a report sentence: compact
//! JSON with spaces, cut with its size when long. Shared by the terminal, the HTML report
//! and the causes' sentences, so a value reads the same everywhere.

use serde_json::Value;

/// A value as the terminal shows it: its compact JSON (`[[0, 1], [0, 2]]` says more than "a
/// list of 2 items"), cut after [`SHORT_VALUE`] characters with its size when longer.
pub fn value_words(v: &Value) -> String {
    match v {
        Value::Array(_) | Value::Object(_) => {
            let text = compact_spaced(v);
            if text.chars().count() <= SHORT_VALUE {
                return text;
            }
            let cut: String = text.chars().take(SHORT_VALUE).collect();
            match v {
                Value::Array(a) => format!("{cut}... ({} items)", a.len()),
                Value::Object(o) => format!("{cut}... ({} keys)", o.len()),
                _ => unreachable!("matched a container"),
            }
        }
        Value::String(s) if s.chars().count() > SHORT_VALUE => {
            let cut: String = s.chars().take(SHORT_VALUE - 3).collect();
            format!("{:?}...", cut)
        }
        other => other.to_string(),
    }
}

/// How much of a value a line of the terminal shows.
const SHORT_VALUE: usize = 60;

/// JSON with a space after each `,` and `:` outside strings, as people write it.
fn compact_spaced(v: &Value) -> String {
    let text = v.to_string();
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let (mut in_string, mut escaped) = (false, false);
    for ch in text.chars() {
        out.push(ch);
        if in_string {
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if ch == '"' {
            in_string = true;
        } else if ch == ',' || ch == ':' {
            out.push(' ');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_containers_are_shown_and_long_ones_described() {
        assert_eq!(value_words(&serde_json::json!({"a": 1})), "{\"a\": 1}");
        assert_eq!(
            value_words(&serde_json::json!([[0, 1], [0, 2]])),
            "[[0, 1], [0, 2]]"
        );
        assert_eq!(
            value_words(&serde_json::json!(["a,b: c"])),
            "[\"a,b: c\"]",
            "no space is added inside a string"
        );
        let long: Vec<u32> = (0..40).collect();
        let words = value_words(&serde_json::json!(long));
        assert!(words.starts_with("[0, 1, 2, "), "{words}");
        assert!(words.ends_with("... (40 items)"), "{words}");
        assert_eq!(value_words(&serde_json::json!(null)), "null");
        assert_eq!(value_words(&serde_json::json!("x")), "\"x\"");
    }
}
