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
