//! Reading and writing golden files: the project's strict JSON parser (errors at
//! `FILE:LINE:COLUMN`, integers exact, duplicate keys refused), unknown fields refused with
//! their JSON Pointer, and the seal.
//!
//! **The seal** (format v2): the SHA-256 of the canonical JSON (profile `python`) of the file's
//! object without its `seal` member. The digests of a trace cover what an episode showed, but
//! not the file's other fields (the step budget, the env's config, the changelog's words), and
//! a hand edit of those would pass verification unseen. The seal is not a signature (anyone can
//! recompute it); it makes every edit that did not go through `lockstep golden update` visible,
//! which is what a reviewed golden needs. Reformatting (compact JSON, CRLF, another key
//! order) does not change canonical bytes, so it keeps the seal.

use std::path::Path;

use lockstep_canon::{Map, ParseOptions, Profile, Value};

use super::{ChangelogEntry, ContractRef, Golden, GoldenError, FORMAT, FORMAT_V1};
use crate::trace::{Digest, End, StepDigest};

/// Members of a golden file's object, in file order. `argv` is present for an external env
/// only, `seal` in v2 only.
const TOP: &[&str] = &[
    "format",
    "env",
    "config",
    "seed",
    "steps",
    "trace_format",
    "action_sampler",
    "contract",
    "end",
    "episode",
    "step_digests",
    "changelog",
    "argv",
    "seal",
];
const STEP: &[&str] = &["step", "digest", "agents", "logs", "log_lines"];
const AGENT: &[&str] = &["digest", "obs", "reward", "terminated", "truncated", "info"];
const ENTRY: &[&str] = &["date", "reason", "old_episode", "new_episode"];
const CONTRACT: &[&str] = &["name", "version"];

/// Parses and validates the bytes of a golden file (`path` names it in errors), with the seal
/// it records and the one its content gives (format v2). The caller checks the consistency of
/// the parts first ([`super::consistency`], which locates an edit) and the seal last (which
/// catches every other edit): see [`check_seal`].
pub(super) fn parse(
    bytes: &[u8],
    path: &Path,
) -> Result<(Golden, Option<(Digest, Digest)>), GoldenError> {
    let value = lockstep_canon::parse_with(bytes, &ParseOptions::default()).map_err(|e| {
        GoldenError::Parse {
            path: path.into(),
            message: format!("{}:{}: {}", e.line, e.column, e.message),
        }
    })?;
    let at = |pointer: &str, message: String| GoldenError::Parse {
        path: path.into(),
        message: format!("at {pointer}: {message}"),
    };
    let top = object(&value, "", &at)?;
    let format = match top.get("format") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(at("/format", "a golden file names its format".into())),
    };
    if format != FORMAT && format != FORMAT_V1 {
        return Err(GoldenError::Format {
            path: path.into(),
            found: format,
        });
    }
    known_members(top, "", TOP, &at)?;
    let field = |name: &str| {
        top.get(name)
            .ok_or_else(|| at(&format!("/{name}"), "missing".into()))
    };
    let steps_value = field("step_digests")?;
    let Value::Array(steps) = steps_value else {
        return Err(at("/step_digests", "not an array".into()));
    };
    let mut step_digests = Vec::with_capacity(steps.len());
    for (i, s) in steps.iter().enumerate() {
        let pointer = format!("/step_digests/{i}");
        let m = object(s, &pointer, &at)?;
        known_members(m, &pointer, STEP, &at)?;
        if let Some(agents) = m.get("agents") {
            let agents_ptr = format!("{pointer}/agents");
            for (name, a) in object(agents, &agents_ptr, &at)? {
                let p = format!("{agents_ptr}/{}", escape(name));
                known_members(object(a, &p, &at)?, &p, AGENT, &at)?;
            }
        }
        step_digests.push(convert::<StepDigest>(s, &pointer, &at)?);
    }
    let Value::Array(entries) = field("changelog")? else {
        return Err(at("/changelog", "not an array".into()));
    };
    let mut changelog = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let pointer = format!("/changelog/{i}");
        known_members(object(e, &pointer, &at)?, &pointer, ENTRY, &at)?;
        changelog.push(convert::<ChangelogEntry>(e, &pointer, &at)?);
    }
    let contract = match top.get("contract") {
        None | Some(Value::Null) => None,
        Some(c) => {
            known_members(object(c, "/contract", &at)?, "/contract", CONTRACT, &at)?;
            Some(convert::<ContractRef>(c, "/contract", &at)?)
        }
    };
    let seal = match (format.as_str(), top.get("seal")) {
        (FORMAT, Some(s)) => Some(convert::<Digest>(s, "/seal", &at)?),
        (FORMAT, None) => return Err(at("/seal", format!("missing (format {FORMAT} is sealed)"))),
        (_, Some(_)) => return Err(at("/seal", format!("format {FORMAT_V1} has no seal"))),
        (_, None) => None,
    };
    let golden = Golden {
        format,
        env: convert(field("env")?, "/env", &at)?,
        config: field("config")?.clone(),
        seed: convert(field("seed")?, "/seed", &at)?,
        steps: convert(field("steps")?, "/steps", &at)?,
        trace_format: convert(field("trace_format")?, "/trace_format", &at)?,
        action_sampler: convert(field("action_sampler")?, "/action_sampler", &at)?,
        contract,
        end: convert::<End>(field("end")?, "/end", &at)?,
        episode: convert(field("episode")?, "/episode", &at)?,
        step_digests,
        changelog,
        argv: match top.get("argv") {
            None => None,
            Some(a) => Some(convert::<Vec<String>>(a, "/argv", &at)?),
        },
    };
    let seal = seal.map(|recorded| (recorded, seal_of(&value)));
    Ok((golden, seal))
}

/// The recorded seal against the computed one.
pub(super) fn check_seal(path: &Path, seal: Option<(Digest, Digest)>) -> Result<(), GoldenError> {
    match seal {
        Some((recorded, computed)) if recorded != computed => Err(GoldenError::Inconsistent {
            path: path.into(),
            at: "seal".into(),
            pointer: "/seal".into(),
            message: format!(
                "the file's content does not give its seal (recorded {}, computed {}): a field outside the digests was changed",
                recorded.short(),
                computed.short()
            ),
        }),
        _ => Ok(()),
    }
}

/// The seal of a golden file's parsed object (see the module doc).
pub(super) fn seal_of(value: &Value) -> Digest {
    let mut v = value.clone();
    if let Value::Object(m) = &mut v {
        m.remove("seal");
    }
    // A parsed file has no NaN (the strict parser refuses it), so the python profile always
    // writes it.
    crate::fingerprint::fingerprint(&v, Profile::Python)
        .ok()
        .and_then(|hex| Digest::from_hex(&hex))
        .unwrap_or(Digest::ZERO)
}

/// The file's bytes: pretty JSON (one digest per line, so a diff of two versions reads well),
/// fields in the struct's order, the seal last, a final newline.
pub(super) fn to_bytes(golden: &Golden) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Sealed<'a> {
        #[serde(flatten)]
        golden: &'a Golden,
        #[serde(skip_serializing_if = "Option::is_none")]
        seal: Option<Digest>,
    }
    let render = |seal: Option<Digest>| {
        let mut out =
            serde_json::to_vec_pretty(&Sealed { golden, seal }).expect("golden files serialise");
        out.push(b'\n');
        out
    };
    if golden.format != FORMAT {
        return render(None);
    }
    // The seal is computed from the bytes as they will be read back, so load and save can
    // never disagree about it.
    let unsealed = render(None);
    let seal = lockstep_canon::parse(&unsealed)
        .map(|v| seal_of(&v))
        .unwrap_or(Digest::ZERO);
    render(Some(seal))
}

fn object<'v>(
    v: &'v Value,
    pointer: &str,
    at: &impl Fn(&str, String) -> GoldenError,
) -> Result<&'v Map, GoldenError> {
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(at(
            if pointer.is_empty() { "/" } else { pointer },
            "not an object".into(),
        )),
    }
}

fn known_members(
    m: &Map,
    pointer: &str,
    known: &[&str],
    at: &impl Fn(&str, String) -> GoldenError,
) -> Result<(), GoldenError> {
    match m.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(at(
            &format!("{pointer}/{}", escape(k)),
            format!("unknown field {k:?} (known: {})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

fn convert<T: serde::de::DeserializeOwned>(
    v: &Value,
    pointer: &str,
    at: &impl Fn(&str, String) -> GoldenError,
) -> Result<T, GoldenError> {
    lockstep_canon::from_value(v).map_err(|e| at(pointer, e.to_string()))
}

/// A JSON Pointer reference token (RFC 6901).
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// The member lists must name every field of the types they guard.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::AgentDigest;

    #[test]
    fn member_lists_match_the_types() {
        let a = AgentDigest {
            digest: Digest::ZERO,
            obs: Default::default(),
            reward: 0.0,
            terminated: false,
            truncated: false,
            info: Digest::ZERO,
        };
        let Value::Object(m) = lockstep_canon::to_value(&a).unwrap() else {
            panic!()
        };
        let mut keys: Vec<&str> = m.keys().map(String::as_str).collect();
        let mut want = AGENT.to_vec();
        keys.sort();
        want.sort();
        assert_eq!(keys, want);
    }
}
