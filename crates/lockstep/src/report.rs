//! The versioned JSON report of `lockstep check`.
//!
//! A report is a pure function of the run's parameters and the results of its trials: it holds
//! no timings, host names or dates, so `--jobs 4` writes the same bytes as `--jobs 1`, and
//! shard reports merged with [`merge`] give the bytes a single run would have written. Both
//! paths go through [`Report::assemble`], which orders trials and recomputes every summary.
//!
//! The schema is documented in docs/report.md; [`SCHEMA`] names its version. Conformity (the
//! starting state matches its contract fingerprint) and behaviour (the task outcome, the replay
//! checks) are separate fields everywhere, never merged into one verdict.

mod about;
pub mod env_error;
mod groups;
mod html;
mod merge;

pub use about::{
    ContractInfo, EnvAbout, EnvParams, EnvRecord, EpisodeGroup, ExternalCommand, LayerInfo,
};
pub use groups::{failure_groups, seed_list, seeds_text, FailureGroup, FailureKind};
pub use html::{render_html, render_html_with, ReplayCommand};
pub use merge::merge;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Schema id written into every report. A change to the meaning of a field is a new version.
pub const SCHEMA: &str = "lockstep-report/3";

/// The replay checks, in report order.
pub const CHECK_NAMES: [&str; 8] = [
    "same",
    "other",
    "interleaved",
    "process",
    "parallel",
    "continuation",
    "leftover",
    "vector",
];

/// What was asked for: the same for every shard of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunParams {
    /// Env ids in the order given.
    pub envs: Vec<String>,
    /// Every seed of the run (all shards together), in order.
    pub seeds: Vec<u64>,
    /// Steps per rollout.
    pub steps: u64,
    /// Replay checks run on each (env, seed).
    pub checks: Vec<String>,
    /// Golden files, in the order given.
    pub goldens: Vec<String>,
    /// `--rollouts` as given (`null`: the default for `steps`).
    pub rollouts: Option<usize>,
    /// How each env was run, in `envs` order: what its replay command needs.
    pub env_params: Vec<EnvParams>,
    /// `--budget`: what it measured and cut (`seeds`, `steps` and `rollouts` above are what
    /// ran); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::BudgetRecord>,
    /// Fields left out of every comparison (`--ignore` and a contract's `[compare] ignore`,
    /// [`crate::ignore`]); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// `--timings`: each check records the step times of the runs it compared (`step_ms`);
    /// absent when not asked, so that two runs of one check write the same bytes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timings: bool,
}

impl RunParams {
    /// How `env` was run; a built-in, not seedless, when the report does not say.
    pub fn env_params_of(&self, env: &str) -> EnvParams {
        self.env_params
            .iter()
            .find(|e| e.env == env)
            .cloned()
            .unwrap_or_else(|| EnvParams {
                env: env.to_string(),
                seedless: false,
                command: None,
            })
    }
}

/// Which part of the run a shard report holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 1-based.
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether the item at `position` (0-based, in run order) belongs to this shard.
    pub fn owns(&self, position: usize) -> bool {
        position % self.count as usize == (self.index - 1) as usize
    }

    /// Parses `I/N` with `1 <= I <= N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("shard {text:?} is not of the form I/N"))?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|_| format!("shard index {i:?} is not a number"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("shard count {n:?} is not a number"))?;
        let shard = Shard { index, count };
        shard
            .validate()
            .map_err(|_| format!("shard {text:?} needs 1 <= I <= N"))?;
        Ok(shard)
    }

    /// Checks `1 <= index <= count`: the rule of [`Shard::parse`], for a shard read from a
    /// report.json, which serde accepts with any numbers.
    pub fn validate(&self) -> Result<(), String> {
        if self.count == 0 || self.index == 0 || self.index > self.count {
            return Err(format!(
                "shard {}/{} needs 1 <= I <= N",
                self.index, self.count
            ));
        }
        Ok(())
    }
}

/// The reset-contract audit of one (env, seed): conformity and behaviour kept apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// The starting state after `reset(seed)` on a fresh instance and after a played episode
    /// and `reset(seed)` again fingerprint the same, and both conform to the contract.
    pub conforms: bool,
    pub initial_fingerprint: Option<String>,
    pub repeat_fingerprint: Option<String>,
    /// Top-level fields that differ, in contract order.
    pub different_fields: Vec<String>,
    /// Field-level changes: `{pointer, kind, before, after}`.
    pub changes: Vec<serde_json::Value>,
    /// Contract fields missing from / unexpected in the state, as JSON Pointers.
    pub missing: Vec<String>,
    pub unexpected: Vec<String>,
    /// Task outcome of the repeat episode, when the env defines success.
    pub success: Option<bool>,
    /// Everything else the audit recorded (contaminated state, state after reset...).
    pub detail: serde_json::Value,
    /// What the env's process touched outside itself during the audit (files, databases,
    /// connections), when the env records it (docs/contract.md, "Effects").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<crate::cause::Effect>,
    /// One line for each effect that leaves state behind where no layer of the contract looks:
    /// a warning, whatever the verdicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Per-step digests of two runs, for the divergence picture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    pub left_label: String,
    pub right_label: String,
    /// Hex step digests.
    pub left: Vec<String>,
    pub right: Vec<String>,
    pub first_divergent_step: Option<u64>,
}

/// One replay check on one (env, seed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    /// One of [`CHECK_NAMES`].
    pub check: String,
    /// False when the check does not apply to the env (then `passed` is false too, and the
    /// tally counts it under `not_applicable`, never as passed).
    pub applicable: bool,
    pub passed: bool,
    /// One line for people.
    pub summary: String,
    /// First divergence (step, agent, key, element, both values), when there is one.
    pub divergence: Option<serde_json::Value>,
    pub timeline: Option<Timeline>,
    /// For a failure of a Python env: the line of the env's code that read a nondeterministic
    /// source, found by re-running the scenario with the source tracer on (docs/replay.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<crate::cause::Cause>,
    /// For a failure that looks like timing (a divergence that moves from rollout to rollout,
    /// or a divergent step far slower than the env's usual step): why, with the figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<crate::check::TimingHint>,
    /// With `--timings`: the wall time of the reset and of each step of the runs compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_ms: Option<StepTimes>,
}

/// The wall time of the reset (`[0]`) and of each step of a check's two runs, in milliseconds
/// to the microsecond; `right` is empty for a pass (its runs matched the reference).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTimes {
    pub left: Vec<f64>,
    pub right: Vec<f64>,
}

impl StepTimes {
    pub fn of((left, right): &(Vec<std::time::Duration>, Vec<std::time::Duration>)) -> StepTimes {
        let ms = |ts: &[std::time::Duration]| {
            crate::trace::micros(ts)
                .into_iter()
                .map(|us| us as f64 / 1000.0)
                .collect()
        };
        StepTimes {
            left: ms(left),
            right: ms(right),
        }
    }
}

/// Everything checked for one (env, seed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub env: String,
    pub seed: u64,
    /// `None` when the audit could not run (see `error`).
    pub audit: Option<AuditRecord>,
    pub checks: Vec<CheckOutcome>,
    /// An environment error that stopped this trial; the results gathered before it are kept.
    pub error: Option<String>,
    /// What the env said about itself, when it differs from its env's record in
    /// [`Report::envs`] (which holds it once; see [`about`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<EnvAbout>,
    /// The same-seed check's rollouts grouped by how they ended (length, returns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub episodes: Vec<EpisodeGroup>,
}

impl Trial {
    /// A trial that did not run, with the reason.
    pub fn errored(env: &str, seed: u64, error: String) -> Trial {
        Trial {
            env: env.to_string(),
            seed,
            audit: None,
            checks: Vec::new(),
            error: Some(error),
            about: None,
            episodes: Vec::new(),
        }
    }

    pub fn passed(&self) -> bool {
        self.error.is_none()
            && self.audit.as_ref().is_some_and(|a| a.conforms)
            && self.checks.iter().all(|c| c.passed || !c.applicable)
    }
}

/// One golden file verified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldenOutcome {
    pub file: String,
    pub env: Option<String>,
    pub seed: Option<u64>,
    pub passed: bool,
    pub summary: String,
    pub divergence: Option<serde_json::Value>,
}

/// Counts `passed / total` of one column; outcomes that do not apply are counted apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tally {
    pub passed: u64,
    /// Outcomes that apply.
    pub total: u64,
    /// Outcomes that do not apply (neither passed nor failed).
    pub not_applicable: u64,
}

impl Tally {
    fn add(&mut self, passed: bool) {
        self.total += 1;
        self.passed += u64::from(passed);
    }

    fn add_outcome(&mut self, applicable: bool, passed: bool) {
        if applicable {
            self.add(passed);
        } else {
            self.not_applicable += 1;
        }
    }

    pub fn all_passed(&self) -> bool {
        self.passed == self.total
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.total, self.not_applicable) {
            (0, 0) => f.write_str("-"),
            (0, _) => f.write_str("n/a"),
            (_, 0) => write!(f, "{}/{}", self.passed, self.total),
            (_, na) => write!(f, "{}/{} ({na} n/a)", self.passed, self.total),
        }
    }
}

/// One row of the summary table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvSummary {
    pub env: String,
    pub seeds: u64,
    /// Starting states that matched their fingerprint and contract.
    pub conformity: Tally,
    /// Repeat episodes that succeeded, among trials whose env defines success.
    pub success: Tally,
    /// Check name -> tally, in [`CHECK_NAMES`] order when serialised (BTreeMap is sorted, so
    /// the order is alphabetical: stable either way).
    pub checks: BTreeMap<String, Tally>,
    pub goldens: Tally,
    pub errors: u64,
    pub passed: bool,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub lockstep_version: String,
    pub params: RunParams,
    /// Present in a shard report, absent in a full (or merged) one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Everything passed: conformity, every check, every golden, no errors.
    pub passed: bool,
    pub summary: Vec<EnvSummary>,
    /// One per env, in `params.envs` order: what it said about itself.
    pub envs: Vec<EnvRecord>,
    pub trials: Vec<Trial>,
    pub goldens: Vec<GoldenOutcome>,
}

/// Why reports could not be read or merged.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The cause is in the message, not in `source()`: an error chain printer (anyhow's
    /// `{:#}`) would print it twice.
    #[error("{what}: not a lockstep report: {message}")]
    Parse { what: String, message: String },
    #[error("{what}: schema {found:?} is not {SCHEMA:?}")]
    Schema { what: String, found: String },
    #[error("{what}: {message}")]
    Mismatch { what: String, message: String },
}

/// One warning about an effect (see [`crate::cause::effect_warnings`]) and the seeds whose
/// trials gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectWarning<'a> {
    pub env: &'a str,
    pub text: &'a str,
    pub seeds: Vec<u64>,
}

impl EffectWarning<'_> {
    /// `seed 3`, `seeds 0-4`.
    pub fn seed_words(&self) -> String {
        match self.seeds.as_slice() {
            [one] => format!("seed {one}"),
            seeds => format!("seeds {}", groups::seeds_text(seeds)),
        }
    }
}

impl Report {
    /// Every effect warning of the run, once per env and text, in trial order.
    pub fn effect_warnings(&self) -> Vec<EffectWarning<'_>> {
        let mut out: Vec<EffectWarning<'_>> = Vec::new();
        for t in &self.trials {
            for text in t.audit.iter().flat_map(|a| &a.warnings) {
                match out.iter_mut().find(|w| w.env == t.env && w.text == text) {
                    Some(w) => w.seeds.push(t.seed),
                    None => out.push(EffectWarning {
                        env: &t.env,
                        text,
                        seeds: vec![t.seed],
                    }),
                }
            }
        }
        out
    }

    /// Builds a report from results in any order. Trials are ordered by env (as in
    /// `params.envs`) then seed (as in `params.seeds`), goldens as in `params.goldens`, and
    /// every summary is recomputed, so the bytes do not depend on how the work was scheduled.
    pub fn assemble(
        params: RunParams,
        shard: Option<Shard>,
        mut trials: Vec<Trial>,
        mut goldens: Vec<GoldenOutcome>,
    ) -> Report {
        // Positions are looked up in maps built once (the first occurrence wins, as a linear
        // search would find it) and each trial's key computed once: 50,000 seeds sort in
        // O(n log n), not in a quadratic number of list scans.
        let env_pos = first_positions(params.envs.iter().map(String::as_str));
        let seed_pos = first_positions(params.seeds.iter().copied());
        trials.sort_by_cached_key(|t| {
            (
                env_pos.get(t.env.as_str()).copied().unwrap_or(usize::MAX),
                seed_pos.get(&t.seed).copied().unwrap_or(usize::MAX),
                t.env.clone(),
                t.seed,
            )
        });
        let golden_pos = first_positions(params.goldens.iter().map(String::as_str));
        goldens.sort_by_cached_key(|g| {
            (
                golden_pos
                    .get(g.file.as_str())
                    .copied()
                    .unwrap_or(usize::MAX),
                g.file.clone(),
            )
        });

        // Each env's trials and goldens, grouped once in report order.
        let mut trials_of: BTreeMap<&str, Vec<&Trial>> = BTreeMap::new();
        for t in &trials {
            trials_of.entry(t.env.as_str()).or_default().push(t);
        }
        let mut goldens_of: BTreeMap<&str, Vec<&GoldenOutcome>> = BTreeMap::new();
        for g in &goldens {
            if let Some(env) = g.env.as_deref() {
                goldens_of.entry(env).or_default().push(g);
            }
        }
        let summary: Vec<EnvSummary> = params
            .envs
            .iter()
            .map(|env| {
                let mine = trials_of.get(env.as_str()).map_or(&[][..], Vec::as_slice);
                let golden = goldens_of.get(env.as_str()).map_or(&[][..], Vec::as_slice);
                summarise(env, &params, mine, golden)
            })
            .collect();
        let passed = summary.iter().all(|s| s.passed)
            && goldens.iter().all(|g| g.passed)
            && trials.iter().all(|t| t.passed());
        let envs = about::hoist(&params.envs, &mut trials);
        Report {
            schema: SCHEMA.to_string(),
            lockstep_version: env!("CARGO_PKG_VERSION").to_string(),
            params,
            shard,
            passed,
            summary,
            envs,
            trials,
            goldens,
        }
    }

    /// The report as pretty JSON with a final newline: the bytes of report.json.
    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a report always serialises");
        bytes.push(b'\n');
        bytes
    }

    /// Reads report.json; `what` names the source in errors.
    pub fn from_json(bytes: &[u8], what: &str) -> Result<Report, ReportError> {
        let report: Report = serde_json::from_slice(bytes).map_err(|e| ReportError::Parse {
            what: what.to_string(),
            message: e.to_string(),
        })?;
        if report.schema != SCHEMA {
            return Err(ReportError::Schema {
                what: what.to_string(),
                found: report.schema,
            });
        }
        Ok(report)
    }
}

/// The first position of every item, as `Iterator::position` would find it.
fn first_positions<K: Ord>(items: impl Iterator<Item = K>) -> BTreeMap<K, usize> {
    let mut map = BTreeMap::new();
    for (i, k) in items.enumerate() {
        map.entry(k).or_insert(i);
    }
    map
}

/// The summary row of `env` from its own trials and goldens.
fn summarise(
    env: &str,
    params: &RunParams,
    mine: &[&Trial],
    goldens: &[&GoldenOutcome],
) -> EnvSummary {
    let mut conformity = Tally::default();
    let mut success = Tally::default();
    let mut checks: BTreeMap<String, Tally> = params
        .checks
        .iter()
        .map(|c| (c.clone(), Tally::default()))
        .collect();
    let mut errors = 0;
    for t in mine {
        if t.error.is_some() {
            errors += 1;
        }
        // A trial whose audit never ran (an environment error) says nothing about conformity:
        // it is counted in `errors`, which already fails the row.
        if let Some(a) = &t.audit {
            conformity.add(a.conforms);
            if let Some(s) = a.success {
                success.add(s);
            }
        }
        for c in &t.checks {
            checks
                .entry(c.check.clone())
                .or_default()
                .add_outcome(c.applicable, c.passed);
        }
    }
    let mut golden_tally = Tally::default();
    for g in goldens {
        golden_tally.add(g.passed);
    }
    // Success is behaviour, not conformity: it is reported, never part of `passed`.
    let passed = errors == 0
        && conformity.all_passed()
        && checks.values().all(Tally::all_passed)
        && golden_tally.all_passed();
    EnvSummary {
        env: env.to_string(),
        seeds: mine.len() as u64,
        conformity,
        success,
        checks,
        goldens: golden_tally,
        errors,
        passed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample_params() -> RunParams {
        RunParams {
            budget: None,
            ignore: Vec::new(),
            timings: false,
            envs: vec!["b-env".into(), "a-env".into()],
            seeds: vec![5, 1, 3],
            steps: 10,
            checks: vec!["same".into(), "other".into()],
            goldens: vec![],
            rollouts: None,
            env_params: vec![],
        }
    }

    pub(crate) fn trial(env: &str, seed: u64, conforms: bool, same_ok: bool) -> Trial {
        Trial {
            env: env.into(),
            seed,
            audit: Some(AuditRecord {
                conforms,
                initial_fingerprint: Some("aa".into()),
                repeat_fingerprint: Some(if conforms { "aa" } else { "bb" }.into()),
                different_fields: if conforms {
                    vec![]
                } else {
                    vec!["cache".into()]
                },
                changes: if conforms {
                    vec![]
                } else {
                    vec![
                        serde_json::json!({"pointer": "/cache", "kind": "changed", "before": null, "after": 1}),
                    ]
                },
                missing: vec![],
                unexpected: vec![],
                success: Some(seed % 2 == 1),
                detail: serde_json::Value::Null,
                effects: vec![],
                warnings: vec![],
            }),
            checks: vec![
                CheckOutcome {
                    check: "same".into(),
                    applicable: true,
                    passed: same_ok,
                    summary: if same_ok {
                        "identical".into()
                    } else {
                        "differ at step 3".into()
                    },
                    divergence: None,
                    timeline: (!same_ok).then(|| Timeline {
                        left_label: "run 1".into(),
                        right_label: "run 2".into(),
                        left: vec!["01".into(), "02".into(), "03".into(), "04".into()],
                        right: vec!["01".into(), "02".into(), "03".into(), "ff".into()],
                        first_divergent_step: Some(3),
                    }),
                    cause: None,
                    timing: None,
                    step_ms: None,
                },
                CheckOutcome {
                    check: "other".into(),
                    applicable: true,
                    passed: true,
                    summary: "seeds diverge at step 0".into(),
                    divergence: None,
                    timeline: None,
                    cause: None,
                    timing: None,
                    step_ms: None,
                },
            ],
            error: None,
            about: None,
            episodes: vec![],
        }
    }

    pub(crate) fn all_trials() -> Vec<Trial> {
        let mut v = Vec::new();
        for env in ["a-env", "b-env"] {
            for seed in [1, 3, 5] {
                v.push(trial(env, seed, env == "b-env" || seed != 3, true));
            }
        }
        v
    }

    #[test]
    fn assemble_orders_by_params_not_by_arrival() {
        let mut shuffled = all_trials();
        shuffled.reverse();
        let a = Report::assemble(sample_params(), None, all_trials(), vec![]);
        let b = Report::assemble(sample_params(), None, shuffled, vec![]);
        assert_eq!(a.to_json(), b.to_json());
        let order: Vec<(String, u64)> = a.trials.iter().map(|t| (t.env.clone(), t.seed)).collect();
        assert_eq!(order[0], ("b-env".to_string(), 5));
        assert_eq!(order[3], ("a-env".to_string(), 5));
        assert!(!a.passed, "a-env seed 3 does not conform");
        assert_eq!(
            a.summary[1].conformity,
            Tally {
                passed: 2,
                total: 3,
                not_applicable: 0,
            }
        );
        assert!(a.summary[0].passed);
    }

    #[test]
    fn success_is_reported_but_never_decides_passing() {
        let r = Report::assemble(
            sample_params(),
            None,
            all_trials()
                .into_iter()
                .filter(|t| t.env == "b-env")
                .collect(),
            vec![],
        );
        assert_eq!(
            r.summary[0].success,
            Tally {
                passed: 3,
                total: 3,
                not_applicable: 0,
            }
        );
        let r2 = Report::assemble(
            RunParams {
                budget: None,
                ignore: Vec::new(),
                seeds: vec![2],
                ..sample_params()
            },
            None,
            vec![trial("b-env", 2, true, true)],
            vec![],
        );
        assert_eq!(
            r2.summary[0].success,
            Tally {
                passed: 0,
                total: 1,
                not_applicable: 0,
            }
        );
        assert!(r2.summary[0].passed);
    }

    #[test]
    fn not_applicable_is_never_passed_nor_failed() {
        let mut t = trial("b-env", 5, true, true);
        t.checks[1].applicable = false;
        t.checks[1].passed = false;
        let r = Report::assemble(sample_params(), None, vec![t.clone()], vec![]);
        let other = r.summary[0].checks["other"];
        assert_eq!((other.passed, other.total, other.not_applicable), (0, 0, 1));
        assert_eq!(other.to_string(), "n/a");
        assert!(r.passed && t.passed());
    }

    #[test]
    fn twenty_thousand_trials_sort_by_params() {
        let n = 10_000u64;
        // A permutation of 0..n (7919 is prime to 10,000), so run order is not numeric order.
        let seeds: Vec<u64> = (0..n).map(|i| (i * 7_919) % n).collect();
        let params = RunParams {
            budget: None,
            ignore: Vec::new(),
            timings: false,
            envs: vec!["b-env".into(), "a-env".into()],
            seeds: seeds.clone(),
            steps: 1,
            checks: vec!["same".into(), "other".into()],
            goldens: vec![],
            rollouts: None,
            env_params: vec![],
        };
        let mut trials = Vec::new();
        for seed in (0..n).rev() {
            for env in ["a-env", "b-env"] {
                trials.push(trial(env, seed, true, true));
            }
        }
        // Not in the params: after everything known, unknown seeds after an env's known ones.
        trials.push(trial("zz-env", 1, true, true));
        trials.push(trial("a-env", n + 5, true, true));
        let r = Report::assemble(params, None, trials, vec![]);
        let mut expected: Vec<(String, u64)> = Vec::new();
        for env in ["b-env", "a-env"] {
            for &seed in &seeds {
                expected.push((env.to_string(), seed));
            }
            if env == "a-env" {
                expected.push((env.to_string(), n + 5));
            }
        }
        expected.push(("zz-env".to_string(), 1));
        let got: Vec<(String, u64)> = r.trials.iter().map(|t| (t.env.clone(), t.seed)).collect();
        assert!(got == expected, "trials out of order");
        assert_eq!(r.summary.len(), 2);
        assert_eq!((r.summary[0].seeds, r.summary[1].seeds), (n, n + 1));
        assert_eq!(r.summary[1].checks["same"].total, n + 1);
    }

    #[test]
    fn errors_stay_out_of_the_conformity_tally() {
        let mut broken = trial("b-env", 3, true, true);
        broken.audit = None;
        broken.checks.clear();
        broken.error = Some("env crashed during reset".into());
        let r = Report::assemble(
            sample_params(),
            None,
            vec![trial("b-env", 5, true, true), broken],
            vec![],
        );
        let row = &r.summary[0];
        assert_eq!(row.env, "b-env");
        assert_eq!(row.seeds, 2);
        assert_eq!(
            row.conformity,
            Tally {
                passed: 1,
                total: 1,
                not_applicable: 0,
            }
        );
        assert_eq!(row.errors, 1);
        assert!(!row.passed, "an error still fails the row");
        assert!(!r.passed);
    }

    #[test]
    fn shard_syntax() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "1/0", "x/2", "3"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn foreign_json_is_refused_with_a_reason() {
        let err = Report::from_json(b"{\"schema\": 1}", "x.json").unwrap_err();
        assert!(
            err.to_string().starts_with("x.json: not a lockstep report"),
            "{err}"
        );
    }
}
