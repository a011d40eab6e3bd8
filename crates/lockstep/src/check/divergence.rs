//! First-divergence localisation: where two traces part, down to the element.
//!
//! Two traces are compared step by step; at the first step whose digests differ the parts are
//! compared in a fixed order (agent set; then per agent in name order: observation key set,
//! each key in order, reward, terminated, truncated, info; then the log lines), which gives the
//! [`Site`]. With the full transitions of that step on both sides, [`explain`] adds the
//! [`Detail`]: the first differing element with both values and the dtype (or the shape/dtype
//! mismatch), the JSON Pointer changes of an info, or the first differing log line with the
//! character where it differs. A text observation gets a line diff ([`text_diff`]) and an
//! image observation both frames and a mask ([`frames`]).
//!
//! The first site is the divergence; every other part that differs at that step is listed in
//! [`Divergence::also`] (up to [`ALSO_MAX`], then counted), so a clock stamped into one key
//! does not hide a second key that differs for another reason.

use lockstep_canon::{Profile, Value};

use super::{frames, text_diff};
use crate::diff;
use crate::env::{Array, ArrayData, Transition};
use crate::trace::StepDigest;

/// Other differing parts of the divergent step listed; the rest are counted.
pub const ALSO_MAX: usize = 16;

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
    /// Every other part that differs at the same step, in comparison order (at most
    /// [`ALSO_MAX`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<OtherSite>,
    /// Differing parts of the step past [`ALSO_MAX`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub also_more: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Another part that differs at the divergent step, with its detail when the step's
/// transitions were available.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OtherSite {
    pub site: Site,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Detail>,
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
    /// A text observation (UTF-8 bytes: an axtree, a DOM, a mission) as a line diff.
    Text {
        /// First differing line (0-based) and that line on each side (`None`: no such line).
        line: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        left: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        right: Option<String>,
        /// Unified diff lines (see [`text_diff::line_diff`]).
        diff: Vec<String>,
        /// Diff lines left out.
        #[serde(default, skip_serializing_if = "is_zero")]
        diff_more: u64,
    },
    /// An image observation: the first differing element, how many pixels differ and where,
    /// and (when small enough) both frames and the mask as base64 PNG.
    Image {
        index: u64,
        multi_index: Vec<u64>,
        left: String,
        right: String,
        shape: Vec<usize>,
        differing_pixels: u64,
        pixels: u64,
        /// `[top, left, bottom, right]`, bottom and right exclusive.
        bbox: [u64; 4],
        #[serde(default, skip_serializing_if = "Option::is_none")]
        left_png: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        right_png: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mask_png: Option<String>,
    },
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
        let mut sites = step_sites(a, b).into_iter();
        if let Some(site) = sites.next() {
            let rest: Vec<Site> = sites.collect();
            let also_more = rest.len().saturating_sub(ALSO_MAX) as u64;
            return Some(Divergence {
                step: a.step,
                site,
                detail: None,
                note: None,
                also: rest
                    .into_iter()
                    .take(ALSO_MAX)
                    .map(|site| OtherSite { site, detail: None })
                    .collect(),
                also_more,
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
        also: Vec::new(),
        also_more: 0,
    })
}

fn reward_text(x: f64) -> String {
    format!("{x:?}")
}

/// What differs first between two digests of the same step, `None` when they are equal.
pub fn step_site(a: &StepDigest, b: &StepDigest) -> Option<Site> {
    step_sites(a, b).into_iter().next()
}

/// Every part that differs between two digests of the same step, in comparison order (empty
/// when they are equal). Agents present on both sides are compared even when the agent sets
/// differ, and the keys both observations have even when the key sets differ.
pub fn step_sites(a: &StepDigest, b: &StepDigest) -> Vec<Site> {
    let mut sites = Vec::new();
    if a.digest == b.digest && a.step == b.step {
        return sites;
    }
    let names = |s: &StepDigest| s.agents.keys().cloned().collect::<Vec<_>>();
    if names(a) != names(b) {
        sites.push(Site::Agents {
            left: names(a),
            right: names(b),
        });
    }
    for (agent, x) in &a.agents {
        let Some(y) = b.agents.get(agent) else {
            continue;
        };
        if x.digest == y.digest {
            continue;
        }
        let found = sites.len();
        let agent = agent.clone();
        let keys = |m: &std::collections::BTreeMap<String, _>| m.keys().cloned().collect();
        let (kx, ky): (Vec<String>, Vec<String>) = (keys(&x.obs), keys(&y.obs));
        if kx != ky {
            sites.push(Site::ObsKeys {
                agent: agent.clone(),
                left: kx,
                right: ky,
            });
        }
        for (key, d) in &x.obs {
            if y.obs.get(key).is_some_and(|e| e != d) {
                sites.push(Site::Obs {
                    agent: agent.clone(),
                    key: key.clone(),
                });
            }
        }
        if x.reward.to_bits() != y.reward.to_bits() {
            sites.push(Site::Reward {
                agent: agent.clone(),
                left: reward_text(x.reward),
                right: reward_text(y.reward),
            });
        }
        if x.terminated != y.terminated {
            sites.push(Site::Terminated {
                agent: agent.clone(),
                left: x.terminated,
                right: y.terminated,
            });
        }
        if x.truncated != y.truncated {
            sites.push(Site::Truncated {
                agent: agent.clone(),
                left: x.truncated,
                right: y.truncated,
            });
        }
        if x.info != y.info {
            sites.push(Site::Info {
                agent: agent.clone(),
            });
        }
        if sites.len() == found {
            // Only the reward's NaN payload can differ unseen here (JSON keeps no payloads).
            sites.push(Site::Reward {
                agent,
                left: reward_text(x.reward),
                right: reward_text(y.reward),
            });
        }
    }
    if a.logs != b.logs {
        sites.push(Site::Logs {
            left_lines: a.log_lines,
            right_lines: b.log_lines,
        });
    }
    if sites.is_empty() {
        sites.push(Site::Step);
    }
    sites
}

/// The element-level detail of `site` from the two transitions of its step, `None` when the
/// transitions do not differ there (a re-run that did not reproduce) or the site has no detail.
pub fn explain(site: &Site, left: &Transition, right: &Transition) -> Option<Detail> {
    match site {
        Site::Obs { agent, key } => {
            let a = left.agents.get(agent)?.obs.get(key)?;
            let b = right.agents.get(agent)?.obs.get(key)?;
            text_detail(a, b)
                .or_else(|| image_detail(a, b))
                .or_else(|| array_detail(a, b))
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

/// Bytes of a `uint8` array.
fn bytes_of(a: &Array) -> Option<&[u8]> {
    match a.data() {
        ArrayData::U8(v) => Some(v),
        _ => None,
    }
}

/// Two 1-D `uint8` observations that both read as text, as a line diff.
fn text_detail(a: &Array, b: &Array) -> Option<Detail> {
    if a.shape().len() != 1 || b.shape().len() != 1 {
        return None;
    }
    // An empty side is text when the other is (BrowserGym's `last_action_error` is "" until
    // an action fails): one text suffices, and both must read as text.
    fn text(bytes: &[u8]) -> Option<&str> {
        match bytes {
            [] => Some(""),
            b => text_diff::as_text(b),
        }
    }
    let (x, y) = (text(bytes_of(a)?)?, text(bytes_of(b)?)?);
    if x.is_empty() && y.is_empty() {
        return None;
    }
    let (x, y) = text_diff::json_laid_out(x, y);
    let d = text_diff::line_diff(&x, &y)?;
    Some(Detail::Text {
        line: d.first_line,
        left: d.left,
        right: d.right,
        diff: d.lines,
        diff_more: d.more,
    })
}

/// Two `uint8` image observations of one shape: where they differ, and the pictures.
fn image_detail(a: &Array, b: &Array) -> Option<Detail> {
    if a.shape() != b.shape() {
        return None;
    }
    let f = frames::frame_diff(a.shape(), bytes_of(a)?, bytes_of(b)?)?;
    let Some(Detail::Element {
        index,
        multi_index,
        left,
        right,
        ..
    }) = array_detail(a, b)
    else {
        return None;
    };
    let [left_png, right_png, mask_png] = match f.pngs {
        Some([l, r, m]) => [Some(l), Some(r), Some(m)],
        None => [None, None, None],
    };
    Some(Detail::Image {
        index,
        multi_index,
        left,
        right,
        shape: a.shape().to_vec(),
        differing_pixels: f.differing_pixels,
        pixels: f.pixels,
        bbox: f.bbox,
        left_png,
        right_png,
        mask_png,
    })
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

/// A line of text for a one-line description: quoted, cut at [`QUOTED_CHARS_MAX`] characters.
fn quote_line(s: &Option<String>) -> String {
    match s {
        Some(s) if s.chars().count() > QUOTED_CHARS_MAX => {
            let cut: String = s.chars().take(QUOTED_CHARS_MAX).collect();
            format!("{cut:?}...")
        }
        other => quote(other),
    }
}

/// Characters of a text line quoted in a one-line description.
const QUOTED_CHARS_MAX: usize = 160;

impl Detail {
    pub fn describe(&self, left: &str, right: &str) -> String {
        match self {
            Detail::Text {
                line,
                left: a,
                right: b,
                ..
            } => format!(
                "text, line {line}: {left} {}, {right} {}",
                quote_line(a),
                quote_line(b)
            ),
            Detail::Image {
                index,
                multi_index,
                left: a,
                right: b,
                shape,
                differing_pixels,
                pixels,
                bbox,
                ..
            } => format!(
                "image {shape:?}: {differing_pixels} of {pixels} pixels differ (rows {}..{}, columns {}..{}); element {index} {multi_index:?}: {left} {a}, {right} {b}",
                bbox[0], bbox[2], bbox[1], bbox[3]
            ),
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

    /// Fills the detail of the site and of every other listed site from the two transitions of
    /// the step; whether the site's own detail was found.
    pub fn explain_from(&mut self, left: &Transition, right: &Transition) -> bool {
        self.detail = explain(&self.site, left, right);
        for other in &mut self.also {
            other.detail = explain(&other.site, left, right);
        }
        self.detail.is_some()
    }

    /// Lines for people under [`Divergence::describe`]: the site's text diff, then the other
    /// parts that differ at the step (at most `max_also`, then a count), each with its detail.
    pub fn more_lines(&self, left: &str, right: &str, max_also: usize) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(Detail::Text {
            diff, diff_more, ..
        }) = &self.detail
        {
            lines.push(format!("line diff, - {left}, + {right}:"));
            lines.extend(diff.iter().map(|l| format!("  {l}")));
            if *diff_more > 0 {
                lines.push(format!("  (+{diff_more} more diff lines)"));
            }
        }
        let total = self.also.len() as u64 + self.also_more;
        if total > 0 {
            lines.push(format!(
                "{total} more part(s) differ at step {}:",
                self.step
            ));
        }
        for other in self.also.iter().take(max_also) {
            let mut s = format!("  {}", other.site.describe(left, right));
            if let Some(d) = &other.detail {
                s.push_str(": ");
                s.push_str(&d.describe(left, right));
            }
            lines.push(s);
        }
        let unlisted = total.saturating_sub(max_also.min(self.also.len()) as u64);
        if unlisted > 0 && !self.also.is_empty() {
            lines.push(format!("  (+{unlisted} more in report.json)"));
        }
        lines
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

    fn digest(byte: u8) -> crate::trace::Digest {
        crate::trace::Digest([byte; 32])
    }

    /// A step of one agent `a` whose observation keys have the given digests.
    fn step(obs: &[(&str, u8)], reward: f64, info: u8) -> StepDigest {
        let agent = crate::trace::AgentDigest {
            digest: digest(obs.iter().map(|o| o.1).sum::<u8>() ^ info ^ reward as u8),
            obs: obs
                .iter()
                .map(|(k, d)| (k.to_string(), digest(*d)))
                .collect(),
            reward,
            terminated: false,
            truncated: false,
            info: digest(info),
        };
        StepDigest {
            step: 3,
            digest: agent.digest,
            agents: [("a".to_string(), agent)].into(),
            logs: digest(0),
            log_lines: 0,
        }
    }

    #[test]
    fn every_differing_part_of_the_step_is_listed() {
        let left = step(&[("axtree", 1), ("clock", 2), ("screenshot", 3)], 0.0, 9);
        let right = step(&[("axtree", 4), ("clock", 5), ("screenshot", 3)], 1.0, 8);
        let sites = step_sites(&left, &right);
        let keys: Vec<String> = sites
            .iter()
            .map(|s| s.describe("l", "r").to_string())
            .collect();
        assert_eq!(
            keys,
            [
                "agent \"a\", obs key \"axtree\"",
                "agent \"a\", obs key \"clock\"",
                "agent \"a\", reward: l 0.0, r 1.0",
                "agent \"a\", info"
            ]
        );
        let d = first_divergence(std::slice::from_ref(&left), &[right]).unwrap();
        assert_eq!(d.site, sites[0]);
        assert_eq!(
            d.also.iter().map(|o| o.site.clone()).collect::<Vec<_>>(),
            sites[1..]
        );
        assert_eq!(d.also_more, 0);
        assert!(step_sites(&left, &left).is_empty());
    }

    #[test]
    fn past_the_limit_the_other_parts_are_counted() {
        let keys: Vec<String> = (0..ALSO_MAX + 5).map(|i| format!("k{i:02}")).collect();
        let obs = |d: u8| keys.iter().map(|k| (k.as_str(), d)).collect::<Vec<_>>();
        let d = first_divergence(&[step(&obs(1), 0.0, 0)], &[step(&obs(2), 0.0, 0)]).unwrap();
        assert_eq!(d.also.len(), ALSO_MAX);
        assert_eq!(d.also_more, 4);
        let lines = d.more_lines("l", "r", 2);
        assert_eq!(
            lines[0],
            format!("{} more part(s) differ at step 3:", ALSO_MAX + 4)
        );
        assert_eq!(
            lines.last().unwrap(),
            &format!("  (+{} more in report.json)", ALSO_MAX + 2)
        );
        let back: Divergence = serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn text_observations_are_diffed_by_line() {
        let text = |s: &str| arr(ArrayData::U8(s.as_bytes().to_vec()), &[s.len()]);
        let a = text("RootWebArea 'page'\n  button 'OK'\n  status 'visits 1'");
        let b = text("RootWebArea 'page'\n  button 'OK'\n  status 'visits 2'");
        let Some(Detail::Text {
            line, left, diff, ..
        }) = text_detail(&a, &b)
        else {
            panic!("{:?}", text_detail(&a, &b))
        };
        assert_eq!((line, left.as_deref()), (2, Some("  status 'visits 1'")));
        assert!(
            diff.contains(&"+  status 'visits 2'".to_string()),
            "{diff:?}"
        );
        // Bytes that are not text keep the element detail.
        let bytes = arr(ArrayData::U8(vec![0, 1, 2]), &[3]);
        let other = arr(ArrayData::U8(vec![0, 1, 3]), &[3]);
        assert_eq!(text_detail(&bytes, &other), None);
        // An error text that appears where there was none (shapes [0] and [n]) is text.
        let none = arr(ArrayData::U8(Vec::new()), &[0]);
        let error = arr(ArrayData::U8(b"Timeout 500ms exceeded.".to_vec()), &[23]);
        assert!(
            matches!(text_detail(&none, &error), Some(Detail::Text { .. })),
            "{:?}",
            text_detail(&none, &error)
        );
        assert_eq!(text_detail(&none, &none), None);
    }

    #[test]
    fn image_observations_get_frames_and_a_mask() {
        let a = arr(ArrayData::U8(vec![10; 8 * 8 * 3]), &[8, 8, 3]);
        let mut changed = vec![10; 8 * 8 * 3];
        changed[(8 + 2) * 3] = 11;
        let b = arr(ArrayData::U8(changed), &[8, 8, 3]);
        let Some(Detail::Image {
            index,
            multi_index,
            differing_pixels,
            bbox,
            mask_png,
            ..
        }) = image_detail(&a, &b)
        else {
            panic!()
        };
        assert_eq!((index, multi_index), (30, vec![1, 2, 0]));
        assert_eq!((differing_pixels, bbox), (1, [1, 2, 2, 3]));
        assert!(mask_png.is_some());
    }

    #[test]
    fn unravels_row_major() {
        assert_eq!(unravel(5, &[2, 3]), vec![1, 2]);
        assert_eq!(unravel(0, &[]), Vec::<u64>::new());
    }
}
