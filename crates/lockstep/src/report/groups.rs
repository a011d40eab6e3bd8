//! Failures grouped across seeds, for the terminal and report.html alike: a fault usually
//! shows on every seed, and one block per (env, kind of failure) with the seeds listed reads
//! in seconds where one block per trial scrolled for pages.

use super::{Report, Trial, CHECK_NAMES};
use serde_json::Value;

/// What a group of failures is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind<'a> {
    /// An environment error stopped part of the trial.
    Error,
    /// The reset contract does not hold.
    ResetContract,
    /// A replay check failed (its name).
    Check(&'a str),
}

/// The trials of one env that fail in one way, in report order, split into variants: trials
/// that fail at the same place (values aside) share a variant.
#[derive(Debug, Clone)]
pub struct FailureGroup<'a> {
    pub env: &'a str,
    pub kind: FailureKind<'a>,
    pub trials: Vec<&'a Trial>,
    /// Each variant's trials, in order of first appearance; the first trial of each explains it.
    pub variants: Vec<Vec<&'a Trial>>,
}

impl FailureGroup<'_> {
    /// The failed check names to replay (none for an error or the reset contract).
    pub fn checks(&self) -> Vec<&str> {
        match self.kind {
            FailureKind::Check(name) => vec![name],
            _ => Vec::new(),
        }
    }
}

/// Every failure of the report, grouped: per env in `params.envs` order, errors first, then
/// the reset contract, then the checks in [`CHECK_NAMES`] order.
pub fn failure_groups(report: &Report) -> Vec<FailureGroup<'_>> {
    let mut groups = Vec::new();
    for env in &report.params.envs {
        let failing: Vec<&Trial> = report
            .trials
            .iter()
            .filter(|t| &t.env == env && !t.passed())
            .collect();
        let mut push = |kind: FailureKind<'static>, key: &dyn Fn(&Trial) -> Option<String>| {
            let trials: Vec<&Trial> = failing
                .iter()
                .copied()
                .filter(|t| key(t).is_some())
                .collect();
            if trials.is_empty() {
                return;
            }
            let mut variants: Vec<(String, Vec<&Trial>)> = Vec::new();
            for t in &trials {
                let k = key(t).unwrap_or_default();
                match variants.iter_mut().find(|(v, _)| *v == k) {
                    Some((_, ts)) => ts.push(t),
                    None => variants.push((k, vec![t])),
                }
            }
            groups.push(FailureGroup {
                env,
                kind,
                trials,
                variants: variants.into_iter().map(|(_, ts)| ts).collect(),
            });
        };
        // One error on every seed (another pid, another seed each time) is one variant.
        push(FailureKind::Error, &|t| {
            t.error.as_deref().map(super::env_error::signature)
        });
        push(FailureKind::ResetContract, &|t| {
            t.audit.as_ref().filter(|a| !a.conforms).map(|a| {
                format!(
                    "{:?} {:?} {:?}",
                    a.different_fields, a.missing, a.unexpected
                )
            })
        });
        for name in CHECK_NAMES {
            push(FailureKind::Check(name), &|t| {
                t.checks
                    .iter()
                    .find(|c| c.check == name && c.applicable && !c.passed)
                    .map(|c| match &c.divergence {
                        Some(d) => place(d),
                        None => c.summary.clone(),
                    })
            });
        }
    }
    groups
}

/// Where a check failed, values aside: the step and the site (kind, agent, key). Not the
/// detail nor the note: whether a re-run reproduced a race (and so could name the element) is
/// chance, not another failure.
fn place(d: &Value) -> String {
    let word = |p: &str| {
        d.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    format!(
        "{} {} {} {}",
        d.get("step").and_then(Value::as_u64).unwrap_or(0),
        word("/site/kind"),
        word("/site/agent"),
        word("/site/key"),
    )
}

/// `0-4`, `0, 1, 5, 7-9`: runs of consecutive seeds as `A-B`, at most twelve parts.
pub fn seeds_text(seeds: &[u64]) -> String {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &s in seeds {
        match runs.last_mut() {
            Some((_, hi)) if s == *hi + 1 => *hi = s,
            _ => runs.push((s, s)),
        }
    }
    let parts: Vec<String> = runs
        .iter()
        .map(|&(lo, hi)| match hi - lo {
            0 => lo.to_string(),
            1 => format!("{lo}, {hi}"),
            _ => format!("{lo}-{hi}"),
        })
        .collect();
    const MAX_PARTS: usize = 12;
    if parts.len() > MAX_PARTS {
        format!(
            "{} and {} more",
            parts[..MAX_PARTS].join(", "),
            parts.len() - MAX_PARTS
        )
    } else {
        parts.join(", ")
    }
}

/// `seed 3` or `seeds 0-4`.
pub fn seed_list(trials: &[&Trial]) -> String {
    let seeds: Vec<u64> = trials.iter().map(|t| t.seed).collect();
    match seeds.as_slice() {
        [one] => format!("seed {one}"),
        _ => format!("seeds {}", seeds_text(&seeds)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_runs_are_compressed() {
        assert_eq!(seeds_text(&[0, 1, 2, 3, 4]), "0-4");
        assert_eq!(seeds_text(&[0, 1, 5, 7, 8, 9]), "0, 1, 5, 7-9");
        let many: Vec<u64> = (0..40).map(|i| i * 2).collect();
        assert!(seeds_text(&many).ends_with("and 28 more"));
    }

    #[test]
    fn one_group_per_env_and_check_with_variants_by_place() {
        use super::super::tests::{sample_params, trial};
        let mut trials = vec![
            trial("a-env", 1, false, false),
            trial("a-env", 3, false, false),
            trial("a-env", 5, true, true),
        ];
        trials[1].checks[0].summary = "differ at step 9".into();
        let r = Report::assemble(sample_params(), None, trials, vec![]);
        let groups = failure_groups(&r);
        let kinds: Vec<FailureKind> = groups.iter().map(|g| g.kind).collect();
        assert_eq!(
            kinds,
            [FailureKind::ResetContract, FailureKind::Check("same")]
        );
        assert_eq!(seed_list(&groups[0].trials), "seeds 1, 3");
        assert_eq!(groups[0].variants.len(), 1, "the same field differs");
        assert_eq!(
            groups[1].variants.len(),
            2,
            "no divergence: the summaries differ"
        );
    }
}
