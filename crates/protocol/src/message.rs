//! The messages of `lockstep/1`: requests written by lockstep, replies read from the env.
//!
//! Pure functions over bytes and [`Value`]s, so every rule of docs/protocol.md is tested here
//! without a child process. Replies are parsed with [`lockstep_canon::parse_with`], which keeps
//! `1` and `1.0` apart and big integers exact (a numpy bit-generator state is a 128-bit int).

use std::collections::BTreeMap;

use base64::Engine as _;
use lockstep_canon::{Number, Value};

use lockstep::env::{
    Action, Actions, AgentSpec, AgentStep, Array, DType, EnvSpec, Space, Transition,
};

/// The protocol version every env speaks first, sent by the env in its handshake.
pub const PROTOCOL_VERSION: &str = "lockstep/1";

/// The version an env may offer in its handshake's `upgrades`: several env instances in one
/// child, each request naming its `instance` (docs/protocol.md, "lockstep/2").
pub const PROTOCOL_V2: &str = "lockstep/2";

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A reply that breaks the protocol: what is wrong and where (a JSON Pointer into the reply).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at {pointer:?}")]
pub struct MessageError {
    pub pointer: String,
    pub message: String,
}

fn err(pointer: &str, message: impl Into<String>) -> MessageError {
    MessageError {
        pointer: pointer.to_string(),
        message: message.into(),
    }
}

/// How a parsed reply is read: an answer, or the env reporting its own failure.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply<'a> {
    /// `"ok": true`: the reply object, for the request-specific reader.
    Ok(&'a lockstep_canon::Map),
    /// `"ok": false`: the env answered that the request failed (an exception in Python).
    Failed {
        error: String,
        traceback: Option<String>,
    },
}

/// Splits a reply on its `ok` member.
pub fn reply(value: &Value) -> Result<Reply<'_>, MessageError> {
    let map = value
        .as_object()
        .ok_or_else(|| err("", "reply is not a JSON object"))?;
    match map.get("ok") {
        Some(Value::Bool(true)) => Ok(Reply::Ok(map)),
        Some(Value::Bool(false)) => Ok(Reply::Failed {
            error: map
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("(no error message)")
                .to_string(),
            traceback: map
                .get("traceback")
                .and_then(Value::as_str)
                .map(str::to_string),
        }),
        Some(_) => Err(err("/ok", "`ok` is not a boolean")),
        None => Err(err("/ok", "missing field `ok`")),
    }
}

/// The reset contract an env declares in its handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireContract {
    pub name: String,
    pub version: u64,
    /// The top-level fields of [`lockstep::env::Env::state`]; `None` when the env declares none.
    pub fields: Option<Vec<String>>,
}

/// What an env declares before any request.
#[derive(Debug, Clone, PartialEq)]
pub struct Handshake {
    pub env_id: String,
    pub config: Value,
    /// Sorted by name.
    pub agents: Vec<AgentSpec>,
    pub contract: WireContract,
    /// Versions the env can be upgraded to (`lockstep/2`); empty for a `lockstep/1`-only env.
    pub upgrades: Vec<String>,
    /// Whether the child can fork a worker (`lockstep/2`'s `fork` op; handshake `"fork"`).
    pub fork: bool,
    /// Whether, under `lockstep/2`, the child runs each instance on its own thread and answers
    /// requests to different instances as they finish (handshake `"threads"`), so several may
    /// be in flight at once.
    pub threads: bool,
    /// The env declares that it has no randomness (handshake `"seedless": true`): its
    /// other-seed check is not applicable (docs/replay.md).
    pub seedless: bool,
    /// The env answers `trace`, `sources` and `effects` (handshake `"tracer": true`): it can
    /// name the line of its code that read a nondeterministic source (docs/protocol.md).
    pub tracer: bool,
    /// The env answers `provenance` (handshake `"provenance": true`): the versions of what
    /// runs it (the interpreter, its packages).
    pub provenance: bool,
    /// The layers the env's state holds besides its attributes (handshake `"layers"`: names,
    /// such as `["browser"]`): each `state` answer says where to read them now (a browser's
    /// DevTools endpoint changes when the env launches a new browser at its reset), and
    /// lockstep reads them with its own probes (docs/protocol.md, "Layers").
    pub layers: Vec<String>,
}

impl Handshake {
    /// Whether the env can host several instances (it offers `lockstep/2`).
    pub fn offers_v2(&self) -> bool {
        self.upgrades.iter().any(|u| u == PROTOCOL_V2)
    }

    pub fn spec(&self) -> EnvSpec {
        EnvSpec {
            id: self.env_id.clone(),
            config: self.config.clone(),
            agents: self.agents.clone(),
        }
    }
}

fn field<'a>(
    map: &'a lockstep_canon::Map,
    at: &str,
    name: &str,
) -> Result<&'a Value, MessageError> {
    map.get(name)
        .ok_or_else(|| err(at, format!("missing field `{name}`")))
}

fn str_field<'a>(
    map: &'a lockstep_canon::Map,
    at: &str,
    name: &str,
) -> Result<&'a str, MessageError> {
    field(map, at, name)?
        .as_str()
        .ok_or_else(|| err(&format!("{at}/{name}"), format!("`{name}` is not a string")))
}

fn object<'a>(value: &'a Value, at: &str) -> Result<&'a lockstep_canon::Map, MessageError> {
    value
        .as_object()
        .ok_or_else(|| err(at, "expected a JSON object"))
}

fn array<'a>(value: &'a Value, at: &str) -> Result<&'a Vec<Value>, MessageError> {
    value
        .as_array()
        .ok_or_else(|| err(at, "expected a JSON array"))
}

fn unsigned(value: &Value, at: &str) -> Result<u64, MessageError> {
    match value {
        Value::Number(Number::Int(i)) if *i >= 0 => Ok(*i as u64),
        Value::Number(Number::BigInt(d)) => d
            .parse()
            .map_err(|_| err(at, format!("integer {d} is out of range"))),
        _ => Err(err(at, "expected a non-negative integer")),
    }
}

/// A JSON pointer segment (RFC 6901 escaping).
fn seg(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// A bound of a box space: a number, or the strings `Infinity`, `-Infinity`, `NaN` (JSON has no
/// such numbers; the NaN/Infinity literals Python writes are accepted too).
fn bound(value: &Value, at: &str) -> Result<f64, MessageError> {
    match value {
        Value::Number(_) => Ok(value.as_f64().expect("numbers convert to f64")),
        Value::String(s) => match s.as_str() {
            "Infinity" | "inf" => Ok(f64::INFINITY),
            "-Infinity" | "-inf" => Ok(f64::NEG_INFINITY),
            "NaN" | "nan" => Ok(f64::NAN),
            other => Err(err(at, format!("bound {other:?} is not a number"))),
        },
        _ => Err(err(at, "bound is not a number")),
    }
}

/// Parses one space in the serde form of [`Space`] (bounds as above).
pub fn parse_space(value: &Value, at: &str) -> Result<Space, MessageError> {
    let map = object(value, at)?;
    match str_field(map, at, "type")? {
        "discrete" => {
            let n = unsigned(field(map, at, "n")?, &format!("{at}/n"))?;
            let start = match map.get("start") {
                None => 0,
                Some(v) => v
                    .as_i64()
                    .ok_or_else(|| err(&format!("{at}/start"), "expected an integer"))?,
            };
            if n == 0 {
                return Err(err(&format!("{at}/n"), "a discrete space needs n >= 1"));
            }
            Ok(Space::Discrete { n, start })
        }
        "multi_discrete" => {
            let items = array(field(map, at, "nvec")?, &format!("{at}/nvec"))?;
            let nvec = items
                .iter()
                .enumerate()
                .map(|(i, v)| unsigned(v, &format!("{at}/nvec/{i}")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Space::MultiDiscrete { nvec })
        }
        "box" => {
            let dtype = str_field(map, at, "dtype")?;
            if DType::from_name(dtype).is_none() {
                return Err(err(
                    &format!("{at}/dtype"),
                    format!("unknown dtype {dtype:?}"),
                ));
            }
            let shape = parse_shape(field(map, at, "shape")?, &format!("{at}/shape"))?;
            let count = element_count(&shape, &format!("{at}/shape"))?;
            let bounds = |name: &str| -> Result<Vec<f64>, MessageError> {
                let here = format!("{at}/{name}");
                let items = array(field(map, at, name)?, &here)?;
                if items.len() != count {
                    return Err(err(
                        &here,
                        format!("{} bounds for a shape of {count} elements", items.len()),
                    ));
                }
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| bound(v, &format!("{here}/{i}")))
                    .collect()
            };
            let low = bounds("low")?;
            let high = bounds("high")?;
            Ok(Space::Box {
                dtype: dtype.to_string(),
                shape,
                low,
                high,
            })
        }
        "tuple" => {
            let here = format!("{at}/spaces");
            let spaces = array(field(map, at, "spaces")?, &here)?
                .iter()
                .enumerate()
                .map(|(i, v)| parse_space(v, &format!("{here}/{i}")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Space::Tuple { spaces })
        }
        "dict" => {
            let here = format!("{at}/spaces");
            let spaces = object(field(map, at, "spaces")?, &here)?
                .iter()
                .map(|(k, v)| Ok((k.clone(), parse_space(v, &format!("{here}/{}", seg(k)))?)))
                .collect::<Result<BTreeMap<_, _>, MessageError>>()?;
            Ok(Space::Dict { spaces })
        }
        "sequence" => {
            let space = parse_space(field(map, at, "space")?, &format!("{at}/space"))?;
            Ok(Space::Sequence {
                space: Box::new(space),
            })
        }
        other => Err(err(
            &format!("{at}/type"),
            format!(
                "unknown space type {other:?} (expected discrete, multi_discrete, box, tuple, \
                 dict or sequence)"
            ),
        )),
    }
}

fn parse_shape(value: &Value, at: &str) -> Result<Vec<usize>, MessageError> {
    array(value, at)?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let n = unsigned(v, &format!("{at}/{i}"))?;
            usize::try_from(n).map_err(|_| err(&format!("{at}/{i}"), "dimension too large"))
        })
        .collect()
}

fn element_count(shape: &[usize], at: &str) -> Result<usize, MessageError> {
    shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .ok_or_else(|| err(at, "shape holds more elements than memory can"))
}

/// Parses the handshake line (after [`reply`] said `ok`). The protocol version is checked first,
/// so an env of another version is named as such rather than as a missing field.
pub fn parse_handshake(value: &Value) -> Result<Handshake, MessageError> {
    let map = object(value, "")?;
    let version = str_field(map, "", "protocol")?;
    if version != PROTOCOL_VERSION {
        return Err(err(
            "/protocol",
            format!("env speaks protocol {version:?}, lockstep speaks {PROTOCOL_VERSION:?}"),
        ));
    }
    let env_id = str_field(map, "", "env_id")?.to_string();
    let config = map.get("config").cloned().unwrap_or(Value::Null);
    let mut agents = Vec::new();
    for (i, a) in array(field(map, "", "agents")?, "/agents")?
        .iter()
        .enumerate()
    {
        let at = format!("/agents/{i}");
        let am = object(a, &at)?;
        let name = str_field(am, &at, "name")?.to_string();
        let action_space = parse_space(
            field(am, &at, "action_space")?,
            &format!("{at}/action_space"),
        )?;
        let mut observation_space = BTreeMap::new();
        let obs_at = format!("{at}/observation_space");
        for (key, space) in object(field(am, &at, "observation_space")?, &obs_at)? {
            observation_space.insert(
                key.clone(),
                parse_space(space, &format!("{obs_at}/{}", seg(key)))?,
            );
        }
        agents.push(AgentSpec {
            name,
            action_space,
            observation_space,
        });
    }
    if agents.is_empty() {
        return Err(err("/agents", "an env needs at least one agent"));
    }
    agents.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = agents.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(err(
            "/agents",
            format!("agent {:?} declared twice", w[0].name),
        ));
    }
    let contract = match map.get("contract") {
        None | Some(Value::Null) => WireContract {
            name: env_id.clone(),
            version: 1,
            fields: None,
        },
        Some(c) => {
            let cm = object(c, "/contract")?;
            let fields = match cm.get("fields") {
                None | Some(Value::Null) => None,
                Some(f) => Some(
                    array(f, "/contract/fields")?
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            v.as_str().map(str::to_string).ok_or_else(|| {
                                err(
                                    &format!("/contract/fields/{i}"),
                                    "field name is not a string",
                                )
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                ),
            };
            WireContract {
                name: str_field(cm, "/contract", "name")?.to_string(),
                version: unsigned(field(cm, "/contract", "version")?, "/contract/version")?,
                fields,
            }
        }
    };
    let upgrades = match map.get("upgrades") {
        None | Some(Value::Null) => Vec::new(),
        Some(u) => array(u, "/upgrades")?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| err(&format!("/upgrades/{i}"), "version is not a string"))
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let fork = match map.get("fork") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(err("/fork", "`fork` is not a boolean")),
    };
    let threads = match map.get("threads") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(err("/threads", "`threads` is not a boolean")),
    };
    let seedless = match map.get("seedless") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(err("/seedless", "`seedless` is not a boolean")),
    };
    let flag = |name: &str| match map.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(err(
            &format!("/{name}"),
            format!("`{name}` is not a boolean"),
        )),
    };
    let tracer = flag("tracer")?;
    let provenance = flag("provenance")?;
    let layers = match map.get("layers") {
        None | Some(Value::Null) => Vec::new(),
        Some(l) => array(l, "/layers")?
            .iter()
            .enumerate()
            .map(|(i, v)| match v.as_str() {
                Some(name) if !name.is_empty() => Ok(name.to_string()),
                _ => Err(err(
                    &format!("/layers/{i}"),
                    "a layer is named by a non-empty string",
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    Ok(Handshake {
        env_id,
        config,
        agents,
        contract,
        upgrades,
        fork,
        threads,
        seedless,
        tracer,
        provenance,
        layers,
    })
}

/// Decodes one wire array `{dtype, shape, data}`; the data must hold exactly the shape.
pub fn decode_array(value: &Value, at: &str, scratch: &mut Vec<u8>) -> Result<Array, MessageError> {
    let map = object(value, at)?;
    let name = str_field(map, at, "dtype")?;
    let dtype = DType::from_name(name)
        .ok_or_else(|| err(&format!("{at}/dtype"), format!("unknown dtype {name:?}")))?;
    let shape = parse_shape(field(map, at, "shape")?, &format!("{at}/shape"))?;
    let count = element_count(&shape, &format!("{at}/shape"))?;
    let data = str_field(map, at, "data")?;
    scratch.clear();
    B64.decode_vec(data, scratch)
        .map_err(|e| err(&format!("{at}/data"), format!("bad base64: {e}")))?;
    let want = count.checked_mul(dtype.size());
    if want != Some(scratch.len()) {
        return Err(err(
            &format!("{at}/data"),
            format!(
                "array data holds {} bytes but shape {shape:?} of {name} needs {}",
                scratch.len(),
                count.saturating_mul(dtype.size())
            ),
        ));
    }
    Array::from_le_bytes(dtype, &shape, scratch).map_err(|e| err(at, e.to_string()))
}

fn parse_reward(map: &lockstep_canon::Map, agent: &str) -> Result<f64, MessageError> {
    if let Some(bits) = map.get("reward_bits") {
        let here = || render(&["agents", agent, "reward_bits"]);
        let s = bits
            .as_str()
            .ok_or_else(|| err(&here(), "`reward_bits` is not a string"))?;
        if s.len() != 16 {
            return Err(err(&here(), "`reward_bits` needs 16 hex digits"));
        }
        let bits = u64::from_str_radix(s, 16)
            .map_err(|_| err(&here(), "`reward_bits` is not hexadecimal"))?;
        return Ok(f64::from_bits(bits));
    }
    match map.get("reward") {
        Some(v @ Value::Number(_)) => Ok(v.as_f64().expect("numbers convert to f64")),
        Some(_) => Err(err(
            &render(&["agents", agent, "reward"]),
            "`reward` is not a number",
        )),
        None => Err(err(&render(&["agents", agent]), "missing field `reward`")),
    }
}

fn flag(map: &lockstep_canon::Map, agent: &str, name: &str) -> Result<bool, MessageError> {
    match map.get(name) {
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(err(
            &render(&["agents", agent, name]),
            format!("`{name}` is not a boolean"),
        )),
        None => Err(err(
            &render(&["agents", agent]),
            format!("missing field `{name}`"),
        )),
    }
}

/// A JSON Pointer from unescaped segments; built only when an error needs it.
fn render(parts: &[&str]) -> String {
    let mut out = String::new();
    for p in parts {
        out.push('/');
        out.push_str(&seg(p));
    }
    out
}

/// Reads a reset or step reply (after [`reply`] said `ok`) into `out`, replacing its contents.
/// Every agent must be one the handshake declared.
///
/// Hot path: `out` is updated in place. An observation whose dtype and shape did not change is
/// decoded into its existing buffer, and one whose bytes did not change keeps its revision, so
/// a tracer can reuse its digest. Infos are moved out of `map`, not cloned. On an error `out`
/// holds a mix of old and new contents (the caller discards the env).
pub fn read_transition(
    map: &mut lockstep_canon::Map,
    spec: &EnvSpec,
    out: &mut Transition,
    scratch: &mut Vec<u8>,
) -> Result<(), MessageError> {
    let agents = match map.get_mut("agents") {
        Some(Value::Object(agents)) => agents,
        Some(_) => return Err(err("/agents", "expected a JSON object")),
        None => return Err(err("", "missing field `agents`")),
    };
    for name in agents.keys() {
        if !spec.agents.iter().any(|a| &a.name == name) {
            return Err(err(
                &render(&["agents", name]),
                format!("agent {name:?} was not declared in the handshake"),
            ));
        }
    }
    out.agents.retain(|name, _| agents.contains_key(name));
    for (name, step) in agents.iter_mut() {
        let Value::Object(sm) = step else {
            return Err(err(&render(&["agents", name]), "expected a JSON object"));
        };
        if !out.agents.contains_key(name) {
            out.agents.insert(
                name.clone(),
                AgentStep {
                    obs: BTreeMap::new(),
                    reward: 0.0,
                    terminated: false,
                    truncated: false,
                    info: Value::Null,
                },
            );
        }
        let slot = out.agents.get_mut(name).expect("inserted above");
        read_agent(sm, name, slot, scratch)?;
    }
    out.logs.clear();
    match map.get("logs") {
        None | Some(Value::Null) => {}
        Some(Value::Array(lines)) => {
            for (i, l) in lines.iter().enumerate() {
                match l {
                    Value::String(s) => out.logs.push(s.clone()),
                    _ => return Err(err(&format!("/logs/{i}"), "log line is not a string")),
                }
            }
        }
        Some(_) => return Err(err("/logs", "expected a JSON array")),
    }
    Ok(())
}

fn read_agent(
    sm: &mut lockstep_canon::Map,
    name: &str,
    slot: &mut AgentStep,
    scratch: &mut Vec<u8>,
) -> Result<(), MessageError> {
    let obs = match sm.get("obs") {
        Some(Value::Object(obs)) => obs,
        Some(_) => {
            return Err(err(
                &render(&["agents", name, "obs"]),
                "expected a JSON object",
            ))
        }
        None => return Err(err(&render(&["agents", name]), "missing field `obs`")),
    };
    slot.obs.retain(|key, _| obs.contains_key(key));
    for (key, arr) in obs {
        match slot.obs.get_mut(key) {
            Some(existing) => update_array(existing, arr, scratch).map_err(|e| {
                err(
                    &(render(&["agents", name, "obs", key]) + &e.pointer),
                    e.message,
                )
            })?,
            None => {
                let fresh = decode_array(arr, &render(&["agents", name, "obs", key]), scratch)?;
                slot.obs.insert(key.clone(), fresh);
            }
        }
    }
    slot.reward = parse_reward(sm, name)?;
    slot.terminated = flag(sm, name, "terminated")?;
    slot.truncated = flag(sm, name, "truncated")?;
    slot.info = match sm.get_mut("info") {
        Some(info) => std::mem::replace(info, Value::Null),
        None => Value::Object(Default::default()),
    };
    Ok(())
}

/// Decodes `value` into `existing` when dtype and shape match (else replaces it), keeping its
/// revision when the bytes are the same. Errors carry a pointer relative to the array.
fn update_array(
    existing: &mut Array,
    value: &Value,
    scratch: &mut Vec<u8>,
) -> Result<(), MessageError> {
    let same_layout = (|| {
        let map = value.as_object()?;
        let dtype = DType::from_name(map.get("dtype")?.as_str()?)?;
        let shape = map.get("shape")?.as_array()?;
        let same = dtype == existing.dtype()
            && shape.len() == existing.shape().len()
            && shape
                .iter()
                .zip(existing.shape())
                .all(|(v, &n)| v.as_i64() == Some(n as i64));
        Some(same).filter(|&s| s).and(map.get("data")?.as_str())
    })();
    let Some(data) = same_layout else {
        *existing = decode_array(value, "", scratch)?;
        return Ok(());
    };
    scratch.clear();
    B64.decode_vec(data, scratch)
        .map_err(|e| err("/data", format!("bad base64: {e}")))?;
    let want = existing.len() * existing.dtype().size();
    if scratch.len() != want {
        return Err(err(
            "/data",
            format!(
                "array data holds {} bytes but shape {:?} of {} needs {want}",
                scratch.len(),
                existing.shape(),
                existing.dtype().name()
            ),
        ));
    }
    let mut unchanged = true;
    let mut offset = 0;
    existing.with_le_bytes(|chunk| {
        unchanged &= scratch.get(offset..offset + chunk.len()) == Some(chunk);
        offset += chunk.len();
    });
    if unchanged {
        return Ok(());
    }
    if cfg!(target_endian = "little") {
        use lockstep::env::ArrayData as D;
        match existing.data_mut() {
            D::Bool(v) | D::U8(v) => v.copy_from_slice(scratch),
            D::I8(v) => bytemuck::cast_slice_mut(v).copy_from_slice(scratch),
            D::I32(v) => bytemuck::cast_slice_mut(v).copy_from_slice(scratch),
            D::I64(v) => bytemuck::cast_slice_mut(v).copy_from_slice(scratch),
            D::F32(v) => bytemuck::cast_slice_mut(v).copy_from_slice(scratch),
            D::F64(v) => bytemuck::cast_slice_mut(v).copy_from_slice(scratch),
        }
    } else {
        let shape = existing.shape().to_vec();
        *existing = Array::from_le_bytes(existing.dtype(), &shape, scratch)
            .map_err(|e| err("", e.to_string()))?;
    }
    Ok(())
}

/// Reads a state reply (after [`reply`] said `ok`).
pub fn read_state(map: &lockstep_canon::Map) -> Result<Value, MessageError> {
    Ok(field(map, "", "state")?.clone())
}

/// Where a `state` answer says its layers are now (`"layers": {NAME: {"probe": P, SETTING:
/// ...}}`), each as a probe spec; empty when the answer names none.
pub fn read_state_layers(
    map: &lockstep_canon::Map,
) -> Result<Vec<(String, lockstep::probe::ProbeSpec)>, MessageError> {
    let Some(layers) = map.get("layers").filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    object(layers, "/layers")?
        .iter()
        .map(|(name, spec)| {
            let at = format!("/layers/{name}");
            let settings = object(spec, &at)?;
            let probe = str_field(settings, &at, "probe")?.to_string();
            let rest = settings
                .iter()
                .filter(|(k, _)| k.as_str() != "probe")
                .map(|(k, v)| {
                    serde_json::to_value(v)
                        .map(|v| (k.clone(), v))
                        .map_err(|e| err(&format!("{at}/{k}"), e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((name.clone(), lockstep::probe::ProbeSpec::new(probe, rest)))
        })
        .collect()
}

/// Places the snapshot of each of `layers` (where a `state` answer says they are), read with
/// `probes`, in `state` under the layer's name, as a contract's probed layer is: the one way
/// a child's env and an env of the caller's interpreter (the Python package) are read.
pub fn place_layer_snapshots(
    state: &mut Value,
    layers: Vec<(String, lockstep::probe::ProbeSpec)>,
    probes: &lockstep::probe::ProbeSet,
) -> Result<(), String> {
    for (name, spec) in layers {
        let Value::Object(fields) = state else {
            return Err(format!(
                "layer `{name}`: the state is not an object to hold it"
            ));
        };
        if fields.contains_key(&name) {
            return Err(format!(
                "layer `{name}`: the state already has a field `{name}`"
            ));
        }
        let snapshot = probes.snapshot(&name, &spec).map_err(|e| e.to_string())?;
        fields.insert(name, snapshot);
    }
    Ok(())
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing a string into a Vec cannot fail");
}

fn write_head(out: &mut Vec<u8>, id: u64, op: &str) {
    out.clear();
    out.extend_from_slice(b"{\"id\":");
    out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    out.extend_from_slice(b",\"op\":\"");
    out.extend_from_slice(op.as_bytes());
    out.push(b'"');
}

/// Names the instance a written request is for (`lockstep/2`): `{"instance":N,` replaces the
/// request's opening brace.
pub fn set_instance(out: &mut Vec<u8>, instance: u64) {
    debug_assert_eq!(out.first(), Some(&b'{'));
    let mut head = b"{\"instance\":".to_vec();
    head.extend_from_slice(itoa::Buffer::new().format(instance).as_bytes());
    head.push(b',');
    out.splice(0..1, head);
}

/// `{"id":N,"op":"upgrade","protocol":"lockstep/2"}` and a newline; with `threads`,
/// `"threads":true` before the closing brace (each instance on its own thread, several
/// requests in flight; only for a child whose handshake offers it).
pub fn write_upgrade(out: &mut Vec<u8>, id: u64, threads: bool) {
    write_head(out, id, "upgrade");
    out.extend_from_slice(b",\"protocol\":");
    write_str(out, PROTOCOL_V2);
    if threads {
        out.extend_from_slice(b",\"threads\":true");
    }
    out.extend_from_slice(b"}\n");
}

/// `{"id":N,"op":"create"}`, with `"thread":true` for an instance the child is to run on a
/// thread of its own (the parallel check's; every other instance runs on the child's main
/// thread, docs/protocol.md).
pub fn write_create(out: &mut Vec<u8>, id: u64, own_thread: bool) {
    write_head(out, id, "create");
    if own_thread {
        out.extend_from_slice(b",\"thread\":true");
    }
    out.extend_from_slice(b"}\n");
}

/// `{"id":N,"op":"trace","on":B}`: switches the env's source tracer.
pub fn write_trace(out: &mut Vec<u8>, id: u64, on: bool) {
    write_head(out, id, "trace");
    out.extend_from_slice(if on {
        b",\"on\":true}\n"
    } else {
        b",\"on\":false}\n"
    });
}

/// The JSON array under `name` of a `sources` or `effects` reply, each element an object.
pub fn read_records(map: &lockstep_canon::Map, name: &str) -> Result<Vec<Value>, MessageError> {
    let items = array(field(map, "", name)?, &format!("/{name}"))?;
    for (i, item) in items.iter().enumerate() {
        object(item, &format!("/{name}/{i}"))?;
    }
    Ok(items.clone())
}

/// Reads the instance number of a `create` reply (after [`reply`] said `ok`).
pub fn read_instance(map: &lockstep_canon::Map) -> Result<u64, MessageError> {
    unsigned(field(map, "", "instance")?, "/instance")
}

/// Checks that a reply echoes the id of its request: a stray extra line, or an answer to an
/// earlier request, is caught at once instead of being taken for the current answer.
pub fn check_id(value: &Value, expected: u64) -> Result<(), MessageError> {
    match value.get("id") {
        Some(Value::Number(Number::Int(i))) if *i >= 0 && *i as u64 == expected => Ok(()),
        Some(other) => Err(err(
            "/id",
            format!(
                "the answer carries id {}, the request was {expected} (a line no request asked \
                 for, or an answer out of order)",
                lockstep_canon::to_vec(other, lockstep_canon::Profile::Python)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_else(|_| "?".into())
            ),
        )),
        None => Err(err("/id", "missing field `id`")),
    }
}

/// `{"id":N,"op":"reset","seed":S,"options":O}` and a newline; `"seed":null` for the env's
/// unseeded reset. `options` is written in the `python` canonical profile (NaN and infinities
/// as Python's json reads them).
pub fn write_reset(
    out: &mut Vec<u8>,
    id: u64,
    seed: Option<u64>,
    options: &Value,
) -> Result<(), MessageError> {
    write_head(out, id, "reset");
    out.extend_from_slice(b",\"seed\":");
    match seed {
        Some(seed) => out.extend_from_slice(itoa::Buffer::new().format(seed).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"options\":");
    lockstep_canon::write_value(options, lockstep_canon::Profile::Python, out)
        .map_err(|e| err("/options", e.to_string()))?;
    out.extend_from_slice(b"}\n");
    Ok(())
}

/// `{"id":N,"op":"step","actions":{...}}` and a newline. Discrete actions are integers,
/// multi-discrete lists of integers, continuous actions float64 wire arrays shaped as the
/// agent's box space; a tuple (or sequence) action is a list of its parts, a dict action an
/// object of its parts, each written as its own space says.
pub fn write_step(out: &mut Vec<u8>, id: u64, actions: &Actions, spec: &EnvSpec) {
    write_head(out, id, "step");
    out.extend_from_slice(b",\"actions\":{");
    for (i, (name, action)) in actions.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, name);
        out.push(b':');
        let space = spec
            .agents
            .iter()
            .find(|a| &a.name == name)
            .map(|a| &a.action_space);
        write_action(out, action, space);
    }
    out.extend_from_slice(b"}}\n");
}

/// One action in its wire form; `space` (when known) gives a box part its shape.
fn write_action(out: &mut Vec<u8>, action: &Action, space: Option<&Space>) {
    let mut ints = itoa::Buffer::new();
    match action {
        Action::Discrete(a) => out.extend_from_slice(ints.format(*a).as_bytes()),
        Action::MultiDiscrete(v) => {
            out.push(b'[');
            for (j, a) in v.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(ints.format(*a).as_bytes());
            }
            out.push(b']');
        }
        Action::Continuous(v) => {
            let shape = match space {
                Some(Space::Box { shape, .. }) if shape.iter().product::<usize>() == v.len() => {
                    shape.clone()
                }
                _ => vec![v.len()],
            };
            out.extend_from_slice(b"{\"dtype\":\"float64\",\"shape\":[");
            for (j, n) in shape.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(ints.format(*n).as_bytes());
            }
            out.extend_from_slice(b"],\"data\":\"");
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            let start = out.len();
            out.resize(
                start + base64::encoded_len(bytes.len(), true).unwrap_or(0),
                0,
            );
            let written = B64
                .encode_slice(&bytes, &mut out[start..])
                .expect("buffer sized by encoded_len");
            out.truncate(start + written);
            out.extend_from_slice(b"\"}");
        }
        Action::Tuple(parts) => {
            out.push(b'[');
            for (j, part) in parts.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                let part_space = match space {
                    Some(Space::Tuple { spaces }) => spaces.get(j),
                    Some(Space::Sequence { space }) => Some(space.as_ref()),
                    _ => None,
                };
                write_action(out, part, part_space);
            }
            out.push(b']');
        }
        Action::Dict(parts) => {
            out.push(b'{');
            for (j, (key, part)) in parts.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                let part_space = match space {
                    Some(Space::Dict { spaces }) => spaces.get(key),
                    _ => None,
                };
                write_action(out, part, part_space);
            }
            out.push(b'}');
        }
    }
}

/// A request without arguments (`state`, `close`) and a newline.
pub fn write_op(out: &mut Vec<u8>, id: u64, op: &str) {
    write_head(out, id, op);
    out.extend_from_slice(b"}\n");
}

/// Parses one reply line. NaN and infinity literals are accepted (Python's `json.dumps` writes
/// them by default); nesting is limited to 256 levels.
pub fn parse_line(line: &[u8]) -> Result<Value, lockstep_canon::ParseError> {
    let options = lockstep_canon::ParseOptions {
        allow_nan: true,
        ..Default::default()
    };
    lockstep_canon::parse_with(line, &options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep::env::ArrayData;

    fn parse(s: &str) -> Value {
        parse_line(s.as_bytes()).unwrap()
    }

    const HELLO: &str = r#"{"protocol":"lockstep/1","ok":true,"env_id":"gymnasium:X","config":{"k":1},
        "agents":[{"name":"b","action_space":{"type":"box","dtype":"float32","shape":[2],"low":[-1,"-Infinity"],"high":[1.5,"Infinity"]},"observation_space":{}},
                  {"name":"a","action_space":{"type":"discrete","n":3,"start":-1},"observation_space":{"obs":{"type":"multi_discrete","nvec":[2,2]}}}],
        "contract":{"name":"c","version":2,"fields":["np_random"]}}"#;

    #[test]
    fn handshake_declares_sorted_agents_and_spaces() {
        let h = parse_handshake(&parse(HELLO)).unwrap();
        assert_eq!(h.env_id, "gymnasium:X");
        assert_eq!(h.agents[0].name, "a");
        assert_eq!(
            h.agents[0].action_space,
            Space::Discrete { n: 3, start: -1 }
        );
        assert_eq!(
            h.agents[1].action_space,
            Space::Box {
                dtype: "float32".into(),
                shape: vec![2],
                low: vec![-1.0, f64::NEG_INFINITY],
                high: vec![1.5, f64::INFINITY],
            }
        );
        assert_eq!(h.contract.fields, Some(vec!["np_random".to_string()]));
        assert_eq!(h.contract.version, 2);
    }

    /// Tuple, Dict and Sequence spaces parse recursively; a bad part is named by its pointer.
    #[test]
    fn composite_spaces_parse_and_errors_name_the_part() {
        let v = parse(
            r#"{"type":"dict","spaces":{"move":{"type":"discrete","n":4},
                "pair":{"type":"tuple","spaces":[{"type":"multi_discrete","nvec":[2]},
                        {"type":"sequence","space":{"type":"box","dtype":"float32","shape":[1],"low":[0],"high":[1]}}]}}}"#,
        );
        let space = parse_space(&v, "/s").unwrap();
        let want = Space::Dict {
            spaces: BTreeMap::from([
                ("move".to_string(), Space::Discrete { n: 4, start: 0 }),
                (
                    "pair".to_string(),
                    Space::Tuple {
                        spaces: vec![
                            Space::MultiDiscrete { nvec: vec![2] },
                            Space::Sequence {
                                space: Box::new(Space::Box {
                                    dtype: "float32".into(),
                                    shape: vec![1],
                                    low: vec![0.0],
                                    high: vec![1.0],
                                }),
                            },
                        ],
                    },
                ),
            ]),
        };
        assert_eq!(space, want);
        let bad = parse(
            r#"{"type":"dict","spaces":{"a/b":{"type":"tuple","spaces":[{"type":"discrete","n":0}]}}}"#,
        );
        let e = parse_space(&bad, "/s").unwrap_err();
        assert_eq!(e.pointer, "/s/spaces/a~1b/spaces/0/n", "{e}");
        let graph = parse(r#"{"type":"sequence","space":{"type":"graph"}}"#);
        let e = parse_space(&graph, "/s").unwrap_err();
        assert_eq!(e.pointer, "/s/space/type");
        assert!(e.message.contains("\"graph\""), "{e}");
        assert!(parse_space(&parse(r#"{"type":"tuple"}"#), "").is_err());
    }

    /// A tuple action is a list of its parts, a dict action an object; a box part is shaped
    /// by its own space.
    #[test]
    fn composite_actions_are_written_part_by_part() {
        let space = parse_space(
            &parse(
                r#"{"type":"dict","spaces":{"k":{"type":"tuple","spaces":[{"type":"discrete","n":3},
                    {"type":"box","dtype":"float32","shape":[1,2],"low":[0,0],"high":[1,1]}]},
                    "s":{"type":"sequence","space":{"type":"multi_discrete","nvec":[2,2]}}}}"#,
            ),
            "",
        )
        .unwrap();
        let spec = EnvSpec {
            id: "x".into(),
            config: Value::Null,
            agents: vec![AgentSpec {
                name: "a".into(),
                action_space: space,
                observation_space: BTreeMap::new(),
            }],
        };
        let action = Action::Dict(BTreeMap::from([
            (
                "k".to_string(),
                Action::Tuple(vec![
                    Action::Discrete(2),
                    Action::Continuous(vec![0.5, 0.25]),
                ]),
            ),
            (
                "s".to_string(),
                Action::Tuple(vec![Action::MultiDiscrete(vec![1, 0])]),
            ),
        ]));
        let mut buf = Vec::new();
        write_step(
            &mut buf,
            3,
            &Actions::from([("a".to_string(), action)]),
            &spec,
        );
        let v = parse(std::str::from_utf8(&buf).unwrap().trim_end());
        assert_eq!(v.pointer("/actions/a/k/0").unwrap().as_i64(), Some(2));
        let arr = decode_array(v.pointer("/actions/a/k/1").unwrap(), "", &mut Vec::new()).unwrap();
        assert_eq!(arr.shape(), &[1, 2]);
        assert_eq!(arr.data(), &ArrayData::F64(vec![0.5, 0.25]));
        assert_eq!(v.pointer("/actions/a/s/0/0").unwrap().as_i64(), Some(1));
        assert_eq!(
            v.pointer("/actions/a/s").unwrap().as_array().unwrap().len(),
            1
        );
    }

    /// `threads` is offered in the handshake and asked for in the upgrade.
    #[test]
    fn threads_are_offered_and_asked_for() {
        assert!(!parse_handshake(&parse(HELLO)).unwrap().threads);
        let offered = HELLO.replacen(
            r#""contract""#,
            r#""upgrades":["lockstep/2"],"threads":true,"contract""#,
            1,
        );
        let h = parse_handshake(&parse(&offered)).unwrap();
        assert!(h.offers_v2() && h.threads);
        let bad = HELLO.replacen(r#""contract""#, r#""threads":1,"contract""#, 1);
        assert_eq!(
            parse_handshake(&parse(&bad)).unwrap_err().pointer,
            "/threads"
        );
        let mut buf = Vec::new();
        write_upgrade(&mut buf, 1, true);
        assert_eq!(
            buf,
            b"{\"id\":1,\"op\":\"upgrade\",\"protocol\":\"lockstep/2\",\"threads\":true}\n"
        );
        write_upgrade(&mut buf, 2, false);
        assert_eq!(
            buf,
            b"{\"id\":2,\"op\":\"upgrade\",\"protocol\":\"lockstep/2\"}\n"
        );
        // Only the parallel check's instances ask for a thread of their own.
        write_create(&mut buf, 3, true);
        assert_eq!(buf, b"{\"id\":3,\"op\":\"create\",\"thread\":true}\n");
        write_create(&mut buf, 4, false);
        assert_eq!(buf, b"{\"id\":4,\"op\":\"create\"}\n");
    }

    #[test]
    fn wrong_version_is_named_before_anything_else() {
        let e = parse_handshake(&parse(r#"{"protocol":"lockstep/99","ok":true}"#)).unwrap_err();
        assert_eq!(e.pointer, "/protocol");
        assert!(e.message.contains("lockstep/99"), "{e}");
    }

    #[test]
    fn missing_fields_are_named_by_pointer() {
        let mut v = parse(HELLO);
        if let Value::Object(m) = &mut v {
            if let Some(Value::Array(agents)) = m.get_mut("agents") {
                if let Value::Object(a) = &mut agents[1] {
                    a.remove("action_space");
                }
            }
        }
        let e = parse_handshake(&v).unwrap_err();
        assert_eq!(e.pointer, "/agents/1");
        assert!(e.message.contains("action_space"));
    }

    fn spec() -> EnvSpec {
        parse_handshake(&parse(HELLO)).unwrap().spec()
    }

    #[test]
    fn transition_reads_arrays_rewards_and_logs() {
        // float32 [1.5, -2.0] = 0x3fc00000, 0xc0000000 little-endian.
        let line = r#"{"ok":true,"agents":{"a":{"obs":{"obs":{"dtype":"float32","shape":[2],"data":"AADAPwAAAMA="}},
            "reward":0.1,"terminated":false,"truncated":true,"info":{"n":1}},
            "b":{"obs":{},"reward":null,"reward_bits":"7ff8000000000001","terminated":true,"truncated":false}},"logs":["x"]}"#;
        let mut v = parse(line);
        assert!(matches!(reply(&v), Ok(Reply::Ok(_))));
        let Value::Object(map) = &mut v else { panic!() };
        let mut t = Transition::default();
        read_transition(map, &spec(), &mut t, &mut Vec::new()).unwrap();
        let a = &t.agents["a"];
        assert_eq!(a.obs["obs"].data(), &ArrayData::F32(vec![1.5, -2.0]));
        assert_eq!(a.reward.to_bits(), 0.1f64.to_bits());
        assert!(a.truncated && !a.terminated);
        assert_eq!(t.agents["b"].reward.to_bits(), 0x7ff8000000000001);
        assert_eq!(t.logs, vec!["x".to_string()]);
    }

    #[test]
    fn unchanged_arrays_keep_their_revision_and_changed_ones_are_rewritten() {
        let step = |data: &str, shape: &str| {
            format!(
                r#"{{"ok":true,"agents":{{"a":{{"obs":{{"o":{{"dtype":"float32","shape":{shape},"data":"{data}"}}}},"reward":0,"terminated":false,"truncated":false}}}}}}"#
            )
        };
        let mut t = Transition::default();
        let mut scratch = Vec::new();
        let mut read = |line: String, t: &mut Transition| {
            let mut v = parse(&line);
            let Value::Object(map) = &mut v else { panic!() };
            read_transition(map, &spec(), t, &mut scratch).unwrap();
        };
        read(step("AADAPwAAAMA=", "[2]"), &mut t);
        let first = t.agents["a"].obs["o"].revision();
        read(step("AADAPwAAAMA=", "[2]"), &mut t);
        assert_eq!(
            t.agents["a"].obs["o"].revision(),
            first,
            "same bytes, same revision"
        );
        read(step("AADAPwAAAAA=", "[2]"), &mut t);
        let o = &t.agents["a"].obs["o"];
        assert_ne!(o.revision(), first);
        assert_eq!(o.data(), &ArrayData::F32(vec![1.5, 0.0]));
        read(step("AADAPw==", "[1]"), &mut t);
        assert_eq!(t.agents["a"].obs["o"].data(), &ArrayData::F32(vec![1.5]));
    }

    #[test]
    fn wrong_array_size_unknown_agent_and_missing_reward_are_errors() {
        let cases = [
            (
                r#"{"ok":true,"agents":{"a":{"obs":{"o":{"dtype":"float32","shape":[3],"data":"AADAPwAAAMA="}},"reward":0,"terminated":false,"truncated":false}}}"#,
                "/agents/a/obs/o/data",
                "needs 12",
            ),
            (
                r#"{"ok":true,"agents":{"zz":{"obs":{},"reward":0,"terminated":false,"truncated":false}}}"#,
                "/agents/zz",
                "not declared",
            ),
            (
                r#"{"ok":true,"agents":{"a":{"obs":{},"terminated":false,"truncated":false}}}"#,
                "/agents/a",
                "`reward`",
            ),
            (
                r#"{"ok":true,"agents":{"a":{"obs":{"o":{"dtype":"complex64","shape":[],"data":""}},"reward":0,"terminated":false,"truncated":false}}}"#,
                "/agents/a/obs/o/dtype",
                "complex64",
            ),
        ];
        for (line, pointer, text) in cases {
            let mut v = parse(line);
            let Value::Object(map) = &mut v else { panic!() };
            let e = read_transition(map, &spec(), &mut Transition::default(), &mut Vec::new())
                .unwrap_err();
            assert_eq!(e.pointer, pointer, "{line}");
            assert!(e.message.contains(text), "{e}");
        }
    }

    #[test]
    fn failed_reply_carries_the_error() {
        let v = parse(r#"{"ok":false,"error":"ValueError: x","traceback":"T"}"#);
        assert_eq!(
            reply(&v).unwrap(),
            Reply::Failed {
                error: "ValueError: x".into(),
                traceback: Some("T".into())
            }
        );
        assert!(reply(&parse("[1]")).is_err());
        assert!(reply(&parse("{}")).is_err());
    }

    #[test]
    fn requests_are_json_lines() {
        let mut buf = Vec::new();
        let options = parse(r#"{"b":[1.0,2],"a":null}"#);
        write_reset(&mut buf, 7, Some(u64::MAX), &options).unwrap();
        assert_eq!(
            buf,
            b"{\"id\":7,\"op\":\"reset\",\"seed\":18446744073709551615,\"options\":{\"a\":null,\"b\":[1.0,2]}}\n"
        );
        let mut actions = Actions::new();
        actions.insert("a".into(), Action::Discrete(-1));
        actions.insert("b".into(), Action::Continuous(vec![0.5, -0.25]));
        actions.insert("c\"".into(), Action::MultiDiscrete(vec![1, 0]));
        write_step(&mut buf, 8, &actions, &spec());
        let text = std::str::from_utf8(&buf).unwrap();
        assert!(text.ends_with("}}\n"));
        let v = parse(text.trim_end());
        assert_eq!(v.pointer("/actions/a").unwrap().as_i64(), Some(-1));
        assert!(check_id(&v, 8).is_ok());
        assert!(check_id(&v, 9)
            .unwrap_err()
            .message
            .contains("carries id 8"));
        let arr = decode_array(v.pointer("/actions/b").unwrap(), "", &mut Vec::new()).unwrap();
        assert_eq!(arr.data(), &ArrayData::F64(vec![0.5, -0.25]));
        assert_eq!(arr.shape(), &[2]);
        assert_eq!(v.pointer("/actions/c\"/1").unwrap().as_i64(), Some(0));
        write_op(&mut buf, 9, "state");
        assert_eq!(buf, b"{\"id\":9,\"op\":\"state\"}\n");
    }
}
