//! A Python environment as a lockstep [`Env`], in this interpreter.
//!
//! The Python side (`lockstep/_envs.py`) wraps the user's Gymnasium or PettingZoo env in
//! `lockstep_adapter`'s `Served` object, the very code that serves it to a child process, and
//! hands over the same protocol messages as text: the handshake, reset and step replies, the
//! state. They are read here with the protocol's own readers
//! ([`lockstep_protocol::message`]), so an env checked in this process and one checked
//! through `python -m lockstep_adapter` show lockstep the same observations, byte for byte.
//!
//! Every call takes the GIL for itself, so the checks run with the GIL released and the
//! parallel-workers check really interleaves several instances in this interpreter.

use lockstep::check::ThreadIsolation;
use lockstep::contract::{Contract, Layer, ProfileName};
use lockstep::env::{Actions, Env, EnvError, EnvFactory, EnvSpec, Transition};
use lockstep_canon::{Profile, Value};
use lockstep_protocol::message::{self, Reply, WireContract};
use pyo3::prelude::*;

/// One env instance: the `InProcess` object of `lockstep/_envs.py`.
pub struct PyEnv {
    obj: Py<PyAny>,
    spec: EnvSpec,
    contract: WireContract,
    /// The layers the handshake names (a browser the env launches): each `state` answer says
    /// where they are, and they are read here as `lockstep check --cmd` reads them.
    layers: Vec<String>,
    transition: Transition,
    scratch: Vec<u8>,
    buf: Vec<u8>,
    steps: u64,
    /// `close` was called: a dropped instance that was not is closed on drop.
    closed: bool,
}

/// The message of a Python exception first, then its traceback, as the adapter answers a
/// failed request: the report's cause reader (`lockstep::report::env_error`) takes the first
/// line for the error and finds the user's frames in the rest.
fn describe(py: Python<'_>, err: &PyErr) -> String {
    let text = py.import("traceback").and_then(|tb| {
        let message =
            tb.call_method1("format_exception_only", (err.get_type(py), err.value(py)))?;
        let trace = tb.call_method1(
            "format_exception",
            (err.get_type(py), err.value(py), err.traceback(py)),
        )?;
        let lines = |v: Bound<'_, PyAny>| {
            v.extract::<Vec<String>>()
                .map(|l| l.concat().trim_end().to_string())
                .map_err(|e| PyErr::new::<pyo3::exceptions::PyTypeError, _>(e.to_string()))
        };
        Ok((lines(message)?, lines(trace)?))
    });
    match text {
        Ok((message, trace)) => format!("{message}\n{trace}"),
        Err(_) => err.to_string(),
    }
}

fn call(
    obj: &Py<PyAny>,
    what: &str,
    method: &str,
    args: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>>,
) -> Result<String, EnvError> {
    Python::attach(|py| {
        let result = args(py).and_then(|a| obj.bind(py).call_method1(method, a));
        match result.and_then(|r| r.extract::<String>()) {
            Ok(text) => Ok(text),
            Err(e) => Err(EnvError::new(format!("{what}: {}", describe(py, &e)))),
        }
    })
}

fn parse(text: &str, what: &str) -> Result<Value, EnvError> {
    message::parse_line(text.as_bytes())
        .map_err(|e| EnvError::new(format!("{what}: the env's answer is not JSON: {e}")))
}

impl PyEnv {
    /// Reads the handshake of `obj`.
    pub fn new(obj: Py<PyAny>) -> Result<PyEnv, EnvError> {
        let text = call(&obj, "handshake", "hello", |py| {
            Ok(pyo3::types::PyTuple::empty(py))
        })?;
        let hello = parse(&text, "handshake")?;
        let handshake = message::parse_handshake(&hello)
            .map_err(|e| EnvError::new(format!("the handshake breaks the protocol: {e}")))?;
        Ok(PyEnv {
            obj,
            spec: handshake.spec(),
            contract: handshake.contract,
            layers: handshake.layers,
            transition: Transition::default(),
            scratch: Vec::new(),
            buf: Vec::new(),
            steps: 0,
            closed: false,
        })
    }

    fn transition(&mut self, text: &str, what: &str) -> Result<&Transition, EnvError> {
        let mut value = parse(text, what)?;
        match message::reply(&value) {
            Ok(Reply::Ok(_)) => {}
            Ok(Reply::Failed { error, traceback }) => {
                return Err(EnvError::new(format!(
                    "{what}: {error}{}",
                    traceback.map(|t| format!("\n{t}")).unwrap_or_default()
                )))
            }
            Err(e) => return Err(EnvError::new(format!("{what}: {e}"))),
        }
        let Value::Object(map) = &mut value else {
            return Err(EnvError::new(format!(
                "{what}: the answer is not a JSON object"
            )));
        };
        message::read_transition(map, &self.spec, &mut self.transition, &mut self.scratch)
            .map_err(|e| EnvError::new(format!("{what}: the answer breaks the protocol: {e}")))?;
        Ok(&self.transition)
    }
}

impl PyEnv {
    /// Whether the Python object answers `method` (the tracer's requests are newer than the
    /// rest: an object without them has no tracer).
    fn has(&self, method: &str) -> bool {
        Python::attach(|py| self.obj.bind(py).hasattr(method).unwrap_or(false))
    }

    /// The object of an `ok: true` answer, or the env's failure.
    fn answer(&self, text: &str, what: &str) -> Result<lockstep_canon::Map, EnvError> {
        let value = parse(text, what)?;
        match message::reply(&value) {
            Ok(Reply::Ok(map)) => Ok(map.clone()),
            Ok(Reply::Failed { error, .. }) => Err(EnvError::new(format!("{what}: {error}"))),
            Err(e) => Err(EnvError::new(format!("{what}: {e}"))),
        }
    }

    /// The `sources` or `effects` the adapter recorded.
    fn records(&mut self, op: &str) -> Result<Vec<Value>, EnvError> {
        let text = call(&self.obj, op, op, |py| Ok(pyo3::types::PyTuple::empty(py)))?;
        let map = self.answer(&text, op)?;
        message::read_records(&map, op).map_err(|e| EnvError::new(format!("{op}: {e}")))
    }

    /// A reset with `seed`, or with `None` for the env's unseeded reset.
    fn reset_call(&mut self, seed: Option<u64>, options: &Value) -> Result<&Transition, EnvError> {
        let options = lockstep_canon::to_vec(options, Profile::Python)
            .map_err(|e| EnvError::new(format!("reset options: {e}")))?;
        let options = String::from_utf8(options).expect("canonical JSON is ASCII");
        self.steps = 0;
        let text = call(&self.obj, "reset", "reset", |py| {
            pyo3::types::PyTuple::new(
                py,
                [
                    seed.into_pyobject(py)?.into_any(),
                    options.into_pyobject(py)?.into_any(),
                ],
            )
        })?;
        let what = seed.map_or_else(
            || "reset (no seed)".to_string(),
            |s| format!("reset (seed {s})"),
        );
        self.transition(&text, &what)
    }
}

impl Env for PyEnv {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// The declared contract, when the env names its fields, its layers among them (as for a
    /// child process).
    fn contract(&self) -> Option<Contract> {
        let c = &self.contract;
        let mut fields = c.fields.clone()?;
        fields.extend(self.layers.iter().cloned());
        fields.sort();
        fields.dedup();
        Contract::new(
            c.name.clone(),
            u32::try_from(c.version).ok()?,
            ProfileName::Python,
            vec![Layer {
                name: "state".into(),
                fields,
                probe: None,
            }],
        )
        .ok()
    }

    fn reset(&mut self, seed: u64, options: &Value) -> Result<&Transition, EnvError> {
        self.reset_call(Some(seed), options)
    }

    /// `reset(None, ...)` on the `InProcess` object: the env's own `reset()`.
    fn reset_unseeded(&mut self, options: &Value) -> Option<Result<&Transition, EnvError>> {
        Some(self.reset_call(None, options))
    }

    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError> {
        message::write_step(&mut self.buf, 0, actions, &self.spec);
        let request = std::str::from_utf8(&self.buf)
            .expect("requests are UTF-8")
            .to_string();
        let n = self.steps + 1;
        let what = format!("step {n}");
        let text = call(&self.obj, &what, "step", |py| {
            pyo3::types::PyTuple::new(py, [request])
        })?;
        self.steps = n;
        self.transition(&text, &what)
    }

    fn state(&mut self) -> Result<Value, EnvError> {
        let text = call(&self.obj, "state", "state", |py| {
            Ok(pyo3::types::PyTuple::empty(py))
        })?;
        let value = parse(&text, "state")?;
        let map = match message::reply(&value) {
            Ok(Reply::Ok(map)) => map,
            Ok(Reply::Failed { error, .. }) => {
                return Err(EnvError::new(format!("state: {error}")))
            }
            Err(e) => return Err(EnvError::new(format!("state: {e}"))),
        };
        let protocol = |e: message::MessageError| EnvError::new(format!("state: {e}"));
        let mut state = message::read_state(map).map_err(protocol)?;
        let layers = message::read_state_layers(map).map_err(protocol)?;
        if let Some((name, _)) = layers.iter().find(|(n, _)| !self.layers.contains(n)) {
            return Err(EnvError::new(format!(
                "state: layer `{name}` was not named in the handshake's `layers`"
            )));
        }
        if !layers.is_empty() {
            message::place_layer_snapshots(&mut state, layers, layer_probes())
                .map_err(|e| EnvError::new(format!("state: {e}")))?;
        }
        Ok(state)
    }

    fn trace_sources(&mut self, on: bool) -> Result<bool, EnvError> {
        if !self.has("trace") {
            return Ok(false);
        }
        let text = call(&self.obj, "trace", "trace", |py| {
            pyo3::types::PyTuple::new(py, [on])
        })?;
        self.answer(&text, "trace")?;
        Ok(true)
    }

    fn traced_sources(&mut self) -> Result<Vec<Value>, EnvError> {
        if !self.has("sources") {
            return Ok(Vec::new());
        }
        self.records("sources")
    }

    fn effects(&mut self) -> Result<Option<Vec<Value>>, EnvError> {
        if !self.has("effects") {
            return Ok(None);
        }
        self.records("effects").map(Some)
    }

    fn provenance(&mut self) -> Result<Option<Value>, EnvError> {
        if !self.has("provenance") {
            return Ok(None);
        }
        let text = call(&self.obj, "provenance", "provenance", |py| {
            Ok(pyo3::types::PyTuple::empty(py))
        })?;
        let map = self.answer(&text, "provenance")?;
        Ok(map.get("provenance").filter(|v| !v.is_null()).cloned())
    }

    fn close(&mut self) -> Result<(), EnvError> {
        self.closed = true;
        call(&self.obj, "close", "close", |py| {
            Ok(pyo3::types::PyTuple::empty(py))
        })
        .map(|_| ())
    }
}

/// The checks drop most instances without closing them, as a child process is dropped: its
/// process group is killed, and with it whatever the env started. An env of this interpreter
/// has no such group, so it is closed here: else a browser or a server it launched outlives
/// the check (a browser task left three Chromiums running per `lockstep.check`).
impl Drop for PyEnv {
    fn drop(&mut self) {
        if !self.closed {
            // Nothing to report a failure to from a drop; the env's own close said it in
            // the checks that close.
            let _ = Env::close(self);
        }
    }
}

/// The probes of every layer kind (files, SQLite, PostgreSQL, HTTP, a browser), the CLI's.
fn layer_probes() -> &'static lockstep::probe::ProbeSet {
    static PROBES: std::sync::OnceLock<lockstep::probe::ProbeSet> = std::sync::OnceLock::new();
    PROBES.get_or_init(lockstep_layers::probes)
}

/// Makes [`PyEnv`]s by calling a zero-argument Python callable that returns an `InProcess`.
pub struct PyFactory {
    pub id: String,
    pub make: Py<PyAny>,
}

impl EnvFactory for PyFactory {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        let obj = Python::attach(|py| {
            self.make
                .bind(py)
                .call0()
                .map(Bound::unbind)
                .map_err(|e| EnvError::new(format!("making {}: {}", self.id, describe(py, &e))))
        })?;
        let mut env = PyEnv::new(obj)?;
        // Traces and goldens name the env as the caller does (a name the Python resolver
        // makes again), not as the adapter's handshake does.
        env.spec.id = self.id.clone();
        Ok(Box::new(env))
    }

    /// The parallel check's threads run in a fork of this interpreter: an env that crashes on
    /// threads (issue 30: BrowserGym's thread-bound Playwright segfaulted the caller) ends the
    /// fork, and the report says so. Where Python has no `os.fork`, they run here.
    fn thread_isolation(&self) -> Option<&dyn ThreadIsolation> {
        let forks = Python::attach(|py| {
            py.import("os")
                .map(|os| os.hasattr("fork").unwrap_or(false))
                .unwrap_or(false)
        });
        forks.then_some(self as &dyn ThreadIsolation)
    }
}

impl ThreadIsolation for PyFactory {
    /// `os.fork()`, which runs CPython's before- and after-fork steps (the GIL, the import
    /// lock, `threading`'s state are made usable in the child). Python 3.12 warns about a fork
    /// of a process with threads; this one holds no lock another thread could own in the
    /// child (the check's threads start after it), so the warning is silenced.
    fn fork(&self) -> Result<i32, String> {
        Python::attach(|py| {
            let code = c"import os, warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore', DeprecationWarning)\n    pid = os.fork()\n";
            let locals = pyo3::types::PyDict::new(py);
            py.run(code, None, Some(&locals))
                .and_then(|()| {
                    locals
                        .get_item("pid")?
                        .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err("pid"))?
                        .extract::<i32>()
                })
                .map_err(|e| format!("os.fork(): {}", describe(py, &e)))
        })
    }
}
