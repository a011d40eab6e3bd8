//! Fields left out of every comparison (`--ignore POINTER`, a contract's `[compare] ignore`):
//! what an env is meant to vary, such as BrowserGym's `elapsed_time` and each chat message's
//! `timestamp`, so that a check compares everything else and goes on past them.
//!
//! A pattern is a JSON Pointer into one agent's step, applied to every agent: `/obs/KEY/...`
//! (an observation key; nested observation keys are already joined by `/`) or `/info/...`;
//! or into the starting state the reset-contract audit fingerprints, `/state/FIELD/...` (a
//! clock the env keeps in an attribute, such as each chat message's stamp). A
//! segment `*` matches any one key or index, `**` any number of them (none included); `~1` and
//! `~0` are `/` and `~`, as in RFC 6901. Below an observation key the pattern goes on into the
//! key's value when that is JSON text (the adapter sends BrowserGym's `AnyDict` and chat
//! messages as the UTF-8 bytes of their canonical JSON): the text is parsed, the matching
//! members removed and the rest written again canonically. A text that is not JSON is left
//! as it is.
//!
//! The rollout applies the patterns to each transition before it is digested, kept or captured
//! ([`crate::trace::RolloutOptions::ignore`]), so every check, trace and explanation sees the
//! same filtered steps; the actions are sampled from the unfiltered ones (an ignored action
//! mask still masks). The audit applies the `/state` patterns to every starting state it
//! reads, before the contract checks its fields ([`crate::audit`]); a field ignored whole is
//! then not among an inferred contract's fields.

use std::sync::Arc;

use lockstep_canon::{Profile, Value};

use crate::env::{Array, ArrayData, DType, Transition};

/// A pattern that is not one (said with the pattern and what is wrong).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("ignore pattern {pattern:?}: {reason}")]
pub struct IgnoreError {
    pub pattern: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    /// `*`: any one key or index.
    One,
    /// `**`: any number of keys or indices, none included.
    Any,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Obs,
    Info,
    State,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    part: Part,
    segments: Vec<Segment>,
}

/// The patterns of one run, cheap to clone (every rollout holds them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ignore {
    texts: Arc<Vec<String>>,
    patterns: Arc<Vec<Pattern>>,
}

impl Ignore {
    /// Parses every pattern; the first bad one is the error. Duplicates are kept once, in
    /// the order first given.
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Ignore, IgnoreError> {
        let mut kept = Vec::new();
        let mut patterns = Vec::new();
        for text in texts {
            let text = text.as_ref();
            if kept.iter().any(|k: &String| k == text) {
                continue;
            }
            patterns.push(parse_pattern(text)?);
            kept.push(text.to_string());
        }
        Ok(Ignore {
            texts: Arc::new(kept),
            patterns: Arc::new(patterns),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns as given (duplicates dropped): for the header and report.json.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    /// Whether some pattern points into the starting state (`/state/...`).
    pub fn has_state(&self) -> bool {
        self.patterns.iter().any(|p| p.part == Part::State)
    }

    /// Removes every member a `/state` pattern matches from a starting state.
    pub fn apply_state(&self, state: &mut Value) {
        for p in self.patterns.iter().filter(|p| p.part == Part::State) {
            remove_matching(state, &p.segments, &mut Vec::new());
        }
    }

    /// These patterns and then `more`'s, each once.
    pub fn union(&self, more: &Ignore) -> Ignore {
        let texts: Vec<&String> = self.texts.iter().chain(more.texts.iter()).collect();
        Ignore::parse(&texts).expect("both were parsed")
    }

    /// Removes every matching field of every agent from `t`.
    pub fn apply(&self, t: &mut Transition) {
        if self.is_empty() {
            return;
        }
        for agent in t.agents.values_mut() {
            if !self.patterns.iter().any(|p| p.part != Part::State) {
                break;
            }
            agent.obs.retain(|key, array| {
                let path: Vec<&str> = key.split('/').collect();
                let mut json_patterns = Vec::new();
                for p in self.patterns.iter().filter(|p| p.part == Part::Obs) {
                    if matches(&p.segments, &path) {
                        return false;
                    }
                    if may_match_below(&p.segments, &path) {
                        json_patterns.push(p);
                    }
                }
                if !json_patterns.is_empty() {
                    filter_json_leaf(array, &path, &json_patterns);
                }
                true
            });
            for p in self.patterns.iter().filter(|p| p.part == Part::Info) {
                if matches(&p.segments, &[]) {
                    agent.info = Value::Object(Default::default());
                    break;
                }
                let mut path = Vec::new();
                remove_matching(&mut agent.info, &p.segments, &mut path);
            }
        }
    }
}

fn parse_pattern(text: &str) -> Result<Pattern, IgnoreError> {
    let bad = |reason: &str| IgnoreError {
        pattern: text.to_string(),
        reason: reason.to_string(),
    };
    let rest = text
        .strip_prefix('/')
        .ok_or_else(|| bad("a JSON Pointer starts with `/` (`/obs/KEY`, `/info/KEY`)"))?;
    let mut words = rest.split('/');
    let part = match words.next() {
        Some("obs") => Part::Obs,
        Some("info") => Part::Info,
        Some("state") => Part::State,
        _ => {
            return Err(bad(
                "a pointer starts with /obs or /info (into each agent's step) or /state (into the starting state); rewards, flags and logs are always compared",
            ))
        }
    };
    let mut segments = Vec::new();
    for word in words {
        segments.push(match word {
            "*" => Segment::One,
            "**" => Segment::Any,
            "" => {
                return Err(bad(
                    "an empty segment (`//` or a trailing `/`) names nothing",
                ))
            }
            w => Segment::Key(unescape(w).map_err(|e| bad(&e))?),
        });
    }
    if part != Part::Info && segments.is_empty() {
        return Err(bad(
            "/obs or /state alone would leave nothing of it to compare; name a key",
        ));
    }
    Ok(Pattern { part, segments })
}

/// RFC 6901: `~1` is `/`, `~0` is `~`; any other `~` is an error.
fn unescape(word: &str) -> Result<String, String> {
    let mut out = String::with_capacity(word.len());
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('~'),
            Some('1') => out.push('/'),
            _ => return Err(format!("`~` in {word:?} is not `~0` or `~1`")),
        }
    }
    Ok(out)
}

/// Whether `path` matches the whole of `segments`.
fn matches(segments: &[Segment], path: &[&str]) -> bool {
    match segments.split_first() {
        None => path.is_empty(),
        Some((Segment::Any, rest)) => (0..=path.len()).any(|skip| matches(rest, &path[skip..])),
        Some((first, rest)) => match path.split_first() {
            Some((key, below)) => one(first, key) && matches(rest, below),
            None => false,
        },
    }
}

/// Whether some path below `path` (longer than it) can match `segments`.
fn may_match_below(segments: &[Segment], path: &[&str]) -> bool {
    match segments.split_first() {
        None => false,
        Some((Segment::Any, _)) => true,
        Some((first, rest)) => match path.split_first() {
            None => true,
            Some((key, below)) => one(first, key) && may_match_below(rest, below),
        },
    }
}

fn one(segment: &Segment, key: &str) -> bool {
    match segment {
        Segment::Key(k) => k == key,
        Segment::One | Segment::Any => true,
    }
}

fn borrowed(path: &[String]) -> Vec<&str> {
    path.iter().map(String::as_str).collect()
}

/// Removes from `value` (found at `path`) every member or element whose path matches.
fn remove_matching(value: &mut Value, segments: &[Segment], path: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                path.push(key.clone());
                let here = borrowed(path);
                if matches(segments, &here) {
                    map.remove(&key);
                } else if may_match_below(segments, &here) {
                    if let Some(v) = map.get_mut(&key) {
                        remove_matching(v, segments, path);
                    }
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let mut index = 0;
            items.retain_mut(|item| {
                path.push(index.to_string());
                index += 1;
                let here = borrowed(path);
                let keep = if matches(segments, &here) {
                    false
                } else {
                    if may_match_below(segments, &here) {
                        remove_matching(item, segments, path);
                    }
                    true
                };
                path.pop();
                keep
            });
        }
        _ => {}
    }
}

/// An observation key whose bytes are JSON text (a 1-D uint8 array): the matching members
/// removed, the rest written again canonically. Anything else is left alone.
fn filter_json_leaf(array: &mut Array, key_path: &[&str], patterns: &[&Pattern]) {
    if array.dtype() != DType::U8 || array.shape().len() != 1 {
        return;
    }
    let ArrayData::U8(bytes) = array.data() else {
        return;
    };
    let Ok(mut value) = lockstep_canon::parse(bytes) else {
        return;
    };
    if !matches!(value, Value::Object(_) | Value::Array(_)) {
        return;
    }
    for p in patterns {
        // The path starts at the key, so a `**` spans the key's parts and the JSON below alike.
        let mut path: Vec<String> = key_path.iter().map(|k| k.to_string()).collect();
        remove_matching(&mut value, &p.segments, &mut path);
    }
    let Ok(text) = lockstep_canon::to_vec(&value, Profile::Python) else {
        return;
    };
    if let Ok(filtered) = Array::new(&[text.len()], ArrayData::U8(text)) {
        *array = filtered;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::AgentStep;
    use std::collections::BTreeMap;

    fn step(obs: &[(&str, Array)], info: &str) -> Transition {
        let agent = AgentStep {
            obs: obs
                .iter()
                .map(|(k, a)| (k.to_string(), a.clone()))
                .collect::<BTreeMap<_, _>>(),
            reward: 0.0,
            terminated: false,
            truncated: false,
            info: lockstep_canon::parse(info.as_bytes()).unwrap(),
        };
        Transition {
            agents: [("agent".to_string(), agent)].into_iter().collect(),
            logs: Vec::new(),
        }
    }

    fn text(s: &str) -> Array {
        Array::new(&[s.len()], ArrayData::U8(s.as_bytes().to_vec())).unwrap()
    }

    fn text_of(t: &Transition, key: &str) -> String {
        match t.agents["agent"].obs[key].data() {
            ArrayData::U8(b) => String::from_utf8(b.clone()).unwrap(),
            _ => panic!(),
        }
    }

    fn info_of(t: &Transition) -> String {
        String::from_utf8(lockstep_canon::to_vec(&t.agents["agent"].info, Profile::Python).unwrap())
            .unwrap()
    }

    #[test]
    fn keys_members_and_elements_go_and_the_rest_stays() {
        let chat = r#"[{"message":"hi","role":"user","timestamp":1.5},{"message":"ok","role":"assistant","timestamp":2.5}]"#;
        let mut t = step(
            &[
                ("chat_messages", text(chat)),
                ("goal", text("click b3")),
                ("clock/now", Array::zeros(DType::F64, &[1])),
                ("clock/tz", Array::zeros(DType::I64, &[1])),
            ],
            r#"{"elapsed_time":3.25,"task":{"done":false,"t":[1,2]},"x":1}"#,
        );
        let ignore = Ignore::parse(&[
            "/obs/chat_messages/*/timestamp",
            "/obs/clock/now",
            "/info/elapsed_time",
            "/info/**/t",
        ])
        .unwrap();
        ignore.apply(&mut t);
        assert_eq!(
            text_of(&t, "chat_messages"),
            r#"[{"message":"hi","role":"user"},{"message":"ok","role":"assistant"}]"#
        );
        assert_eq!(text_of(&t, "goal"), "click b3");
        let keys: Vec<_> = t.agents["agent"].obs.keys().cloned().collect();
        assert_eq!(keys, ["chat_messages", "clock/tz", "goal"]);
        assert_eq!(info_of(&t), r#"{"task":{"done":false},"x":1}"#);
    }

    #[test]
    fn double_star_spans_keys_and_json_and_a_whole_info_can_go() {
        let mut t = step(
            &[(
                "page",
                text(r#"{"a":{"b":{"timestamp":1}},"timestamp":2,"c":3}"#),
            )],
            r#"{"k":1}"#,
        );
        Ignore::parse(&["/obs/**/timestamp", "/info"])
            .unwrap()
            .apply(&mut t);
        assert_eq!(text_of(&t, "page"), r#"{"a":{"b":{}},"c":3}"#);
        assert_eq!(info_of(&t), "{}");
        // `*` is one level (a nested key `a/b` is two), and `~0` is a `~` of a key's name.
        let mut t = step(&[("a/b", text("x")), ("a~c/d", text("y"))], "{}");
        Ignore::parse(&["/obs/*", "/obs/a~0c/d"])
            .unwrap()
            .apply(&mut t);
        let keys: Vec<_> = t.agents["agent"].obs.keys().cloned().collect();
        assert_eq!(keys, ["a/b"]);
    }

    #[test]
    fn bad_patterns_say_what_is_wrong() {
        let err = |p: &str| Ignore::parse(&[p]).unwrap_err().to_string();
        assert_eq!(
            err("obs/x"),
            "ignore pattern \"obs/x\": a JSON Pointer starts with `/` (`/obs/KEY`, `/info/KEY`)"
        );
        assert!(err("/reward").contains("starts with /obs or /info"));
        assert!(err("/state").contains("name a key"));
        assert!(err("/obs").contains("name a key"));
        assert!(err("/obs/a//b").contains("empty segment"));
        assert!(err("/info/a~2").contains("is not `~0` or `~1`"));
        let twice = Ignore::parse(&["/info/t", "/info/t"]).unwrap();
        assert_eq!(twice.texts(), ["/info/t"]);
    }

    #[test]
    fn state_patterns_reach_the_starting_state_and_never_a_step() {
        let ignore = Ignore::parse(&["/state/chat/*/timestamp", "/state/opened"]).unwrap();
        assert!(ignore.has_state());
        let mut state = lockstep_canon::parse(
            br#"{"chat":[{"m":"hi","timestamp":1.5}],"opened":2,"target":3}"#,
        )
        .unwrap();
        ignore.apply_state(&mut state);
        let written = lockstep_canon::to_vec(&state, Profile::Python).unwrap();
        assert_eq!(written, br#"{"chat":[{"m":"hi"}],"target":3}"#);
        let mut t = step(&[("opened", text("1"))], r#"{"opened":1}"#);
        ignore.apply(&mut t);
        assert_eq!(text_of(&t, "opened"), "1");
        assert_eq!(info_of(&t), r#"{"opened":1}"#);
        let both = ignore.union(&Ignore::parse(&["/state/opened", "/info/t"]).unwrap());
        assert_eq!(
            both.texts(),
            ["/state/chat/*/timestamp", "/state/opened", "/info/t"]
        );
    }

    #[test]
    fn a_text_that_is_not_json_is_left_as_it_is() {
        let mut t = step(&[("goal", text("click {b3"))], "{}");
        Ignore::parse(&["/obs/goal/x"]).unwrap().apply(&mut t);
        assert_eq!(text_of(&t, "goal"), "click {b3");
    }
}
