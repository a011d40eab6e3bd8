//! Reset contracts: a versioned list of what a starting state contains.
//!
//! A fingerprint only covers what it hashes, so the contract comes first: it names the layers
//! and fields of the starting state and the canonical profile that hashes them, and a state is
//! checked against it (missing and unexpected fields) before any hash is compared. A hash over
//! the wrong set of fields proves nothing, however equal it is.
//!
//! Fields are the top-level keys of the state object. A field covers its whole value, however
//! deeply nested: a `server` field holding `{"records": [...]}` is fingerprinted with every
//! record in it, and a diff still reports `/server/records/3` when one record differs. Nested
//! field declarations are deliberately not supported: they would let a contract leave part of
//! an object unchecked, which is the failure contracts exist to prevent.
//!
//! Contract files are TOML or JSON, chosen by extension (docs/contract.md):
//!
//! ```toml
//! name = "seed-000-fixture"
//! version = 1
//! profile = "python"
//!
//! [[layers]]
//! name = "task"
//! fields = ["seed", "target"]
//!
//! [[layers]]
//! name = "client"
//! fields = ["cache"]
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use lockstep_canon::{Map, Profile, Value};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use crate::diff::push_token;
use crate::fingerprint::{fingerprint_record, Fingerprint};
use crate::probe::ProbeSpec;

/// Which canonical JSON profile a contract's fingerprints use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileName {
    Python,
    Jcs,
}

impl ProfileName {
    /// The name used in contract files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileName::Python => "python",
            ProfileName::Jcs => "jcs",
        }
    }

    /// The canonical serialisation this name stands for. `python` keeps Python's defaults
    /// (NaN and infinities written as words), so a digest computed with
    /// `json.dumps(state, sort_keys=True, separators=(',', ':'))` agrees.
    pub fn profile(self) -> Profile {
        match self {
            ProfileName::Python => Profile::Python,
            ProfileName::Jcs => Profile::Jcs,
        }
    }
}

impl fmt::Display for ProfileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One layer of state (a cookie jar, a server record, a cache): its top-level fields in the
/// env's state, and/or a probe that reads it from the real system ([`crate::probe`]).
///
/// A probed layer's snapshot is placed under the layer's own name, which is then a top-level
/// key of the starting state like a field.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Layer {
    pub name: String,
    pub fields: Vec<String>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeSpec>,
}

impl Layer {
    /// A layer of env fields, read from the env's `state()`.
    pub fn fields(name: impl Into<String>, fields: &[&str]) -> Layer {
        Layer {
            name: name.into(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
            probe: None,
        }
    }

    /// A layer read by a probe; its snapshot goes under `name`.
    pub fn probed(name: impl Into<String>, probe: ProbeSpec) -> Layer {
        Layer {
            name: name.into(),
            fields: Vec::new(),
            probe: Some(probe),
        }
    }

    /// The top-level keys this layer covers: its snapshot's key (the layer's name) when
    /// probed, then its fields.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.probe
            .as_ref()
            .map(|_| self.name.as_str())
            .into_iter()
            .chain(self.fields.iter().map(String::as_str))
    }
}

/// A versioned reset contract.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Contract {
    pub name: String,
    pub version: u32,
    pub profile: ProfileName,
    pub layers: Vec<Layer>,
    /// How episodes are compared (`[compare]`): part of the contract, so covered by its
    /// version.
    #[serde(skip_serializing_if = "Compare::is_empty")]
    pub compare: Compare,
}

/// A contract's `[compare]` table.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Compare {
    /// Fields left out of every comparison and digest, as `--ignore` gives them
    /// ([`crate::ignore`]): what the env is meant to vary (a wall-clock stamp).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
}

impl Compare {
    pub fn is_empty(&self) -> bool {
        self.ignore.is_empty()
    }
}

/// Why a contract could not be loaded or is not valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContractError {
    /// The file could not be read. The cause is part of the message and is not exposed as
    /// `source()`: an error chain printer (anyhow's `{:#}`) would print it twice.
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// The extension names no contract format.
    #[error("{path}: unknown contract format (expected a .toml or .json file)")]
    UnknownFormat { path: PathBuf },
    /// The text is malformed or breaks a rule; `line` and `column` are 1-based.
    #[error("{origin}:{line}:{column}: {message}")]
    At {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A contract built in code breaks a rule.
    #[error("contract {name:?}: {message}")]
    Invalid { name: String, message: String },
}

/// How a state measures up against a contract: JSON Pointers of declared fields the state
/// lacks (declaration order) and of keys it has that no layer declares (key order).
///
/// A state that is not an object lacks every field and reports the root pointer `""` as
/// unexpected.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Conformance {
    pub missing: Vec<String>,
    pub unexpected: Vec<String>,
}

impl Conformance {
    /// True when nothing is missing and nothing unexpected.
    pub fn conforms(&self) -> bool {
        self.missing.is_empty() && self.unexpected.is_empty()
    }

    /// `{"conforms": bool, "missing": [...], "unexpected": [...]}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("conforms".into(), Value::Bool(self.conforms()));
        m.insert("missing".into(), strings(&self.missing));
        m.insert("unexpected".into(), strings(&self.unexpected));
        Value::Object(m)
    }
}

/// A JSON integer for any `u64` (beyond `i64` as a big integer).
pub(crate) fn uint(n: u64) -> Value {
    match i64::try_from(n) {
        Ok(i) => Value::Number(lockstep_canon::Number::Int(i)),
        Err(_) => Value::Number(lockstep_canon::Number::BigInt(n.to_string().into())),
    }
}

/// A JSON array of strings.
pub(crate) fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

/// The JSON Pointer of a top-level key.
pub fn field_pointer(field: &str) -> String {
    let mut p = String::new();
    push_token(&mut p, field);
    p
}

impl Contract {
    /// Builds a contract in code, checking the same rules as a contract file.
    pub fn new(
        name: impl Into<String>,
        version: u32,
        profile: ProfileName,
        layers: Vec<Layer>,
    ) -> Result<Contract, ContractError> {
        let c = Contract {
            name: name.into(),
            version,
            profile,
            layers,
            compare: Compare::default(),
        };
        c.validate()?;
        Ok(c)
    }

    /// A one-layer contract (`state`) declaring exactly the top-level keys of `state`, for an
    /// environment that ships no contract: it then checks that the key set survives a reset
    /// and fingerprints everything. Not an object -> a contract with no fields.
    pub fn inferred(name: impl Into<String>, state: &Value) -> Contract {
        let fields = match state {
            Value::Object(m) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        Contract {
            name: name.into(),
            version: 1,
            profile: ProfileName::Python,
            layers: vec![Layer {
                name: "state".into(),
                fields,
                probe: None,
            }],
            compare: Compare::default(),
        }
    }

    /// Checks the rules every contract obeys: a non-empty name, version 1 or more, at least one
    /// layer, unique non-empty layer names, non-empty fields each declared once across all
    /// layers.
    pub fn validate(&self) -> Result<(), ContractError> {
        let invalid = |message: String| ContractError::Invalid {
            name: self.name.clone(),
            message,
        };
        if self.name.is_empty() {
            return Err(invalid("name must not be empty".into()));
        }
        if self.version == 0 {
            return Err(invalid("version must be 1 or more".into()));
        }
        let mut seen = LayerSeen::default();
        for layer in &self.layers {
            seen.add(layer).map_err(invalid)?;
        }
        seen.finish().map_err(invalid)
    }

    /// Loads a contract file: `.toml` or `.json` by extension. Errors name the file and the
    /// line and column of the problem.
    pub fn load(path: &Path) -> Result<Contract, ContractError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        let bytes = std::fs::read(path).map_err(|cause| ContractError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        let origin = path.display().to_string();
        let mut contract = match ext.as_deref() {
            Some("toml") => {
                let text = std::str::from_utf8(&bytes).map_err(|e| {
                    let (line, column) = line_column(&bytes, e.valid_up_to());
                    ContractError::At {
                        origin: origin.clone(),
                        line,
                        column,
                        message: "file is not valid UTF-8".into(),
                    }
                })?;
                Contract::from_toml_str(text, &origin)
            }
            Some("json") => Contract::from_json_slice(&bytes, &origin),
            _ => Err(ContractError::UnknownFormat {
                path: path.to_path_buf(),
            }),
        }?;
        // Probe paths are relative to the contract file.
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        for spec in contract.layers.iter_mut().filter_map(|l| l.probe.as_mut()) {
            spec.base_dir = dir.clone();
        }
        Ok(contract)
    }

    /// Parses a TOML contract; `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Contract, ContractError> {
        let raw: RawContract = toml::from_str(text).map_err(|e| {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            let (line, column) = line_column(text.as_bytes(), offset);
            ContractError::At {
                origin: origin.to_string(),
                line,
                column,
                // toml's messages can span lines ("invalid string\nexpected ..."): keep one.
                message: e
                    .message()
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
            }
        })?;
        Ok(raw.into_contract())
    }

    /// Parses a JSON contract; `origin` names it in errors. The text must first be strict
    /// JSON (lockstep's own parser: no duplicate keys, no lone surrogates); the structure is
    /// then read with serde, which reports the position of a wrong or missing member.
    pub fn from_json_slice(bytes: &[u8], origin: &str) -> Result<Contract, ContractError> {
        lockstep_canon::parse(bytes).map_err(|e| ContractError::At {
            origin: origin.to_string(),
            line: e.line,
            column: e.column,
            message: e.message,
        })?;
        let raw: RawContract = serde_json::from_slice(bytes).map_err(|e| ContractError::At {
            origin: origin.to_string(),
            line: e.line().max(1),
            column: e.column().max(1),
            message: strip_serde_position(&e.to_string()),
        })?;
        Ok(raw.into_contract())
    }

    /// The TOML text of this contract (the `contract.toml` format).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a contract is plain strings and integers")
    }

    /// Every top-level key the contract covers, layer by layer, in declaration order: a
    /// probed layer's name (where its snapshot goes), then the layer's fields.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.layers.iter().flat_map(Layer::keys)
    }

    /// The layer that covers the top-level key `field`.
    pub fn layer_of(&self, field: &str) -> Option<&str> {
        self.layers
            .iter()
            .find(|l| l.keys().any(|f| f == field))
            .map(|l| l.name.as_str())
    }

    /// True when some layer is read by a probe ([`crate::probe::probe_state`]).
    pub fn has_probed_layers(&self) -> bool {
        self.layers.iter().any(|l| l.probe.is_some())
    }

    /// Orders field names the way the contract declares them; names it does not declare
    /// follow in their given order. Used for a diff's `different_fields`, so a report reads
    /// layer by layer rather than alphabetically.
    pub fn order_fields(&self, fields: &[String]) -> Vec<String> {
        let rank = |f: &str| self.fields().position(|d| d == f).unwrap_or(usize::MAX);
        let mut out = fields.to_vec();
        // A stable sort keeps undeclared names in their given order.
        out.sort_by_key(|f| rank(f));
        out
    }

    /// Missing and unexpected fields of `state`. Run it before comparing fingerprints.
    pub fn check(&self, state: &Value) -> Conformance {
        match state {
            Value::Object(m) => Conformance {
                missing: self
                    .fields()
                    .filter(|f| !m.contains_key(*f))
                    .map(field_pointer)
                    .collect(),
                unexpected: m
                    .keys()
                    .filter(|k| self.layer_of(k).is_none())
                    .map(|k| field_pointer(k))
                    .collect(),
            },
            _ => Conformance {
                missing: self.fields().map(field_pointer).collect(),
                unexpected: vec![String::new()],
            },
        }
    }

    /// SHA-256 of `state`'s canonical bytes in the contract's profile, recorded with the
    /// contract's name and version. Hashes the whole state: check conformance first, so that
    /// "whole state" and "the contracted fields" are the same thing.
    pub fn fingerprint(&self, state: &Value) -> Result<Fingerprint, lockstep_canon::WriteError> {
        let mut record = fingerprint_record(state, self.profile.profile())?;
        record.contract = Some(self.name.clone());
        record.contract_version = Some(self.version);
        Ok(record)
    }

    /// `{"name", "version", "profile", "layers": [{"name", "fields"}]}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("version".into(), uint(u64::from(self.version)));
        m.insert(
            "profile".into(),
            Value::String(self.profile.as_str().into()),
        );
        let layers = self
            .layers
            .iter()
            .map(|l| {
                let mut lm = Map::new();
                lm.insert("name".into(), Value::String(l.name.clone()));
                lm.insert("fields".into(), strings(&l.fields));
                if let Some(spec) = &l.probe {
                    lm.insert("probe".into(), Value::String(spec.probe.clone()));
                    let settings = spec
                        .settings
                        .iter()
                        .map(|(k, v)| {
                            let v = lockstep_canon::to_value(v).unwrap_or(Value::Null);
                            (k.clone(), v)
                        })
                        .collect();
                    lm.insert("settings".into(), Value::Object(settings));
                }
                Value::Object(lm)
            })
            .collect();
        m.insert("layers".into(), Value::Array(layers));
        Value::Object(m)
    }
}

/// 1-based line and column (in characters) of byte `offset` in `bytes`.
fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

/// serde_json appends " at line L column C" to its messages; we print the position first.
fn strip_serde_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

// --- file formats -------------------------------------------------------------------------
//
// The rules are enforced while deserialising, so that both toml and serde_json attach the
// position of the offending value to the error.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContract {
    name: NonEmpty,
    version: Version,
    profile: ProfileName,
    layers: Layers,
    #[serde(default)]
    compare: RawCompare,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCompare {
    #[serde(default)]
    ignore: IgnoreList,
}

/// `ignore = [...]`, each pattern checked where it is written.
#[derive(Default)]
struct IgnoreList(Vec<String>);

impl<'de> Deserialize<'de> for IgnoreList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let patterns = Vec::<String>::deserialize(d)?;
        crate::ignore::Ignore::parse(&patterns).map_err(de::Error::custom)?;
        Ok(IgnoreList(patterns))
    }
}

impl RawContract {
    fn into_contract(self) -> Contract {
        Contract {
            name: self.name.0,
            version: self.version.0,
            profile: self.profile,
            layers: self.layers.0,
            compare: Compare {
                ignore: self.compare.ignore.0,
            },
        }
    }
}

struct NonEmpty(String);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Err(de::Error::custom("must not be an empty string"));
        }
        Ok(NonEmpty(s))
    }
}

struct Version(u32);

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u32::deserialize(d)?;
        if v == 0 {
            return Err(de::Error::custom(
                "version must be 1 or more (bump it whenever the fields change)",
            ));
        }
        Ok(Version(v))
    }
}

struct Layers(Vec<Layer>);

impl<'de> Deserialize<'de> for Layers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Layers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of layers, each with a name and fields")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Layers, A::Error> {
                let mut seen = LayerSeen::default();
                let mut out = Vec::new();
                while let Some(layer) = seq.next_element_seed(LayerSeed { seen: &seen })? {
                    seen.add(&layer).map_err(de::Error::custom)?;
                    out.push(layer);
                }
                seen.finish().map_err(de::Error::custom)?;
                Ok(Layers(out))
            }
        }
        d.deserialize_seq(V)
    }
}

/// One layer, read knowing the layers before it, so that a field declared twice is reported
/// at the field itself.
struct LayerSeed<'a> {
    seen: &'a LayerSeen,
}

impl<'de> de::DeserializeSeed<'de> for LayerSeed<'_> {
    type Value = Layer;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Layer, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LayerSeed<'_> {
    type Value = Layer;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a layer: a table with `name` and `fields` and/or `probe`")
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Layer, A::Error> {
        const KNOWN: &[&str] = &["name", "fields", "probe"];
        let mut name: Option<String> = None;
        let mut fields: Option<Vec<String>> = None;
        let mut probe: Option<String> = None;
        let mut settings = std::collections::BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" if name.is_some() => return Err(de::Error::duplicate_field("name")),
                "name" => {
                    let n = map.next_value::<NonEmpty>()?.0;
                    // Reported at this layer's name, not at the first layer's line.
                    if self.seen.layers.contains(&n) {
                        return Err(de::Error::custom(format!("layer `{n}` is declared twice")));
                    }
                    name = Some(n);
                }
                "fields" if fields.is_some() => return Err(de::Error::duplicate_field("fields")),
                "fields" => fields = Some(map.next_value_seed(FieldsSeed { seen: self.seen })?),
                "probe" if probe.is_some() => return Err(de::Error::duplicate_field("probe")),
                "probe" => probe = Some(map.next_value::<NonEmpty>()?.0),
                _ => {
                    // A probe's settings; which ones it accepts is the probe's business, but
                    // a layer without a probe has none.
                    let value: serde_json::Value = map.next_value()?;
                    if value.is_null() {
                        return Err(de::Error::custom(format!("setting `{key}` is null")));
                    }
                    if settings.insert(key.clone(), value).is_some() {
                        return Err(de::Error::custom(format!("duplicate setting `{key}`")));
                    }
                }
            }
        }
        let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
        if probe.is_none() {
            if let Some(key) = settings.keys().next() {
                return Err(de::Error::unknown_field(key, KNOWN));
            }
        }
        if let Some(owner) = self.seen.owner(&name).filter(|_| probe.is_some()) {
            return Err(de::Error::custom(format!(
                "probed layer `{name}` puts its snapshot under `{name}`, \
                 which layer `{owner}` already declares as a field"
            )));
        }
        let fields = match (fields, &probe) {
            (Some(f), _) => f,
            (None, Some(_)) => Vec::new(),
            (None, None) => {
                return Err(de::Error::custom(format!(
                    "layer `{name}` needs `fields`, a `probe`, or both"
                )))
            }
        };
        Ok(Layer {
            name,
            fields,
            probe: probe.map(|probe| ProbeSpec {
                probe,
                settings,
                base_dir: Default::default(),
            }),
        })
    }
}

struct FieldsSeed<'a> {
    seen: &'a LayerSeen,
}

impl<'de> de::DeserializeSeed<'de> for FieldsSeed<'_> {
    type Value = Vec<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<String>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for FieldsSeed<'_> {
    type Value = Vec<String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of field names")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        let mut out: Vec<String> = Vec::new();
        while let Some(NonEmpty(field)) = seq.next_element()? {
            if let Some(message) = pointer_like(&field) {
                return Err(de::Error::custom(message));
            }
            if let Some(owner) = self.seen.owner(&field) {
                return Err(de::Error::custom(format!(
                    "field `{field}` is already declared in layer `{owner}`"
                )));
            }
            if out.contains(&field) {
                return Err(de::Error::custom(format!(
                    "field `{field}` is declared twice in this layer"
                )));
            }
            out.push(field);
        }
        Ok(out)
    }
}

/// Fields are top-level keys; a name that looks like a JSON Pointer is almost certainly an
/// attempt to declare a nested field, which contracts do not support (see the module doc).
fn pointer_like(field: &str) -> Option<String> {
    let top = field
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    field.starts_with('/').then(|| {
        format!(
            "field `{field}` looks like a JSON Pointer; fields are top-level keys \
             (declare `{top}` to cover everything under it)"
        )
    })
}

/// Cross-layer rules, shared by files and contracts built in code.
#[derive(Default)]
struct LayerSeen {
    layers: Vec<String>,
    fields: Vec<(String, String)>,
}

impl LayerSeen {
    fn add(&mut self, layer: &Layer) -> Result<(), String> {
        if layer.name.is_empty() {
            return Err("a layer name must not be empty".into());
        }
        if self.layers.contains(&layer.name) {
            return Err(format!("layer `{}` is declared twice", layer.name));
        }
        for field in layer.keys() {
            if field.is_empty() {
                return Err(format!(
                    "layer `{}` declares an empty field name",
                    layer.name
                ));
            }
            if let Some((_, owner)) = self.fields.iter().find(|(f, _)| f == field) {
                if layer.probe.is_some() && field == layer.name {
                    return Err(format!(
                        "probed layer `{field}` puts its snapshot under `{field}`, \
                         which layer `{owner}` already declares as a field"
                    ));
                }
                return Err(if *owner == layer.name {
                    format!("field `{field}` is declared twice in layer `{owner}`")
                } else {
                    format!(
                        "field `{field}` is declared in layer `{owner}` and again in layer `{}`",
                        layer.name
                    )
                });
            }
            self.fields.push((field.to_owned(), layer.name.clone()));
        }
        self.layers.push(layer.name.clone());
        Ok(())
    }

    fn owner(&self, field: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, owner)| owner.as_str())
    }

    fn finish(&self) -> Result<(), String> {
        if self.layers.is_empty() {
            return Err("a contract needs at least one layer".into());
        }
        if self.fields.is_empty() {
            return Err("a contract needs at least one field".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_canon::Number;

    const TOML: &str = r#"name = "fixture"
version = 2
profile = "python"

[[layers]]
name = "task"
fields = ["seed", "target"]

[[layers]]
name = "client"
fields = ["cache"]
"#;

    fn obj(keys: &[&str]) -> Value {
        Value::Object(
            keys.iter()
                .map(|k| (k.to_string(), Value::Number(Number::Int(0))))
                .collect(),
        )
    }

    fn toml_err(text: &str) -> (usize, usize, String) {
        match Contract::from_toml_str(text, "c.toml").unwrap_err() {
            ContractError::At {
                line,
                column,
                message,
                ..
            } => (line, column, message),
            other => panic!("unexpected error {other}"),
        }
    }

    #[test]
    fn loads_toml_in_declaration_order() {
        let c = Contract::from_toml_str(TOML, "c.toml").unwrap();
        assert_eq!(c.name, "fixture");
        assert_eq!(c.version, 2);
        assert_eq!(c.profile, ProfileName::Python);
        assert_eq!(c.fields().collect::<Vec<_>>(), ["seed", "target", "cache"]);
        assert_eq!(c.layer_of("cache"), Some("client"));
        assert_eq!(Contract::from_toml_str(&c.to_toml(), "x").unwrap(), c);
    }

    #[test]
    fn toml_errors_name_line_column_and_problem() {
        let (line, col, msg) = toml_err(&TOML.replace("version = 2", "version = 0"));
        assert_eq!((line, col), (2, 11), "{msg}");
        assert!(msg.contains("version must be 1 or more"), "{msg}");

        let (line, _, msg) = toml_err(&TOML.replace("name = \"fixture\"\n", ""));
        assert_eq!(line, 1);
        assert!(msg.contains("missing field `name`"), "{msg}");

        let (line, col, msg) = toml_err(&TOML.replace("\"python\"", "\"sha1\""));
        assert_eq!((line, col), (3, 11), "{msg}");
        assert!(msg.contains("unknown variant `sha1`"), "{msg}");

        let (line, _, msg) = toml_err(&TOML.replace("[\"cache\"]", "[\"cache\", \"seed\"]"));
        assert_eq!(line, 11, "{msg}");
        assert!(
            msg.contains("field `seed` is already declared in layer `task`"),
            "{msg}"
        );
        let (line, _, msg) = toml_err(&TOML.replace("[\"cache\"]", "[\"cache\", \"cache\"]"));
        assert_eq!(line, 11, "{msg}");
        assert!(msg.contains("declared twice in this layer"), "{msg}");
        // Issue 9: a duplicate layer was reported at the first layer's line.
        let dup = TOML.replace("name = \"client\"", "name = \"task\"");
        let (line, _, msg) = toml_err(&dup);
        assert!(
            msg.contains("layer `task` is declared twice"),
            "{line}: {msg}"
        );
        let second = dup
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim() == "[[layers]]")
            .nth(1)
            .map(|(i, _)| i + 1)
            .unwrap();
        assert_eq!(line, second, "at the second layer: {msg}");

        let (line, _, msg) = toml_err(&TOML.replace("[\"cache\"]", "[\"/server/records\"]"));
        assert_eq!(line, 11);
        assert!(
            msg.contains("declare `server` to cover everything"),
            "{msg}"
        );

        let (_, _, msg) = toml_err(&TOML.replace("fields = [\"cache\"]", "feilds = [\"cache\"]"));
        assert!(msg.contains("unknown field `feilds`"), "{msg}");

        let (line, _, msg) = toml_err("name = \"x\"\nversion = = 1\n");
        assert_eq!(line, 2);
        assert!(!msg.contains('\n'), "{msg}");
    }

    #[test]
    fn rules_apply_to_contracts_built_in_code() {
        let layer = Layer::fields;
        assert!(Contract::new("x", 1, ProfileName::Jcs, vec![layer("a", &["f"])]).is_ok());
        let err = Contract::new("x", 0, ProfileName::Jcs, vec![layer("a", &["f"])]).unwrap_err();
        assert!(err.to_string().contains("version must be 1"));
        let err = Contract::new("x", 1, ProfileName::Jcs, vec![]).unwrap_err();
        assert!(err.to_string().contains("at least one layer"));
        let err = Contract::new(
            "x",
            1,
            ProfileName::Jcs,
            vec![layer("a", &["f"]), layer("a", &["g"])],
        )
        .unwrap_err();
        assert!(err.to_string().contains("layer `a` is declared twice"));
        let err = Contract::new("", 1, ProfileName::Jcs, vec![layer("a", &["f"])]).unwrap_err();
        assert!(err.to_string().contains("name must not be empty"));
    }

    #[test]
    fn check_reports_missing_and_unexpected_by_pointer() {
        let c = Contract::from_toml_str(TOML, "c.toml").unwrap();
        assert!(c.check(&obj(&["cache", "seed", "target"])).conforms());
        let got = c.check(&obj(&["seed", "a/b", "zz"]));
        assert_eq!(got.missing, ["/target", "/cache"]);
        assert_eq!(got.unexpected, ["/a~1b", "/zz"]);
        assert!(!got.conforms());
        let got = c.check(&Value::Null);
        assert_eq!(got.missing.len(), 3);
        assert_eq!(got.unexpected, [""]);
    }

    #[test]
    fn orders_fields_by_declaration() {
        let c = Contract::from_toml_str(TOML, "c.toml").unwrap();
        let got = c.order_fields(&["zeta".into(), "cache".into(), "alpha".into(), "seed".into()]);
        assert_eq!(got, ["seed", "cache", "zeta", "alpha"]);
    }

    #[test]
    fn inferred_contract_declares_the_state_keys() {
        let c = Contract::inferred("env", &obj(&["b", "a"]));
        assert_eq!(c.fields().collect::<Vec<_>>(), ["a", "b"]);
        assert!(c.check(&obj(&["a", "b"])).conforms());
    }

    fn json_err(text: &str) -> (usize, usize, String) {
        match Contract::from_json_slice(text.as_bytes(), "c.json").unwrap_err() {
            ContractError::At {
                line,
                column,
                message,
                ..
            } => (line, column, message),
            other => panic!("unexpected error {other}"),
        }
    }

    const JSON: &str = r#"{
  "name": "fixture",
  "version": 1,
  "profile": "jcs",
  "layers": [
    {"name": "task", "fields": ["seed", "target"]},
    {"name": "client", "fields": ["cache"]}
  ]
}"#;

    #[test]
    fn loads_json_and_positions_its_errors() {
        let c = Contract::from_json_slice(JSON.as_bytes(), "c.json").unwrap();
        assert_eq!(c.profile, ProfileName::Jcs);
        assert_eq!(c.fields().collect::<Vec<_>>(), ["seed", "target", "cache"]);

        let (line, _, msg) = json_err(&JSON.replace("\"version\": 1", "\"version\": 0"));
        assert_eq!(line, 3, "{msg}");
        assert!(msg.contains("version must be 1 or more"), "{msg}");

        let (line, _, msg) = json_err(&JSON.replace("\"jcs\"", "\"md5\""));
        assert_eq!(line, 4, "{msg}");
        assert!(msg.contains("unknown variant `md5`"), "{msg}");

        let (_, _, msg) = json_err(&JSON.replace("\"name\": \"fixture\",", ""));
        assert!(msg.contains("missing field `name`"), "{msg}");

        let (line, _, msg) = json_err(&JSON.replace("[\"cache\"]", "[\"target\"]"));
        assert_eq!(line, 7, "{msg}");
        assert!(
            msg.contains("field `target` is already declared in layer `task`"),
            "{msg}"
        );

        // Syntax errors come from the strict parser, duplicate keys included.
        let (line, _, _) = json_err("{\n  \"name\": \"a\",\n  \"name\": \"b\"\n}");
        assert_eq!(line, 3);
        let (line, _, _) = json_err("{\n  \"name\": ,\n}");
        assert_eq!(line, 2);
    }

    #[test]
    fn fingerprint_matches_python_hashlib() {
        // hashlib.sha256(json.dumps(dict(seed=0, target=0, cookies={}, visits=0, cache=None),
        //     sort_keys=True, separators=(',', ':')).encode()).hexdigest()
        let c = Contract::from_toml_str(TOML, "c.toml").unwrap();
        let state: Value = [
            ("seed", Value::from(0)),
            ("target", Value::from(0)),
            ("cookies", Value::Object(Map::new())),
            ("visits", Value::from(0)),
            ("cache", Value::Null),
        ]
        .into_iter()
        .collect();
        let record = c.fingerprint(&state).unwrap();
        assert_eq!(
            record.digest,
            "883a3d08bbd807946dd5a3669440dec971af35a281fd0f3e15fb58c15eb08ac6"
        );
        assert_eq!(record.contract_version, Some(2));
        assert_eq!(record.profile, "python");
    }

    #[test]
    fn file_errors_state_their_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::create_dir(&path).unwrap();
        let err = Contract::load(&path).unwrap_err();
        assert!(
            std::error::Error::source(&err).is_none(),
            "the cause is in the message, not in the chain: {err}"
        );
        let message = err.to_string();
        let ContractError::Io { cause, .. } = &err else {
            panic!("not an io error: {err}")
        };
        assert_eq!(message.matches(&cause.to_string()).count(), 1, "{message}");
        assert!(
            message.starts_with(&path.display().to_string()),
            "{message}"
        );
    }

    const PROBED: &str = r#"name = "web"
version = 1
profile = "python"

[[layers]]
name = "task"
fields = ["seed"]

[[layers]]
name = "server"
probe = "sqlite"
path = "app.db"
tables = ["users"]
"#;

    #[test]
    fn probed_layers_cover_their_own_name() {
        let c = Contract::from_toml_str(PROBED, "c.toml").unwrap();
        assert!(c.has_probed_layers());
        assert_eq!(c.fields().collect::<Vec<_>>(), ["seed", "server"]);
        assert_eq!(c.layer_of("server"), Some("server"));
        let spec = c.layers[1].probe.as_ref().unwrap();
        assert_eq!(spec.probe, "sqlite");
        assert_eq!(spec.string("path").unwrap(), Some("app.db"));
        assert_eq!(spec.strings("tables").unwrap().unwrap(), ["users"]);
        assert_eq!(Contract::from_toml_str(&c.to_toml(), "x").unwrap(), c);
        assert_eq!(
            c.to_value().pointer("/layers/1/settings/path"),
            Some(&Value::from("app.db"))
        );

        // Settings without a probe are unknown keys; a layer needs fields or a probe.
        let (line, _, msg) = toml_err(&PROBED.replace("probe = \"sqlite\"\n", ""));
        assert!(msg.contains("unknown field `path`"), "{line}: {msg}");
        let (_, _, msg) = toml_err(&PROBED.replace(
            "probe = \"sqlite\"\npath = \"app.db\"\ntables = [\"users\"]\n",
            "",
        ));
        assert!(msg.contains("needs `fields`, a `probe`, or both"), "{msg}");
        // The snapshot's key must not be a field of another layer, before or after.
        let (_, _, msg) = toml_err(&PROBED.replace("[\"seed\"]", "[\"seed\", \"server\"]"));
        assert!(
            msg.contains("probed layer `server` puts its snapshot under `server`"),
            "{msg}"
        );
        let text = format!("{PROBED}\n[[layers]]\nname = \"x\"\nfields = [\"server\"]\n");
        let (_, _, msg) = toml_err(&text);
        assert!(msg.contains("already declared in layer `server`"), "{msg}");

        let json = r#"{"name":"w","version":1,"profile":"jcs","layers":[
            {"name":"db","probe":"postgres","url":"postgresql://127.0.0.1/app"}]}"#;
        let c = Contract::from_json_slice(json.as_bytes(), "c.json").unwrap();
        assert_eq!(c.fields().collect::<Vec<_>>(), ["db"]);
        let (line, _, msg) = json_err(&json.replace("\"postgresql://127.0.0.1/app\"", "null"));
        assert!(msg.contains("setting `url` is null"), "{line}: {msg}");
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column(b"ab\ncd", 4), (2, 2));
        assert_eq!(line_column("é\nx".as_bytes(), 2), (1, 2));
        assert_eq!(line_column(b"", 0), (1, 1));
    }
}
