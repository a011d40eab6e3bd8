//! The `webtask` env: one agent, one action (`0`: do the task), an episode of one step.
//!
//! The step plays the experiment's scripted policy in the browser: load the task page (a
//! visit), use the cached choice if `cache/choice.json` exists, else read the target from the
//! page, click that button and cache the choice. The server decides success: the target
//! clicked on the first visit. Then the contamination of the experiment: a `previous_run`
//! cookie in the browser, seven extra visits in the database and, on odd seeds, the cached
//! choice flipped to the wrong side.
//!
//! Resets: `webtask` (complete) builds a fresh database from the seed, a fresh browser
//! context and an empty cache; `webtask:partial-reset` clears the cookies and the visit
//! counter but keeps the cache, so odd seeds fail their repeat and every repeat's starting
//! state differs in the client layer alone.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockstep::contract::{Contract, Layer, ProfileName};
use lockstep::env::{
    Action, Actions, AgentSpec, AgentStep, Array, ArrayData, Env, EnvError, EnvSpec, Space,
    Transition,
};
use lockstep::probe::{Probe, ProbeSet, ProbeSpec};
use lockstep_canon::{Map, Value};
use lockstep_layers::cdp::Cdp;
use lockstep_layers::process::{monotonic_now, ChildGuard};
use serde_json::{json, Value as Json};

use crate::server::SCHEMA;

/// The env names: complete reset, and the faulty partial reset.
pub const ENV_NAMES: [&str; 2] = ["webtask", "webtask:partial-reset"];

const AGENT: &str = "agent";
const SIDES: [&str; 2] = ["left", "right"];
const TIMEOUT: Duration = Duration::from_secs(15);

/// How [`WebTask`] resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetMode {
    Complete,
    Partial,
}

/// The seed-000 task on a real server, database, browser and cache file.
pub struct WebTask {
    spec: EnvSpec,
    mode: ResetMode,
    contract: Contract,
    probes: ProbeSet,
    context: Arc<Mutex<Option<String>>>,
    cdp: Cdp,
    session: Option<String>,
    port: u16,
    db: PathBuf,
    cache: PathBuf,
    seed: Option<u64>,
    done: bool,
    transition: Transition,
    // Dropped last, in this order: the server dies, then its files go.
    _server: ChildGuard,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for WebTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebTask")
            .field("id", &self.spec.id)
            .finish()
    }
}

impl WebTask {
    /// The env for a name of [`ENV_NAMES`]; `None` for another name.
    pub fn mode_of(name: &str) -> Option<ResetMode> {
        match name {
            "webtask" => Some(ResetMode::Complete),
            "webtask:partial-reset" => Some(ResetMode::Partial),
            _ => None,
        }
    }

    /// Starts the server (`server_command` followed by `--db PATH`: the `lockstep` binary's
    /// hidden `webtask-server` subcommand, or `lockstep-webtask-server`) and connects to this
    /// process's Chromium. Chromium missing is an error naming the install command.
    pub fn new(mode: ResetMode, server_command: &[OsString]) -> Result<WebTask, EnvError> {
        let fail = |e: String| EnvError::new(format!("webtask: {e}"));
        let endpoint = crate::shared_browser::endpoint().map_err(fail)?;
        let cdp = Cdp::connect(&endpoint, TIMEOUT).map_err(fail)?;
        let dir = tempfile::Builder::new()
            .prefix("lockstep-webtask-")
            .tempdir()
            .map_err(|e| fail(format!("cannot create a directory: {e}")))?;
        let db = dir.path().join("app.db");
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).map_err(|e| fail(format!("cannot create the cache: {e}")))?;
        write_database(&db, 0, 0).map_err(fail)?;
        let (server, port) = start_server(server_command, &db).map_err(fail)?;
        let context = Arc::new(Mutex::new(None));
        let contract = contract(&db, &cache, &endpoint);
        let probes = lockstep_layers::probes().with(Box::new(ContextBrowser {
            context: Arc::clone(&context),
        }));
        let id = match mode {
            ResetMode::Complete => ENV_NAMES[0],
            ResetMode::Partial => ENV_NAMES[1],
        };
        let mut config = Map::new();
        config.insert(
            "reset".into(),
            Value::from(match mode {
                ResetMode::Complete => "complete",
                ResetMode::Partial => "partial",
            }),
        );
        let int64 = |low: f64, high: f64| Space::Box {
            dtype: "int64".into(),
            shape: vec![1],
            low: vec![low],
            high: vec![high],
        };
        Ok(WebTask {
            spec: EnvSpec {
                id: id.into(),
                config: Value::Object(config),
                agents: vec![AgentSpec {
                    name: AGENT.into(),
                    action_space: Space::Discrete { n: 1, start: 0 },
                    observation_space: [
                        ("choice".to_string(), int64(-1.0, 1.0)),
                        ("target".to_string(), int64(0.0, 1.0)),
                    ]
                    .into_iter()
                    .collect(),
                }],
            },
            mode,
            contract,
            probes,
            context,
            cdp,
            session: None,
            port,
            db,
            cache,
            seed: None,
            done: true,
            transition: Transition::default(),
            _server: server,
            _dir: dir,
        })
    }

    fn err(&self, e: String) -> EnvError {
        EnvError::new(format!("{}: {e}", self.spec.id))
    }

    /// A fresh browser context with one blank page, replacing the old context.
    fn fresh_context(&mut self) -> Result<(), String> {
        let old = self
            .context
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(old) = old {
            self.cdp.call(
                "Target.disposeBrowserContext",
                json!({"browserContextId": old}),
            )?;
        }
        let created = self.cdp.call("Target.createBrowserContext", json!({}))?;
        let ctx = text(&created, "browserContextId")?;
        let target = self.cdp.call(
            "Target.createTarget",
            json!({"url": "about:blank", "browserContextId": ctx}),
        )?;
        let target = text(&target, "targetId")?;
        let attached = self.cdp.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        )?;
        self.session = Some(text(&attached, "sessionId")?);
        *self.context.lock().unwrap_or_else(|p| p.into_inner()) = Some(ctx);
        Ok(())
    }

    fn context_id(&self) -> Result<String, String> {
        self.context
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| "no browser context before the first reset".into())
    }

    /// Evaluates `expression` in the page; its value as JSON.
    fn eval(&mut self, expression: &str) -> Result<Json, String> {
        let got = self.cdp.call_in(
            self.session.as_deref(),
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        )?;
        if let Some(e) = got.get("exceptionDetails") {
            return Err(format!("the page threw evaluating `{expression}`: {e}"));
        }
        Ok(got.pointer("/result/value").cloned().unwrap_or(Json::Null))
    }

    /// Waits until `expression` is truthy in the page; returns its value.
    fn wait_for(&mut self, expression: &str) -> Result<Json, String> {
        let start = monotonic_now();
        loop {
            let v = self.eval(expression)?;
            if !matches!(&v, Json::Null | Json::Bool(false)) && v != json!("") {
                return Ok(v);
            }
            if start.elapsed() > TIMEOUT {
                return Err(format!(
                    "the page did not satisfy `{expression}` within {} s",
                    TIMEOUT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn navigate(&mut self, url: &str) -> Result<(), String> {
        let session = self.session.clone();
        let got = self
            .cdp
            .call_in(session.as_deref(), "Page.navigate", json!({"url": url}))?;
        if let Some(e) = got.get("errorText").and_then(Json::as_str) {
            return Err(format!("cannot load {url}: {e}"));
        }
        Ok(())
    }

    /// The scripted policy: the side clicked, whether it came from the cache, success.
    fn play(&mut self) -> Result<(usize, bool, bool), String> {
        let url = format!("http://127.0.0.1:{}/", self.port);
        self.navigate(&url)?;
        self.wait_for(&format!(
            "location.href === {url:?} && document.readyState === 'complete' && !!document.getElementById('target')"
        ))?;
        let cached = read_choice(&self.cache)?;
        let side = match cached {
            Some(side) => side,
            None => {
                let shown = self.eval("document.getElementById('target').textContent")?;
                side_index(shown.as_str().unwrap_or_default())
                    .ok_or_else(|| format!("the page names no target side: {shown}"))?
            }
        };
        self.eval(&format!(
            "document.getElementById({:?}).click()",
            SIDES[side]
        ))?;
        let result = self.wait_for("document.body.dataset.result || ''")?;
        let result: Json = serde_json::from_str(result.as_str().unwrap_or_default())
            .map_err(|e| format!("the server's answer is not JSON: {e}"))?;
        let success = result
            .get("success")
            .and_then(Json::as_bool)
            .ok_or_else(|| format!("the server's answer has no success: {result}"))?;
        if cached.is_none() {
            write_choice(&self.cache, side)?;
        }
        Ok((side, cached.is_some(), success))
    }

    /// The experiment's leftovers before the repeat.
    fn contaminate(&mut self, seed: u64) -> Result<(), String> {
        let ctx = self.context_id()?;
        self.cdp.call(
            "Storage.setCookies",
            json!({"browserContextId": ctx, "cookies": [
                {"name": "previous_run", "value": "true", "domain": "127.0.0.1", "path": "/"}
            ]}),
        )?;
        let conn = rusqlite::Connection::open(&self.db).map_err(|e| e.to_string())?;
        conn.execute("UPDATE visits SET count = count + 7 WHERE id = 1", [])
            .map_err(|e| e.to_string())?;
        if seed % 2 == 1 {
            write_choice(&self.cache, 1 - target_of(seed))?;
        }
        Ok(())
    }

    fn observe(&mut self, choice: i64, reward: f64, done: bool, info: Value) {
        let seed = self.seed.unwrap_or_default();
        let one = |x: i64| Array::new(&[1], ArrayData::I64(vec![x])).expect("shape [1]");
        self.transition.agents = [(
            AGENT.to_string(),
            AgentStep {
                obs: [
                    ("choice".to_string(), one(choice)),
                    ("target".to_string(), one(target_of(seed) as i64)),
                ]
                .into_iter()
                .collect(),
                reward,
                terminated: done,
                truncated: false,
                info,
            },
        )]
        .into_iter()
        .collect();
    }

    fn reset_systems(&mut self, seed: u64) -> Result<(), String> {
        let first = self.seed.is_none();
        if first || self.mode == ResetMode::Complete {
            write_database(&self.db, seed, target_of(seed))?;
            clear_dir(&self.cache)?;
            self.fresh_context()?;
        } else {
            // The faulty reset: cookies and the visit counter only; the cache survives.
            let ctx = self.context_id()?;
            self.cdp
                .call("Storage.clearCookies", json!({"browserContextId": ctx}))?;
            let conn = rusqlite::Connection::open(&self.db).map_err(|e| e.to_string())?;
            conn.execute("UPDATE visits SET count = 0 WHERE id = 1", [])
                .and_then(|_| {
                    conn.execute(
                        "UPDATE task SET seed = ?1, target = ?2 WHERE id = 1",
                        rusqlite::params![seed as i64, SIDES[target_of(seed)]],
                    )
                })
                .map_err(|e| e.to_string())?;
            self.navigate("about:blank")?;
        }
        Ok(())
    }
}

impl Env for WebTask {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn contract(&self) -> Option<Contract> {
        Some(self.contract.clone())
    }

    fn probes(&self) -> Option<&ProbeSet> {
        Some(&self.probes)
    }

    fn reset(&mut self, seed: u64, _options: &Value) -> Result<&Transition, EnvError> {
        self.reset_systems(seed).map_err(|e| self.err(e))?;
        self.seed = Some(seed);
        self.done = false;
        self.transition.logs.clear();
        self.observe(-1, 0.0, false, Value::Object(Map::new()));
        Ok(&self.transition)
    }

    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError> {
        let Some(seed) = self.seed else {
            return Err(self.err("step before the first reset".into()));
        };
        if self.done {
            return Err(self
                .err("step after the episode ended (it ends after one click); call reset".into()));
        }
        match actions.get(AGENT) {
            Some(Action::Discrete(0)) => {}
            other => {
                return Err(self.err(format!(
                    "the action for `{AGENT}` must be Discrete(0), got {other:?}"
                )))
            }
        }
        let (side, cached, success) = self.play().map_err(|e| self.err(e))?;
        self.contaminate(seed).map_err(|e| self.err(e))?;
        self.done = true;
        let mut info = Map::new();
        info.insert("cached".into(), Value::Bool(cached));
        info.insert("choice".into(), Value::from(SIDES[side]));
        info.insert("success".into(), Value::Bool(success));
        self.transition.logs = vec![format!(
            "clicked={} target={} cached={cached} success={success}",
            SIDES[side],
            SIDES[target_of(seed)]
        )];
        self.observe(
            side as i64,
            if success { 1.0 } else { 0.0 },
            true,
            Value::Object(info),
        );
        Ok(&self.transition)
    }

    /// The env's own fields, `seed` and `target`; the server, client and browser layers are
    /// read by the contract's probes.
    fn state(&mut self) -> Result<Value, EnvError> {
        let seed = self
            .seed
            .ok_or_else(|| self.err("no state before the first reset".into()))?;
        let mut m = Map::new();
        m.insert("seed".into(), Value::from(seed));
        m.insert("target".into(), Value::from(target_of(seed) as u64));
        Ok(Value::Object(m))
    }

    fn close(&mut self) -> Result<(), EnvError> {
        let old = self
            .context
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(ctx) = old {
            self.cdp
                .call(
                    "Target.disposeBrowserContext",
                    json!({"browserContextId": ctx}),
                )
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }
}

impl Drop for WebTask {
    fn drop(&mut self) {
        // The shared browser stays; this env's context goes with it.
        let _ = self.close();
    }
}

/// The `browser` probe bound to this env's current context: a complete reset replaces the
/// context, and instances sharing the browser must not see each other's cookies.
struct ContextBrowser {
    context: Arc<Mutex<Option<String>>>,
}

impl Probe for ContextBrowser {
    fn name(&self) -> &'static str {
        "browser"
    }

    fn snapshot(&self, spec: &ProbeSpec) -> Result<Value, String> {
        let ctx = self
            .context
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or("no browser context before the first reset")?;
        let mut bound = spec.clone();
        bound.settings.insert("context".into(), Json::from(ctx));
        lockstep_layers::browser::BrowserProbe.snapshot(&bound)
    }
}

/// The target side of a seed, as in the experiment: `seed % 2` (0 left, 1 right).
pub fn target_of(seed: u64) -> usize {
    (seed % 2) as usize
}

fn side_index(name: &str) -> Option<usize> {
    SIDES.iter().position(|s| *s == name)
}

/// The webtask contract: the env's `task` fields and three probed layers.
fn contract(db: &Path, cache: &Path, endpoint: &str) -> Contract {
    let path = |p: &Path| Json::from(p.display().to_string());
    Contract::new(
        "webtask",
        1,
        ProfileName::Python,
        vec![
            Layer::fields("task", &["seed", "target"]),
            Layer::probed(
                "server",
                ProbeSpec::new("sqlite", [("path".to_string(), path(db))]),
            ),
            Layer::probed(
                "client",
                ProbeSpec::new("files", [("path".to_string(), path(cache))]),
            ),
            Layer::probed(
                "browser",
                ProbeSpec::new("browser", [("cdp".to_string(), Json::from(endpoint))]),
            ),
        ],
    )
    .expect("a valid contract")
}

/// A fresh database for `seed`, replacing the file in one rename (the server never sees half).
fn write_database(db: &Path, seed: u64, target: usize) -> Result<(), String> {
    let fresh = db.with_extension("new");
    let _ = std::fs::remove_file(&fresh);
    let conn = rusqlite::Connection::open(&fresh).map_err(|e| e.to_string())?;
    conn.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
    conn.execute(
        "INSERT INTO task (id, seed, target) VALUES (1, ?1, ?2)",
        rusqlite::params![seed as i64, SIDES[target]],
    )
    .and_then(|_| {
        conn.execute(
            "INSERT INTO visits (id, page, count) VALUES (1, '/', 0)",
            [],
        )
    })
    .map_err(|e| e.to_string())?;
    drop(conn);
    std::fs::rename(&fresh, db).map_err(|e| format!("cannot replace {}: {e}", db.display()))
}

fn read_choice(cache: &Path) -> Result<Option<usize>, String> {
    let file = cache.join("choice.json");
    match std::fs::read(&file) {
        Ok(bytes) => {
            let v: Json = serde_json::from_slice(&bytes)
                .map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
            v.get("side")
                .and_then(Json::as_str)
                .and_then(side_index)
                .map(Some)
                .ok_or_else(|| format!("{}: no `side` left or right", file.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

fn write_choice(cache: &Path, side: usize) -> Result<(), String> {
    let text = format!("{{\"side\": \"{}\"}}\n", SIDES[side]);
    lockstep::atomic_file::write_atomic(&cache.join("choice.json"), text.as_bytes())
        .map_err(|e| format!("cannot write the cache: {e}"))
}

fn clear_dir(dir: &Path) -> Result<(), String> {
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| format!("cannot clear {}: {e}", path.display()))?;
    }
    Ok(())
}

fn text(v: &Json, key: &str) -> Result<String, String> {
    v.get(key)
        .and_then(Json::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("DevTools answered without `{key}`: {v}"))
}

fn start_server(command: &[OsString], db: &Path) -> Result<(ChildGuard, u16), String> {
    let (program, args) = command.split_first().ok_or("no server command")?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .arg("--db")
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut server = ChildGuard::spawn(cmd, "the webtask server")?;
    let stdout = server
        .child_mut()
        .stdout
        .take()
        .ok_or("the server has no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| format!("reading the server's port: {e}"))?;
    let port = line
        .trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse::<u16>().ok())
        .ok_or_else(|| {
            let exit = server.exited().unwrap_or_default();
            format!("the webtask server did not say its port (got {line:?}) {exit}")
        })?;
    Ok((server, port))
}
