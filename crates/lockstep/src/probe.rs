//! Probed layers: state that lockstep reads from a real system (a database, a directory, an
//! HTTP service, a browser) instead of asking the environment to serialise it.
//!
//! A contract layer may name a probe (`probe = "sqlite"`) with its settings (`path`, `url`,
//! ...). Before a starting state is checked and fingerprinted, every probed layer is read and
//! its snapshot placed under the layer's name ([`probe_state`]), so that it is hashed and
//! diffed like any field: a difference is located inside the layer (`/server/users/2/visits`).
//!
//! This crate knows no concrete probe and links no database or browser client: it defines the
//! [`Probe`] trait and the [`ProbeSet`] a front end fills (the CLI and the Python package wire
//! in `lockstep-layers`). A probe reads and never writes, and it never answers with an empty
//! snapshot when it cannot read: every failure is a [`ProbeError`] naming the layer, the probe
//! and the cause.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_canon::Value;

use crate::contract::Contract;

/// How a contract says to read one layer: the probe's name and its settings, as written in
/// the contract file (every key of the layer but `name`, `fields` and `probe`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProbeSpec {
    /// The probe's name (`files`, `sqlite`, `http`, `postgres`, `browser`).
    pub probe: String,
    /// The probe's settings; each probe checks its own and refuses unknown ones.
    #[serde(flatten)]
    pub settings: BTreeMap<String, serde_json::Value>,
    /// The directory relative paths in the settings are resolved against: the contract file's
    /// directory, or empty (the working directory) for a contract built in code or from text.
    #[serde(skip)]
    pub base_dir: PathBuf,
}

impl ProbeSpec {
    /// A spec built in code; paths in `settings` are best absolute.
    pub fn new(
        probe: impl Into<String>,
        settings: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> ProbeSpec {
        ProbeSpec {
            probe: probe.into(),
            settings: settings.into_iter().collect(),
            base_dir: PathBuf::new(),
        }
    }

    /// Refuses settings the probe does not know (a misspelt `pth` must not be ignored).
    pub fn allow_only(&self, known: &[&str]) -> Result<(), String> {
        match self.settings.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(format!(
                "unknown setting `{k}` (known: {})",
                known.join(", ")
            )),
            None => Ok(()),
        }
    }

    /// A string setting, `None` when absent; another type is an error.
    pub fn string(&self, key: &str) -> Result<Option<&str>, String> {
        match self.settings.get(key) {
            None => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!("setting `{key}` must be a string, not {other}")),
        }
    }

    /// A string setting that must be present.
    pub fn required_string(&self, key: &str) -> Result<&str, String> {
        self.string(key)?
            .ok_or_else(|| format!("setting `{key}` is missing"))
    }

    /// A list of strings, `None` when absent.
    pub fn strings(&self, key: &str) -> Result<Option<Vec<String>>, String> {
        let bad = || format!("setting `{key}` must be a list of strings");
        match self.settings.get(key) {
            None => Ok(None),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(bad()),
        }
    }

    /// A path setting resolved against [`ProbeSpec::base_dir`] (an absolute path stays).
    pub fn required_path(&self, key: &str) -> Result<PathBuf, String> {
        Ok(self.resolve(Path::new(self.required_string(key)?)))
    }

    /// `path` relative to the contract file's directory.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.base_dir.join(path)
        }
    }
}

/// A way to read one kind of system.
pub trait Probe: Send + Sync {
    /// The name contract files give in `probe = "..."`.
    fn name(&self) -> &'static str;

    /// Reads the system `spec` points at, without changing it, into a canonical snapshot: the
    /// same state gives the same value whatever order it was built in. Every failure (the
    /// system is unreachable, malformed, a setting is wrong) is an error with its cause, never
    /// an empty snapshot.
    fn snapshot(&self, spec: &ProbeSpec) -> Result<Value, String>;
}

/// The probes a front end wires in, by name.
#[derive(Default)]
pub struct ProbeSet {
    probes: Vec<Box<dyn Probe>>,
}

impl std::fmt::Debug for ProbeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl ProbeSet {
    pub fn new() -> ProbeSet {
        ProbeSet::default()
    }

    /// Adds a probe; a later probe of the same name replaces the earlier one.
    pub fn with(mut self, probe: Box<dyn Probe>) -> ProbeSet {
        self.probes.retain(|p| p.name() != probe.name());
        self.probes.push(probe);
        self
    }

    pub fn get(&self, name: &str) -> Option<&dyn Probe> {
        self.probes
            .iter()
            .find(|p| p.name() == name)
            .map(|p| p.as_ref())
    }

    /// The names of the probes, in the order they were added.
    pub fn names(&self) -> Vec<&'static str> {
        self.probes.iter().map(|p| p.name()).collect()
    }

    /// Reads one layer with the probe its spec names.
    pub fn snapshot(&self, layer: &str, spec: &ProbeSpec) -> Result<Value, ProbeError> {
        let error = |cause: String| ProbeError {
            layer: layer.to_owned(),
            probe: spec.probe.clone(),
            cause,
        };
        let probe = self.get(&spec.probe).ok_or_else(|| {
            error(if self.probes.is_empty() {
                "no probes are wired in here (lockstep's CLI wires lockstep-layers)".into()
            } else {
                format!("unknown probe (known: {})", self.names().join(", "))
            })
        })?;
        probe.snapshot(spec).map_err(error)
    }
}

/// A probed layer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("layer `{layer}` (probe {probe}): {cause}")]
pub struct ProbeError {
    pub layer: String,
    pub probe: String,
    pub cause: String,
}

/// Every probed layer of `contract`, read in declaration order: `(layer name, snapshot)`.
pub fn snapshot_layers(
    contract: &Contract,
    probes: &ProbeSet,
) -> Result<Vec<(String, Value)>, ProbeError> {
    contract
        .layers
        .iter()
        .filter_map(|l| l.probe.as_ref().map(|spec| (l, spec)))
        .map(|(l, spec)| Ok((l.name.clone(), probes.snapshot(&l.name, spec)?)))
        .collect()
}

/// The starting state the contract covers: the env's own `state` (an object) with every
/// probed layer's snapshot placed under the layer's name. A contract without probed layers
/// gives `state` back unchanged. The env's state must not already hold a key a probed layer
/// fills: that would lose one of the two.
pub fn probe_state(
    contract: &Contract,
    probes: &ProbeSet,
    state: Value,
) -> Result<Value, ProbeError> {
    if !contract.has_probed_layers() {
        return Ok(state);
    }
    let snapshots = snapshot_layers(contract, probes)?;
    let mut map = match state {
        Value::Object(m) => m,
        // Only probed layers: an env with nothing of its own to report.
        Value::Null => lockstep_canon::Map::new(),
        other => {
            let (layer, probe) = first_probed(contract);
            return Err(ProbeError {
                layer,
                probe,
                cause: format!(
                    "the env's state is not a JSON object ({}), so a snapshot has no place in it",
                    kind(&other)
                ),
            });
        }
    };
    for (layer, snapshot) in snapshots {
        if map.contains_key(&layer) {
            let probe = contract
                .layers
                .iter()
                .find(|l| l.name == layer)
                .and_then(|l| l.probe.as_ref())
                .map(|s| s.probe.clone())
                .unwrap_or_default();
            return Err(ProbeError {
                layer: layer.clone(),
                probe,
                cause: format!(
                    "the env's state already has a top-level `{layer}`, where this layer's \
                     snapshot goes; rename the layer or the env's key"
                ),
            });
        }
        map.insert(layer, snapshot);
    }
    Ok(Value::Object(map))
}

fn first_probed(contract: &Contract) -> (String, String) {
    contract
        .layers
        .iter()
        .find_map(|l| l.probe.as_ref().map(|s| (l.name.clone(), s.probe.clone())))
        .unwrap_or_default()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_canon::Map;

    struct Constant(&'static str, Result<Value, String>);

    impl Probe for Constant {
        fn name(&self) -> &'static str {
            self.0
        }
        fn snapshot(&self, spec: &ProbeSpec) -> Result<Value, String> {
            spec.allow_only(&["path"])?;
            self.1.clone()
        }
    }

    const TOML: &str = r#"name = "c"
version = 1
profile = "python"

[[layers]]
name = "task"
fields = ["seed"]

[[layers]]
name = "server"
probe = "fake"
path = "app.db"
"#;

    fn contract() -> Contract {
        Contract::from_toml_str(TOML, "c.toml").unwrap()
    }

    fn state() -> Value {
        let mut m = Map::new();
        m.insert("seed".into(), Value::from(3));
        Value::Object(m)
    }

    #[test]
    fn snapshots_go_under_the_layer_name() {
        let probes = ProbeSet::new().with(Box::new(Constant("fake", Ok(Value::from(7)))));
        let got = probe_state(&contract(), &probes, state()).unwrap();
        assert_eq!(got.get("server"), Some(&Value::from(7)));
        assert_eq!(got.get("seed"), Some(&Value::from(3)));
        assert!(contract().check(&got).conforms());
        assert_eq!(
            probe_state(&contract(), &probes, Value::Null)
                .unwrap()
                .get("server"),
            Some(&Value::from(7))
        );
    }

    #[test]
    fn failures_name_layer_probe_and_cause() {
        let probes = ProbeSet::new().with(Box::new(Constant("fake", Err("file missing".into()))));
        let err = probe_state(&contract(), &probes, state()).unwrap_err();
        assert_eq!(err.to_string(), "layer `server` (probe fake): file missing");

        let err = probe_state(&contract(), &ProbeSet::new(), state()).unwrap_err();
        assert!(err.to_string().contains("no probes are wired in"), "{err}");
        let other = ProbeSet::new().with(Box::new(Constant("files", Ok(Value::Null))));
        let err = probe_state(&contract(), &other, state()).unwrap_err();
        assert!(
            err.to_string().contains("unknown probe (known: files)"),
            "{err}"
        );

        let probes = ProbeSet::new().with(Box::new(Constant("fake", Ok(Value::from(7)))));
        let mut clash = state();
        if let Value::Object(m) = &mut clash {
            m.insert("server".into(), Value::Null);
        }
        let err = probe_state(&contract(), &probes, clash).unwrap_err();
        assert!(
            err.to_string().contains("already has a top-level `server`"),
            "{err}"
        );
        let err = probe_state(&contract(), &probes, Value::from(1)).unwrap_err();
        assert!(err.to_string().contains("not a JSON object"), "{err}");
    }

    #[test]
    fn settings_are_checked_by_the_probe() {
        let text = TOML.replace("path = ", "pth = ");
        let c = Contract::from_toml_str(&text, "c.toml").unwrap();
        let probes = ProbeSet::new().with(Box::new(Constant("fake", Ok(Value::Null))));
        let err = probe_state(&c, &probes, state()).unwrap_err();
        assert!(
            err.to_string()
                .contains("unknown setting `pth` (known: path)"),
            "{err}"
        );
    }

    #[test]
    fn paths_resolve_against_the_contract_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, TOML).unwrap();
        let c = Contract::load(&file).unwrap();
        let spec = c.layers[1].probe.as_ref().unwrap();
        assert_eq!(
            spec.required_path("path").unwrap(),
            dir.path().join("app.db")
        );
        assert!(spec
            .required_path("url")
            .unwrap_err()
            .contains("`url` is missing"));
    }
}
