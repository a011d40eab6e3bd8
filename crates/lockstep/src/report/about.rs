//! What a report records about each env beyond its verdicts: how it was run (what a replay
//! command needs, in [`EnvParams`]), what it says about itself (its id and the reset contract
//! its audit used, [`EnvAbout`]) and how long its rollouts were and what they returned
//! ([`EpisodeGroup`]), for the per-env panels and plots of report.html.
//!
//! Every trial of an env learns its [`EnvAbout`] (each runs in its own worker); the report
//! keeps it once per env ([`hoist`]) and only on a trial whose env said something else, so a
//! 10,000-seed run does not repeat one contract 10,000 times. [`unhoist`] gives a shard's
//! trials theirs back before a merge re-assembles them: merged and single-run bytes agree.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Trial;

/// How one env of the run was named and run: everything its replay command needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvParams {
    /// The env's name in the report (`params.envs`).
    pub env: String,
    /// Declared seedless with `--seedless`.
    pub seedless: bool,
    /// The command of an external env (`--cmd -- ARGV`); `null` for a built-in one.
    pub command: Option<ExternalCommand>,
}

/// An external env's command line and limits, as given to `check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExternalCommand {
    pub argv: Vec<String>,
    /// `--timeout`, seconds.
    pub timeout: f64,
    /// `--startup-timeout`, seconds, when given.
    pub startup_timeout: Option<f64>,
    /// `--shared-dirs`: its processes ran in the caller's directories, not private ones
    /// (written only when set, so reports of the default keep their bytes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_dirs: bool,
    /// `--contract FILE`, absolute: the contract the env was held to (written only when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
}

/// What an env says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvAbout {
    /// The env's own id: its spec id, for an external env the handshake's `env_id`.
    pub env_id: String,
    /// The reset contract the audit held the env to.
    pub contract: ContractInfo,
    /// How its actions were chosen when not by lockstep's sampler: the adapter's `--policy`
    /// (its name and source's SHA-256) or `--actions` (the file, its SHA-256, its steps), from
    /// the handshake's `config`. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<serde_json::Value>,
    /// What ran the env, as it says (the Python adapter: `python`, `implementation`, and
    /// `packages`, each imported distribution's version). Absent when it does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<serde_json::Value>,
}

/// A reset contract, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractInfo {
    pub name: String,
    pub version: u32,
    /// Canonical profile of the fingerprint: `python` or `jcs`.
    pub profile: String,
    /// False when the env declares no contract and the audit inferred one from its state
    /// after a reset (every top-level field, in one layer `state`).
    pub declared: bool,
    pub layers: Vec<LayerInfo>,
    /// What the inferred state could not read (a C extension object, nesting too deep), JSON
    /// Pointer to the reason: the adapter's `lockstep_skipped` field, lifted here so the report
    /// names it even when every trial conforms and no state is kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skipped: BTreeMap<String, String>,
}

/// One layer of a contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerInfo {
    pub name: String,
    pub fields: Vec<String>,
    /// The probe that reads the layer from a real system (`sqlite`, `http`...), if any.
    pub probe: Option<String>,
}

impl ContractInfo {
    pub fn of(c: &crate::contract::Contract, declared: bool) -> ContractInfo {
        ContractInfo {
            name: c.name.clone(),
            version: c.version,
            profile: c.profile.as_str().to_string(),
            declared,
            layers: c
                .layers
                .iter()
                .map(|l| LayerInfo {
                    name: l.name.clone(),
                    fields: l.fields.clone(),
                    probe: l.probe.as_ref().map(|p| p.probe.clone()),
                })
                .collect(),
            skipped: BTreeMap::new(),
        }
    }

    /// [`ContractInfo::of`] an inferred contract, with what `state` (the state it was inferred
    /// from) says it skipped.
    pub fn inferred(c: &crate::contract::Contract, state: &lockstep_canon::Value) -> ContractInfo {
        let mut info = ContractInfo::of(c, false);
        if let Some(lockstep_canon::Value::Object(m)) = state.get(SKIPPED_FIELD) {
            info.skipped = m
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().unwrap_or("not inspectable").to_string(),
                    )
                })
                .collect();
        }
        info
    }
}

/// The field of an inferred Python state listing what the adapter could not read
/// (`lockstep_adapter.attributes.SKIPPED_FIELD`).
pub const SKIPPED_FIELD: &str = "lockstep_skipped";

/// One env of the report: what it said about itself (`null` when no trial of it got that far).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvRecord {
    pub env: String,
    pub about: Option<EnvAbout>,
}

/// Rollouts of one seed (the same-seed check's, numbered from 1) that ended alike: same length,
/// same end, same returns to the bit. A seed that replays has one group; each extra group is a
/// rollout that went its own way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeGroup {
    pub rollouts: Vec<u32>,
    pub steps: u64,
    pub finished: bool,
    /// Sum of rewards per agent; a NaN or infinity is written as the text `NaN`, `Infinity`,
    /// `-Infinity` (JSON has no such numbers).
    #[serde(with = "returns_text")]
    pub returns: BTreeMap<String, f64>,
}

impl EpisodeGroup {
    /// Groups the rollouts' stats, in order of first appearance.
    pub fn group(stats: &[crate::check::EpisodeStat]) -> Vec<EpisodeGroup> {
        let mut groups: Vec<EpisodeGroup> = Vec::new();
        for (i, s) in stats.iter().enumerate() {
            let n = i as u32 + 1;
            let same = |g: &EpisodeGroup| {
                g.steps == s.steps
                    && g.finished == s.finished
                    && g.returns.len() == s.returns.len()
                    && g.returns
                        .iter()
                        .zip(&s.returns)
                        .all(|((a, x), (b, y))| a == b && x.to_bits() == y.to_bits())
            };
            match groups.iter_mut().find(|g| same(g)) {
                Some(g) => g.rollouts.push(n),
                None => groups.push(EpisodeGroup {
                    rollouts: vec![n],
                    steps: s.steps,
                    finished: s.finished,
                    returns: s.returns.clone(),
                }),
            }
        }
        groups
    }

    /// The sum of every agent's return: the one number a plot of returns draws.
    pub fn total_return(&self) -> f64 {
        self.returns.values().sum()
    }
}

/// Keeps each env's [`EnvAbout`] once, in `envs`: the first trial's (in report order); every
/// trial that says the same loses its copy, one that says something else keeps its own.
pub fn hoist(env_names: &[String], trials: &mut [Trial]) -> Vec<EnvRecord> {
    let mut first: BTreeMap<&str, EnvAbout> = BTreeMap::new();
    for t in trials.iter() {
        if let Some(a) = &t.about {
            first.entry(t.env.as_str()).or_insert_with(|| a.clone());
        }
    }
    let records: Vec<EnvRecord> = env_names
        .iter()
        .map(|env| EnvRecord {
            env: env.clone(),
            about: first.get(env.as_str()).cloned(),
        })
        .collect();
    for t in trials.iter_mut() {
        let kept = records.iter().find(|r| r.env == t.env);
        if kept.is_some_and(|r| r.about.is_some() && r.about == t.about) {
            t.about = None;
        }
    }
    records
}

/// Undoes [`hoist`] for one report's trials: each trial without an [`EnvAbout`] gets its env's.
pub fn unhoist(envs: &[EnvRecord], trials: &mut [Trial]) {
    for t in trials.iter_mut().filter(|t| t.about.is_none()) {
        t.about = envs
            .iter()
            .find(|r| r.env == t.env)
            .and_then(|r| r.about.clone());
    }
}

mod returns_text {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Number {
        Finite(f64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(m: &BTreeMap<String, f64>, s: S) -> Result<S::Ok, S::Error> {
        let out: BTreeMap<&String, Number> = m
            .iter()
            .map(|(k, &v)| {
                let n = if v.is_finite() {
                    Number::Finite(v)
                } else if v.is_nan() {
                    Number::Text("NaN".into())
                } else if v > 0.0 {
                    Number::Text("Infinity".into())
                } else {
                    Number::Text("-Infinity".into())
                };
                (k, n)
            })
            .collect();
        out.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
        let m = BTreeMap::<String, Number>::deserialize(d)?;
        m.into_iter()
            .map(|(k, n)| {
                let v = match n {
                    Number::Finite(v) => v,
                    Number::Text(t) => match t.as_str() {
                        "NaN" => f64::NAN,
                        "Infinity" => f64::INFINITY,
                        "-Infinity" => f64::NEG_INFINITY,
                        other => {
                            return Err(serde::de::Error::custom(format!(
                                "return {other:?} of agent {k:?} is not a number"
                            )))
                        }
                    },
                };
                Ok((k, v))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::trial;
    use super::*;
    use crate::check::EpisodeStat;

    fn about(id: &str) -> EnvAbout {
        EnvAbout {
            driver: None,
            provenance: None,
            env_id: id.into(),
            contract: ContractInfo {
                name: "c".into(),
                version: 2,
                profile: "python".into(),
                declared: true,
                skipped: Default::default(),
                layers: vec![LayerInfo {
                    name: "state".into(),
                    fields: vec!["cache".into()],
                    probe: None,
                }],
            },
        }
    }

    #[test]
    fn hoist_keeps_one_copy_and_the_odd_one_out() {
        let mut trials = vec![trial("a", 1, true, true), trial("a", 2, true, true)];
        trials.push(trial("a", 3, true, true));
        trials[0].about = Some(about("x"));
        trials[1].about = Some(about("x"));
        trials[2].about = Some(about("y"));
        let original = trials.clone();
        let envs = hoist(&["a".into(), "b".into()], &mut trials);
        assert_eq!(envs[0].about, Some(about("x")));
        assert_eq!(envs[1].about, None, "no trial of b");
        assert_eq!(trials[0].about, None);
        assert_eq!(trials[2].about, Some(about("y")));
        unhoist(&envs, &mut trials);
        assert_eq!(trials, original);
    }

    #[test]
    fn rollouts_that_end_alike_share_a_group_and_nan_survives_json() {
        let stat = |steps: u64, r: f64| EpisodeStat {
            steps,
            finished: true,
            returns: [("agent".to_string(), r)].into_iter().collect(),
        };
        let groups = EpisodeGroup::group(&[
            stat(10, 1.5),
            stat(10, 1.5),
            stat(9, 1.5),
            stat(10, f64::NAN),
        ]);
        assert_eq!(groups.len(), 3);
        assert_eq!(groups[0].rollouts, vec![1, 2]);
        assert_eq!(groups[1].rollouts, vec![3]);
        let text = serde_json::to_string(&groups).unwrap();
        assert!(text.contains("\"agent\":\"NaN\""), "{text}");
        let back: Vec<EpisodeGroup> = serde_json::from_str(&text).unwrap();
        assert!(back[2].returns["agent"].is_nan());
        assert_eq!(back[0], groups[0]);
    }
}
