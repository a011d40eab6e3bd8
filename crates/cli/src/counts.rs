//! The command line's counts (steps, seeds, rollouts, jobs), parsed the same way in every
//! command: a bad value is one sentence naming what the number counts and its least value.
//! Negative numbers reach these parsers (`allow_negative_numbers`), so clap never answers
//! `--steps -1` with a hint to write `-- -1`.

/// `--steps`: at least 1 (a rollout of 0 steps checks nothing but the reset).
pub fn steps(text: &str) -> Result<u64, String> {
    at_least(
        text,
        1,
        "steps per rollout",
        " (0 would check nothing past the reset)",
    )
}

/// `--seed`: a whole number from 0 to 2^64 - 1.
pub fn seed(text: &str) -> Result<u64, String> {
    at_least(text, 0, "a seed", "")
}

/// `--rollouts`: at least 2 (the same-seed check compares rollouts).
pub fn rollouts(text: &str) -> Result<usize, String> {
    at_least(
        text,
        2,
        "rollouts of the same-seed check",
        " (it compares them)",
    )
    .map(to_usize)
}

/// `--jobs`: at least 1.
pub fn jobs(text: &str) -> Result<usize, String> {
    at_least(text, 1, "trials run at once", "").map(to_usize)
}

/// `--budget`: a duration such as `90s`, `2m`, `1h30m` or `2.5m` (units h, m, s, ms; a bare
/// number is seconds), more than zero.
pub fn duration(text: &str) -> Result<std::time::Duration, String> {
    let bad = || {
        format!("a budget must be a duration such as 90s, 2m or 1h30m (units h, m, s, ms), got {text:?}")
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" | "" => 1.0,
            "ms" => 0.001,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    if !(total > 0.0 && total.is_finite() && total < 1e9) {
        return Err(format!("a budget must be more than zero, got {text:?}"));
    }
    Ok(std::time::Duration::from_secs_f64(total))
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn at_least(text: &str, min: u64, what: &str, why: &str) -> Result<u64, String> {
    match text.trim().parse::<i128>() {
        Ok(n) if n >= i128::from(min) && n <= i128::from(u64::MAX) => Ok(n as u64),
        Ok(_) => Err(format!(
            "{what} must be a whole number from {min} to 2^64 - 1{why}"
        )),
        Err(_) => Err(format!("{what} must be a whole number, at least {min}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_durations() {
        let secs = |t: &str| duration(t).map(|d| d.as_secs_f64());
        assert_eq!(secs("2m"), Ok(120.0));
        assert_eq!(secs("90s"), Ok(90.0));
        assert_eq!(secs("1h30m"), Ok(5400.0));
        assert_eq!(secs("2.5m"), Ok(150.0));
        assert_eq!(secs("45"), Ok(45.0));
        assert_eq!(secs("500ms"), Ok(0.5));
        for bad in ["", "2x", "m", "-1m", "1..2s"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        assert_eq!(
            duration("0s").unwrap_err(),
            "a budget must be more than zero, got \"0s\""
        );
    }

    #[test]
    fn counts_below_their_least_value_are_one_sentence() {
        assert_eq!(steps("200"), Ok(200));
        let want = "steps per rollout must be a whole number from 1 to 2^64 - 1 (0 would check nothing past the reset)";
        assert_eq!(steps("0").unwrap_err(), want);
        assert_eq!(steps("-1").unwrap_err(), want);
        assert!(steps("ten")
            .unwrap_err()
            .contains("must be a whole number, at least 1"));
        assert_eq!(seed("0"), Ok(0));
        assert!(seed("-3")
            .unwrap_err()
            .starts_with("a seed must be a whole number from 0"));
        assert!(seed("18446744073709551616").is_err());
        assert!(rollouts("1").unwrap_err().contains("from 2"));
        assert!(jobs("0").unwrap_err().contains("from 1"));
    }
}
