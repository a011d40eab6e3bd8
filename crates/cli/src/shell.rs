//! Commands printed for people to copy: every failure ends with the command to run next, so
//! arguments are quoted for a POSIX shell when they need it.

/// `text` as one shell word: bare when it is made of safe characters, else single-quoted.
pub fn quote(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_:./,=@+%".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Words joined into one command line, each quoted as needed.
pub fn join<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(quote("range:ransomware"), "range:ransomware");
        assert_eq!(
            quote("range:ransomware?log_latency=2&max_ticks=25"),
            "'range:ransomware?log_latency=2&max_ticks=25'"
        );
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(join(&["python", "-m", "a b"]), "python -m 'a b'");
    }
}
