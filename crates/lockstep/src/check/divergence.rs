//! First-divergence localisation: where two traces part, down to the element.
//!
//! Two traces are compared step by step; at the first step whose digests differ the parts are
//! compared in a fixed order (agent set; then per agent in name order: observation key set,
//! each key in order, reward, terminated, truncated, info; then the log lines), which gives the
//! [`Site`]. With the full transitions of that step on both sides, [`explain`] adds the
//! [`Detail`]: the first differing element with both values and the dtype (or the shape/dtype
//! mismatch), the JSON Pointer changes of an info, or the first differing log line with the
//! character where it differs.

use lockstep_canon::{Profile, Value};

use crate::diff;
use crate::env::{Array, ArrayData, Transition};
use crate::trace::StepDigest;

/// The first place two traces differ.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Divergence {
    /// Step index (0 = reset).
    pub step: u64,
    pub site: Site,
    /// Element-level explanation, when both transitions of the step were available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Detail>,
    /// Caveats (e.g. the re-run to capture the step did not reproduce the difference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What differs at the divergent step.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Site {
    /// One rollout ended before the other: `step` is the first step only one of them has.
    Length { left_steps: u64, right_steps: u64 },
    /// The sets of agents differ.
    Agents {
        left: Vec<String>,
        right: Vec<String>,
    },
    /// The observation keys of an agent differ.
    ObsKeys {
        agent: String,
        left: Vec<String>,
        right: Vec<String>,
    },
    /// An observation array differs.
    Obs { agent: String, key: String },
    /// A reward differs (values as Rust prints them: `0.5`, `-0.0`, `NaN`).
    Reward {
        agent: String,
        left: String,
        right: String,
    },
    Terminated {
        agent: String,
        left: bool,
        right: bool,
    },
    Truncated {
        agent: String,
        left: bool,
        right: bool,
    },
    /// An info differs.
    Info { agent: String },
    /// The log lines of the step differ.
    Logs { left_lines: u64, right_lines: u64 },
    /// The step digests differ but no part does (traces of different formats).
    Step,
}

/// Element-level explanation of a [`Site`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Detail {
    /// First differing element (row-major `index`, and per axis in `multi_index`).
    Element {
        index: u64,
        multi_index: Vec<u64>,
        dtype: String,
        left: String,
        right: String,
    },
    /// Same key, different dtype or shape.
    Layout {
        left_dtype: String,
        left_shape: Vec<usize>,
        right_dtype: String,
        right_shape: Vec<usize>,
    },
    /// Info changes by JSON Pointer, values as canonical JSON (profile python).
    Info { changes: Vec<InfoChange> },
    /// First differing log line (0-based) and the first differing character in it (0-based,
    /// in Unicode scalar values); a side without that line is `None`.
    Log {
        line: u64,
        char_index: u64,
        left: Option<String>,
        right: Option<String>,
    },
}

/// One changed path of an info.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InfoChange {
    pub pointer: String,
    /// `added`, `removed` or `changed` (left to right).
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right: Option<String>,
}

/// The first divergence of two traces' step digests, site-level only; `None` when equal.
pub fn first_divergence(left: &[StepDigest], right: &[StepDigest]) -> Option<Divergence> {
    for (a, b) in left.iter().zip(right) {
        if let Some(site) = step_site(a, b) {
            return Some(Divergence {
                step: a.step,
                site,
                detail: None,
                note: None,
            });
        }
    }
    (left.len() != right.len()).then(|| Divergence {
        step: left.len().min(right.len()) as u64,
        site: Site::Length {
            left_steps: left.len() as u64,
            right_steps: right.len() as u64,
        },
        detail: None,
        note: None,
    })
}

fn reward_text(x: f64) -> String {
    format!("{x:?}")
}

/// What differs between two digests of the same step, `None` when they are equal.
pub fn step_site(a: &StepDigest, b: &StepDigest) -> Option<Site> {
    if a.digest == b.digest && a.step == b.step {
        return None;
    }
    let names = |s: &StepDigest| s.agents.keys().cloned().collect::<Vec<_>>();
    if names(a) != names(b) {
        return Some(Site::Agents {
            left: names(a),
            right: names(b),
        });
    }
    for (agent, x) in &a.agents {
        let y = &b.agents[agent];
        if x.digest == y.digest {
            continue;
        }
        let agent = agent.clone();
        let keys = |m: &std::collections::BTreeMap<String, _>| m.keys().cloned().collect();
        let (kx, ky): (Vec<String>, Vec<String>) = (keys(&x.obs), keys(&y.obs));
        if kx != ky {
            return Some(Site::ObsKeys {
                agent,
                left: kx,
                right: ky,
            });
        }
        if let Some(key) = x.obs.iter().find(|(k, d)| y.obs[*k] != **d).map(|(k, _)| k) {
            return Some(Site::Obs {
                agent,
                key: key.clone(),
            });
        }
        if x.reward.to_bits() != y.reward.to_bits() {
            return Some(Site::Reward {
                agent,
                left: reward_text(x.reward),
                right: reward_text(y.reward),
            });
        }
        if x.terminated != y.terminated {
            return Some(Site::Terminated {
                agent,
                left: x.terminated,
                right: y.terminated,
            });
        }
        if x.truncated != y.truncated {
            return Some(Site::Truncated {
                agent,
                left: x.truncated,
                right: y.truncated,
            });
        }
        if x.info != y.info {
            return Some(Site::Info { agent });
        }
        // Only the reward's NaN payload can differ unseen here (JSON keeps no payloads).
        return Some(Site::Reward {
            agent,
            left: reward_text(x.reward),
            right: reward_text(y.reward),
        });
    }
    if a.logs != b.logs {
        return Some(Site::Logs {
            left_lines: a.log_lines,
            right_lines: b.log_lines,
        });
    }
    Some(Site::Step)
}

/// The element-level detail of `site` from the two transitions of its step, `None` when the
/// transitions do not differ there (a re-run that did not reproduce) or the site has no detail.
pub fn explain(site: &Site, left: &Transition, right: &Transition) -> Option<Detail> {
    match site {
        Site::Obs { agent, key } => {
            let a = left.agents.get(agent)?.obs.get(key)?;
            let b = right.agents.get(agent)?.obs.get(key)?;
            array_detail(a, b)
        }
        Site::Info { agent } => {
            let a = &left.agents.get(agent)?.info;
            let b = &right.agents.get(agent)?.info;
            let d = diff::diff(a, b);
            if d.is_empty() {
                return None;
            }
            let text = |v: &Option<Value>| {
                v.as_ref().map(|v| {
                    lockstep_canon::to_vec(v, Profile::Python)
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_else(|e| format!("<{e}>"))
                })
            };
            Some(Detail::Info {
                changes: d
                    .changes
                    .iter()
                    .map(|c| InfoChange {
                        pointer: c.pointer.clone(),
                        kind: c.kind.as_str().to_string(),
                        left: text(&c.before),
                        right: text(&c.after),
                    })
                    .collect(),
            })
        }
        Site::Logs { .. } => log_detail(&left.logs, &right.logs),
        _ => None,
    }
}

fn log_detail(a: &[String], b: &[String]) -> Option<Detail> {
    let line = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
    let (la, lb) = (a.get(line), b.get(line));
    let char_index = match (la, lb) {
        (Some(x), Some(y)) => {
            let mut xs = x.chars();
            let mut ys = y.chars();
            let mut i = 0u64;
            loop {
                match (xs.next(), ys.next()) {
                    (Some(p), Some(q)) if p == q => i += 1,
                    _ => break i,
                }
            }
        }
        _ => 0,
    };
    Some(Detail::Log {
        line: line as u64,
        char_index,
        left: la.cloned(),
        right: lb.cloned(),
    })
}

fn array_detail(a: &Array, b: &Array) -> Option<Detail> {
    if a.dtype() != b.dtype() || a.shape() != b.shape() {
        return Some(Detail::Layout {
            left_dtype: a.dtype().name().into(),
            left_shape: a.shape().to_vec(),
            right_dtype: b.dtype().name().into(),
            right_shape: b.shape().to_vec(),
        });
    }
    let size = a.dtype().size();
    let (ba, bb) = (a.to_le_bytes(), b.to_le_bytes());
    let index = ba
        .chunks_exact(size.max(1))
        .zip(bb.chunks_exact(size.max(1)))
        .position(|(x, y)| x != y)?;
    let (mut left, mut right) = (element_text(a, index), element_text(b, index));
    if left == right {
        // Different bits, same text (NaN payloads): show the bits.
        let bits = |bytes: &[u8]| hex::encode(&bytes[index * size..(index + 1) * size]);
        left = format!("{left} (bytes {})", bits(&ba));
        right = format!("{right} (bytes {})", bits(&bb));
    }
    Some(Detail::Element {
        index: index as u64,
        multi_index: unravel(index, a.shape()),
        dtype: a.dtype().name().into(),
        left,
        right,
    })
}

fn unravel(mut index: usize, shape: &[usize]) -> Vec<u64> {
    let mut out = vec![0u64; shape.len()];
    for (axis, &dim) in shape.iter().enumerate().rev() {
        if dim > 0 {
            out[axis] = (index % dim) as u64;
            index /= dim;
        }
    }
    out
}

/// One element as text, exactly: integers in decimal, floats as Rust prints them (shortest
/// round-trip digits), bools as `true`/`false`.
pub fn element_text(a: &Array, i: usize) -> String {
    match a.data() {
        ArrayData::Bool(v) => v.get(i).map(|&x| (x != 0).to_string()),
        ArrayData::U8(v) => v.get(i).map(u8::to_string),
        ArrayData::I8(v) => v.get(i).map(i8::to_string),
        ArrayData::I32(v) => v.get(i).map(i32::to_string),
        ArrayData::I64(v) => v.get(i).map(i64::to_string),
        ArrayData::F32(v) => v.get(i).map(|x| format!("{x:?}")),
        ArrayData::F64(v) => v.get(i).map(|x| format!("{x:?}")),
    }
    .unwrap_or_else(|| "<missing>".into())
}

fn quote(s: &Option<String>) -> String {
    match s {
        Some(s) => format!("{s:?}"),
        None => "(no line)".into(),
    }
}

impl Site {
    /// `agent "blue", obs key "noise"` and the like: names quoted, so a single-agent env's
    /// `agent "agent", obs key "obs"` reads as names, not words.
    pub fn describe(&self, left: &str, right: &str) -> String {
        match self {
            Site::Length {
                left_steps,
                right_steps,
            } => format!(
                "the episodes end at different steps: {left} has {left_steps} transitions, {right} has {right_steps}"
            ),
            Site::Agents { left: a, right: b } => {
                format!("agents differ: {left} {a:?}, {right} {b:?}")
            }
            Site::ObsKeys {
                agent,
                left: a,
                right: b,
            } => format!("agent {agent:?}, observation keys differ: {left} {a:?}, {right} {b:?}"),
            Site::Obs { agent, key } => format!("agent {agent:?}, obs key {key:?}"),
            Site::Reward {
                agent,
                left: a,
                right: b,
            } => format!("agent {agent:?}, reward: {left} {a}, {right} {b}"),
            Site::Terminated {
                agent,
                left: a,
                right: b,
            } => format!("agent {agent:?}, terminated: {left} {a}, {right} {b}"),
            Site::Truncated {
                agent,
                left: a,
                right: b,
            } => format!("agent {agent:?}, truncated: {left} {a}, {right} {b}"),
            Site::Info { agent } => format!("agent {agent:?}, info"),
            Site::Logs {
                left_lines,
                right_lines,
            } if left_lines != right_lines => {
                format!("logs ({left} {left_lines} lines, {right} {right_lines} lines)")
            }
            Site::Logs { .. } => "logs".into(),
            Site::Step => "step digest (no single part differs)".into(),
        }
    }
}

impl Detail {
    pub fn describe(&self, left: &str, right: &str) -> String {
        match self {
            Detail::Element {
                index,
                multi_index,
                dtype,
                left: a,
                right: b,
            } => format!("element {index} {multi_index:?} ({dtype}): {left} {a}, {right} {b}"),
            Detail::Layout {
                left_dtype,
                left_shape,
                right_dtype,
                right_shape,
            } => format!(
                "dtype/shape mismatch: {left} {left_dtype}{left_shape:?}, {right} {right_dtype}{right_shape:?}"
            ),
            Detail::Info { changes } => {
                let first = changes.first().map(|c| {
                    format!(
                        "{} {}: {left} {}, {right} {}",
                        if c.pointer.is_empty() { "(root)" } else { &c.pointer },
                        c.kind,
                        c.left.as_deref().unwrap_or("(absent)"),
                        c.right.as_deref().unwrap_or("(absent)")
                    )
                });
                let more = match changes.len() {
                    0 | 1 => String::new(),
                    n => format!(" (+{} more)", n - 1),
                };
                format!("{}{more}", first.unwrap_or_default())
            }
            Detail::Log {
                line,
                char_index,
                left: a,
                right: b,
            } => format!(
                "line {line}, char {char_index}: {left} {}, {right} {}",
                quote(a),
                quote(b)
            ),
        }
    }
}

impl Divergence {
    /// One line for people: `step 1, agent "blue", obs key "noise": element 0 [0] (float32): ...`
    /// (without the [`Divergence::note`], which callers print on its own).
    pub fn describe(&self, left: &str, right: &str) -> String {
        let mut s = format!("step {}, {}", self.step, self.site.describe(left, right));
        if let Some(d) = &self.detail {
            s.push_str(": ");
            s.push_str(&d.describe(left, right));
        }
        s
    }

    /// The agent of the site, if it names one.
    pub fn agent(&self) -> Option<&str> {
        match &self.site {
            Site::ObsKeys { agent, .. }
            | Site::Obs { agent, .. }
            | Site::Reward { agent, .. }
            | Site::Terminated { agent, .. }
            | Site::Truncated { agent, .. }
            | Site::Info { agent } => Some(agent),
            _ => None,
        }
    }

    /// The observation key, `reward`, `terminated`, `truncated`, `info`, `logs`, `agents`,
    /// `obs_keys`, `length` or `step`: what differs, as one word.
    pub fn key(&self) -> &str {
        match &self.site {
            Site::Obs { key, .. } => key,
            Site::Reward { .. } => "reward",
            Site::Terminated { .. } => "terminated",
            Site::Truncated { .. } => "truncated",
            Site::Info { .. } => "info",
            Site::Logs { .. } => "logs",
            Site::Agents { .. } => "agents",
            Site::ObsKeys { .. } => "obs_keys",
            Site::Length { .. } => "length",
            Site::Step => "step",
        }
    }

    /// The value model of the `check` report (see docs/replay.md).
    pub fn to_value(&self) -> Value {
        super::to_value(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(data: ArrayData, shape: &[usize]) -> Array {
        Array::new(shape, data).unwrap()
    }

    #[test]
    fn first_element_with_both_values() {
        let a = arr(ArrayData::F32(vec![0.0, 1.0, 2.0, 3.0]), &[2, 2]);
        let b = arr(ArrayData::F32(vec![0.0, 1.0, 2.5, 3.0]), &[2, 2]);
        assert_eq!(
            array_detail(&a, &b),
            Some(Detail::Element {
                index: 2,
                multi_index: vec![1, 0],
                dtype: "float32".into(),
                left: "2.0".into(),
                right: "2.5".into()
            })
        );
        assert_eq!(array_detail(&a, &a.clone()), None);
        let z = arr(ArrayData::F64(vec![0.0]), &[1]);
        let nz = arr(ArrayData::F64(vec![-0.0]), &[1]);
        let Some(Detail::Element { left, right, .. }) = array_detail(&z, &nz) else {
            panic!()
        };
        assert_eq!((left.as_str(), right.as_str()), ("0.0", "-0.0"));
        let c = arr(ArrayData::I32(vec![0, 0, 0, 0]), &[4]);
        assert!(matches!(array_detail(&a, &c), Some(Detail::Layout { .. })));
    }

    #[test]
    fn log_line_and_character() {
        let a = vec!["same".to_string(), "t=100 ok".to_string()];
        let b = vec!["same".to_string(), "t=101 ok".to_string()];
        assert_eq!(
            log_detail(&a, &b),
            Some(Detail::Log {
                line: 1,
                char_index: 4,
                left: Some("t=100 ok".into()),
                right: Some("t=101 ok".into())
            })
        );
        let Some(Detail::Log { line, right, .. }) = log_detail(&a, &a[..1]) else {
            panic!()
        };
        assert_eq!((line, right), (1, None));
    }

    #[test]
    fn unravels_row_major() {
        assert_eq!(unravel(5, &[2, 3]), vec![1, 2]);
        assert_eq!(unravel(0, &[]), Vec::<u64>::new());
    }
}
