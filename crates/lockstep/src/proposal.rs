//! A proposed reset contract (`lockstep contract infer`): the env's state fields, plus a probed
//! layer for every resource outside its process that it was seen touching, each with where.
//!
//! The seed document's lesson is that the layers that matter (a cookie, a server record, a
//! cached file) are the ones nobody declared. The effects recorder sees them; this turns what
//! it saw into the contract file of docs/contract.md, for a person to review and for
//! `lockstep check --contract` to audit. Written as text rather than through
//! [`Contract::to_toml`], because each layer carries a comment saying where it was seen.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cause::Effect;
use crate::contract::Contract;

/// One resource the env touched, and the sites that touched it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resource {
    probe: &'static str,
    /// An absolute path (files, sqlite) or an endpoint (`http://127.0.0.1:8080`, `host:5432`).
    target: String,
    /// Probe-able as it stands: false for what lives in the env's private directories (a
    /// fresh home per process) or needs a person to complete (an HTTP route, credentials).
    active: bool,
    why_inactive: Option<&'static str>,
    seen: Vec<String>,
}

/// What the proposal is built from.
pub struct Observed<'a> {
    /// The env's id (its handshake `env_id`), the contract's name.
    pub env_id: &'a str,
    /// The contract the env declares or the one inferred from its state: its fields.
    pub fields: Vec<String>,
    /// Every effect seen, over every seed.
    pub effects: &'a [Effect],
    /// How it was run, for the header comment.
    pub how: String,
    /// The env ran in the caller's directories (`--shared-dirs`): its home, temp and working
    /// directories are the ones a probe in the checking process reads.
    pub shared_dirs: bool,
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// What lives where a fresh process gets a fresh copy (`~`, `$TMPDIR`, its working directory
/// `./`): the leftover check covers it, and a probe in the checking process would read another
/// directory, or one that no longer exists.
fn private(target: &str) -> bool {
    ["~", "$TMPDIR", "."]
        .iter()
        .any(|p| target == *p || target.starts_with(&format!("{p}/")))
}

fn seen_at(e: &Effect) -> String {
    let site = e
        .site(std::env::current_dir().ok().as_deref())
        .unwrap_or_else(|| "(no frame of the env's code)".into());
    format!("{} {} during {} at {site}", e.kind, e.target, e.phase)
}

/// The resources of `effects`, one per directory written, database file and endpoint, in the
/// order first seen.
fn resources(effects: &[Effect], shared_dirs: bool) -> Vec<Resource> {
    let mut out: Vec<Resource> = Vec::new();
    let mut add = |probe: &'static str, target: String, active, why, e: &Effect| {
        let seen = seen_at(e);
        match out
            .iter_mut()
            .find(|r| r.probe == probe && r.target == target)
        {
            Some(r) => {
                if !r.seen.contains(&seen) {
                    r.seen.push(seen);
                }
            }
            None => out.push(Resource {
                probe,
                target,
                active,
                why_inactive: why,
                seen: vec![seen],
            }),
        }
    };
    // An effect of a layer the env names (its browser) is read through that layer already,
    // and a device that keeps nothing (`/dev/null`) holds no state to probe.
    for e in effects
        .iter()
        .filter(|e| e.layer.is_none() && e.leaves_state())
    {
        let is_private = !shared_dirs && private(&e.target);
        let why_private = is_private.then_some(
            "in the env's private directories (a fresh home and temp per process: the leftover check covers them); to probe it, run both `contract infer` and `check` with --shared-dirs",
        );
        match e.kind.as_str() {
            "file_write" | "file_delete" | "file_rename" | "directory_create" => {
                let Some(path) = &e.path else { continue };
                let dir = if e.kind == "directory_create" {
                    PathBuf::from(path)
                } else {
                    Path::new(path)
                        .parent()
                        .map_or_else(|| PathBuf::from(path), Path::to_path_buf)
                };
                add(
                    "files",
                    dir.display().to_string(),
                    !is_private,
                    why_private,
                    e,
                );
            }
            "sqlite" => {
                let Some(path) = &e.path else { continue };
                add("sqlite", path.clone(), !is_private, why_private, e);
            }
            "http" => add(
                "http",
                crate::cause::effects::loopback_port_hidden(&e.target),
                false,
                Some("an HTTP service: set `url` to a route that answers GET with the service's state as JSON, then uncomment"),
                e,
            ),
            "socket" if e.target.ends_with(":5432") => add(
                "postgres",
                e.target.clone(),
                false,
                Some("a PostgreSQL server: set `url` to postgresql://USER@HOST:PORT/DB, then uncomment"),
                e,
            ),
            _ => {}
        }
    }
    // A directory the env only created, around another resource, is that resource's
    // parent, not a layer: a files probe of it would read the database file beside the cache
    // twice, and a database file's bytes move where its rows do not.
    let holds_another = |r: &Resource, all: &[Resource]| {
        all.iter()
            .any(|o| o.target != r.target && Path::new(&o.target).starts_with(Path::new(&r.target)))
    };
    let only_created = |r: &Resource| r.seen.iter().all(|s| s.starts_with("directory_create "));
    let keep: Vec<bool> = out
        .iter()
        .map(|r| !(r.probe == "files" && only_created(r) && holds_another(r, &out)))
        .collect();
    out.into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

/// A layer name from the resource's last path part or host, unique among `taken`.
fn layer_name(r: &Resource, taken: &mut Vec<String>) -> String {
    let stem = match r.probe {
        "files" | "sqlite" => Path::new(&r.target)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into()),
        _ => r
            .target
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .to_string(),
    };
    let clean: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let base = format!(
        "{}_{clean}",
        match r.probe {
            "files" => "dir",
            "sqlite" => "db",
            other => other,
        }
    );
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    taken.push(name.clone());
    name
}

/// The proposed contract as TOML text (docs/contract.md), every layer commented with where it
/// was seen; layers that need a person (an HTTP route, credentials, a private directory) are
/// written commented out, with what to fill in. The text parses with [`Contract::from_toml_str`].
pub fn propose(observed: &Observed<'_>) -> String {
    let mut out = String::new();
    out.push_str("# A reset contract proposed by `lockstep contract infer` (docs/contract.md).\n");
    out.push_str(&format!("# From: {}\n", observed.how));
    out.push_str(
        "# Review it: each layer says where the env was seen touching it. Bump `version` when you\n# change the layers.\n",
    );
    out.push_str(&format!("name = {}\n", toml_str(observed.env_id)));
    out.push_str("version = 1\nprofile = \"python\"\n\n");
    out.push_str("# The env's state after a reset: every field it declares, or every attribute.\n");
    out.push_str("[[layers]]\nname = \"state\"\nfields = [");
    out.push_str(
        &observed
            .fields
            .iter()
            .map(|f| toml_str(f))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.push_str("]\n");
    let mut taken: Vec<String> = observed.fields.clone();
    taken.push("state".into());
    let mut keys: BTreeMap<&str, &str> = BTreeMap::new();
    keys.insert("files", "path");
    keys.insert("sqlite", "path");
    keys.insert("http", "url");
    keys.insert("postgres", "url");
    for r in resources(observed.effects, observed.shared_dirs) {
        let name = layer_name(&r, &mut taken);
        out.push('\n');
        for s in &r.seen {
            out.push_str(&format!("# seen: {s}\n"));
        }
        let target = match r.probe {
            "http" => format!("{}/", r.target.trim_end_matches('/')),
            "postgres" => format!("postgresql://USER@{}/DB", r.target),
            _ => r.target.clone(),
        };
        let body = format!(
            "[[layers]]\nname = {}\nprobe = \"{}\"\n{} = {}\n",
            toml_str(&name),
            r.probe,
            keys[r.probe],
            toml_str(&target)
        );
        if r.active {
            out.push_str(&body);
        } else {
            if let Some(why) = r.why_inactive {
                out.push_str(&format!("# not active: {why}\n"));
            }
            for line in body.lines() {
                out.push_str(&format!("# {line}\n"));
            }
        }
    }
    out
}

/// What `seeds` trials of an env show (each on a fresh instance: a reset, `steps` steps, a
/// reset again, as the audit plays it): its id, the fields of its state and every effect, in
/// the order seen. An error when the env records no effects (only Python envs served by
/// `lockstep_adapter` do).
pub fn observe(
    factory: &dyn crate::env::EnvFactory,
    seeds: &[u64],
    steps: u64,
) -> Result<(String, Vec<String>, Vec<Effect>), String> {
    let mut fields: Option<Vec<String>> = None;
    let mut effects: Vec<Effect> = Vec::new();
    let mut env_id = factory.id();
    for &seed in seeds {
        let mut env = factory.make().map_err(|e| e.to_string())?;
        env_id = env.spec().id.clone();
        let opts = crate::trace::RolloutOptions::default();
        crate::trace::rollout(env.as_mut(), seed, steps, &opts).map_err(|e| e.to_string())?;
        env.reset(seed, &lockstep_canon::Value::Null)
            .map_err(|e| e.to_string())?;
        if fields.is_none() {
            fields = Some(match env.contract() {
                Some(c) => fields_of(&c),
                None => {
                    let state = env.state().map_err(|e| e.to_string())?;
                    fields_of(&Contract::inferred(env_id.clone(), &state))
                }
            });
        }
        let seen = env.effects().map_err(|e| e.to_string())?.ok_or_else(|| {
            format!("{env_id} records no effects (only Python envs served by lockstep_adapter do): nothing to infer layers from")
        })?;
        let _ = env.close();
        for v in &seen {
            let e: Effect = lockstep_canon::from_value(v)
                .map_err(|err| format!("an effect the env sent cannot be read: {err}"))?;
            match effects.iter_mut().find(|x| {
                (&x.phase, &x.kind, &x.target, &x.file, x.line, &x.layer)
                    == (&e.phase, &e.kind, &e.target, &e.file, e.line, &e.layer)
            }) {
                Some(x) => x.count += e.count,
                None => effects.push(e),
            }
        }
    }
    Ok((env_id, fields.unwrap_or_default(), effects))
}

/// The declared fields of a contract (not its probed layers' snapshots), in order.
pub fn fields_of(contract: &Contract) -> Vec<String> {
    contract
        .layers
        .iter()
        .flat_map(|l| l.fields.iter().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(kind: &str, target: &str, path: Option<&str>) -> Effect {
        Effect {
            phase: "reset".into(),
            kind: kind.into(),
            target: target.into(),
            path: path.map(str::to_string),
            file: Some("/proj/env.py".into()),
            line: Some(12),
            function: Some("reset".into()),
            count: 1,
            layer: None,
        }
    }

    #[test]
    fn every_resource_gets_a_layer_and_the_text_is_a_contract() {
        let effects = [
            effect(
                "file_write",
                "/data/cache/choice.json",
                Some("/data/cache/choice.json"),
            ),
            effect(
                "file_delete",
                "/data/cache/choice.json",
                Some("/data/cache/choice.json"),
            ),
            effect("sqlite", "/data/app.db", Some("/data/app.db")),
            effect("http", "http://127.0.0.1:4000", None),
            // A subprocess's plumbing, no layer.
            effect("file_write", "/dev/null", Some("/dev/null")),
            effect(
                "file_write",
                "~/.cache/x/y.json",
                Some("/tmp/home/.cache/x/y.json"),
            ),
            // The env's own browser layer: its profile and endpoint are no new layers.
            Effect {
                layer: Some("browser".into()),
                phase: "step".into(),
                ..effect("directory_create", "<profile>", Some("/tmp/profile-1"))
            },
            Effect {
                layer: Some("browser".into()),
                phase: "step".into(),
                ..effect("http", "http://127.0.0.1:<port>", None)
            },
        ];
        let text = propose(&Observed {
            env_id: "gymnasium:twin",
            fields: vec!["cached".into(), "t".into()],
            effects: &effects,
            how: "2 seeds".into(),
            shared_dirs: false,
        });
        let c = Contract::from_toml_str(&text, "proposed.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let probed: Vec<(&str, &str)> = c
            .layers
            .iter()
            .filter_map(|l| {
                l.probe
                    .as_ref()
                    .map(|p| (l.name.as_str(), p.probe.as_str()))
            })
            .collect();
        assert_eq!(
            probed,
            [("dir_cache", "files"), ("db_app", "sqlite")],
            "{text}"
        );
        assert!(text.contains("# seen: file_write /data/cache/choice.json during reset at /proj/env.py:12 in reset"), "{text}");
        assert!(
            text.contains("# url = \"http://127.0.0.1:<port>/\""),
            "{text}"
        );
        assert!(
            text.contains("# not active: in the env's private directories"),
            "{text}"
        );
        assert!(
            !text.contains("during step") && !text.contains("profile-1") && !text.contains("/dev"),
            "{text}"
        );
        assert_eq!(fields_of(&c), ["cached", "t"]);
    }

    #[test]
    fn a_layer_name_never_takes_a_field_name() {
        let effects = [effect("sqlite", "/d/state.db", Some("/d/state.db"))];
        let text = propose(&Observed {
            env_id: "x",
            fields: vec!["db_state".into()],
            effects: &effects,
            how: String::new(),
            shared_dirs: false,
        });
        assert!(text.contains("name = \"db_state_2\""), "{text}");
        Contract::from_toml_str(&text, "p.toml").unwrap();
    }
}
