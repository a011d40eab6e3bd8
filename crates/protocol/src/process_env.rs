//! [`ProcessEnv`]: an [`Env`] served by a child process, and its factory.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockstep_canon::Value;

use crate::child::{show_duration, Child};
use crate::conn::{in_flight, lock, quiet, Conn, Link, Shared};
use crate::message::{self, Handshake, Reply, WireContract};
use lockstep::check::{Forker, ProcessRunner};
use lockstep::env::{Actions, Env, EnvError, EnvFactory, EnvSpec, Transition};
use lockstep::private_dirs::PrivateDirs;
use lockstep::trace::{self, Recorded, RolloutOptions};

/// Limits and environment of an env process.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessOptions {
    /// How long one request (reset, step, state, close) may wait for its answer.
    pub request_timeout: Duration,
    /// How long the child may take to send its handshake (interpreter start, imports).
    pub startup_timeout: Duration,
    /// Longest answer line accepted, in bytes; a longer one is a fault, read no further.
    pub max_message_bytes: usize,
    /// How many of the child's last stderr lines an error quotes.
    pub stderr_lines: usize,
    /// Extra environment variables for the child.
    pub env: Vec<(String, String)>,
    /// Unless `env` sets `PYTHONHASHSEED`: every instance a factory makes gets
    /// `PYTHONHASHSEED=0`, as instances in one process share one string-hash salt, and the n-th
    /// child of the other-process check ([`ProcessEnvFactory::spawn_other_process`]) gets
    /// `PYTHONHASHSEED=n` (1, 2, ...). So an env whose episode depends on set or dict-of-hash
    /// order fails the other-process check every time, and only that check: the same-seed,
    /// interleaved and parallel checks vary nothing but what they test. Harmless for children
    /// that are not Python.
    pub vary_python_hash_seed: bool,
    /// Whether a `lockstep/2` child whose handshake offers `"threads": true` is asked to run
    /// each instance on its own thread, with requests to different instances in flight at once
    /// (true): the parallel check's threads then step instances of one process at the same
    /// time, not in turns. False sends one request at a time per child, as for every other
    /// child, and the child serves them all on one thread (faster when nothing overlaps).
    pub concurrent_instances: bool,
    /// Every child gets fresh private home, temp, XDG and working directories
    /// ([`lockstep::private_dirs`]), so that nothing an earlier run left on disk reaches it.
    /// False runs children in the caller's (`--shared-dirs`); the leftover check then does not
    /// apply.
    pub private_dirs: bool,
    /// Fields the fresh-process rollouts of [`ProcessRunner`] leave out, as the checks'
    /// rollouts do (`--ignore`, [`lockstep::ignore`]).
    pub ignore: lockstep::ignore::Ignore,
    /// The probes that read the layers an env's `state` answers name (docs/protocol.md,
    /// "Layers"); the CLI wires `lockstep_layers::probes()`. Without them, such a layer is an
    /// error saying so, never a state without it.
    pub probes: LayerProbes,
}

/// A shared [`lockstep::probe::ProbeSet`], compared by identity (options are compared whole).
#[derive(Clone, Default)]
pub struct LayerProbes(pub Option<Arc<lockstep::probe::ProbeSet>>);

impl std::fmt::Debug for LayerProbes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(p) => p.fmt(f),
            None => f.write_str("no probes"),
        }
    }
}

impl PartialEq for LayerProbes {
    fn eq(&self, other: &LayerProbes) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            request_timeout: Duration::from_secs(30),
            startup_timeout: Duration::from_secs(60),
            max_message_bytes: 64 << 20,
            stderr_lines: 20,
            env: Vec::new(),
            vary_python_hash_seed: true,
            concurrent_instances: true,
            private_dirs: true,
            ignore: lockstep::ignore::Ignore::default(),
            probes: LayerProbes::default(),
        }
    }
}

/// A command line shown in messages: words joined by spaces, quoted when they need it.
pub fn display_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            if !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,+@%".contains(&b))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// An environment served by a child process (any language), over `lockstep/1` (the child is
/// this env's own) or as one instance of a `lockstep/2` child that hosts several
/// ([`ProcessSession`]).
///
/// Every fault of the child (it exits, crashes, hangs past the request timeout, prints a line
/// that is not JSON or is too long, breaks the protocol) is an [`EnvError`] naming the request,
/// the step and the child's last stderr lines; the child is then killed and reaped, and every
/// later call (of every instance it hosted) fails with the same error. An env that answers
/// `"ok": false` (an exception in the env) gives an error too but stays usable.
pub struct ProcessEnv {
    conn: Shared,
    pid: u32,
    /// The instance in a `lockstep/2` child; `None` over `lockstep/1`.
    instance: Option<u64>,
    command: String,
    options: ProcessOptions,
    handshake: Handshake,
    spec: EnvSpec,
    transition: Transition,
    /// Steps answered since the last reset.
    steps: u64,
    /// Whether a reset has been answered.
    started: bool,
    /// The fault that killed the child, repeated by every later call.
    dead: Option<EnvError>,
    closed: bool,
    buf: Vec<u8>,
    scratch: Vec<u8>,
}

/// The request being answered, for messages: `handshake`, `reset (seed 3)`, `step 17`, ...
enum Request {
    Handshake,
    Upgrade,
    Create,
    Fork,
    EndFork,
    /// The seed, or `None` for the env's unseeded reset.
    Reset(Option<u64>),
    Step(u64),
    State,
    /// `trace`, `sources`, `effects`: the source tracer's requests.
    Tracer(&'static str),
    Close,
}

/// Starts `argv` and reads its handshake. The child gets `dirs` as its private directories,
/// or fresh ones, unless [`ProcessOptions::private_dirs`] is off.
fn start(
    argv: &[String],
    options: &ProcessOptions,
    extra: &[(String, String)],
    dirs: Option<Arc<PrivateDirs>>,
) -> Result<(Conn, Handshake), EnvError> {
    let command = display_argv(argv);
    let cannot =
        |e: std::io::Error| EnvError::new(format!("env process `{command}`: cannot start: {e}"));
    let mut env = options.env.clone();
    env.extend(extra.iter().cloned());
    let dirs = match (options.private_dirs, dirs) {
        (false, _) => None,
        (true, Some(d)) => Some(d),
        (true, None) => Some(Arc::new(PrivateDirs::new().map_err(cannot)?)),
    };
    let mut child = Child::spawn(
        argv,
        &env,
        dirs,
        options.max_message_bytes,
        options.stderr_lines,
    )
    .map_err(cannot)?;
    let handshake = match child.recv(options.startup_timeout) {
        Ok(line) => message::parse_line(line)
            .map_err(|e| format!("the handshake is not JSON ({e}): {}", excerpt(line)))
            .and_then(|v| read_handshake(&v)),
        Err(fault) => Err(fault.to_string()),
    };
    match handshake {
        Ok(h) => Ok((Conn::new(child), h)),
        Err(what) => Err(fatal_error(
            &mut child,
            &command,
            &Request::Handshake,
            0,
            &what,
        )),
    }
}

/// One request outside any instance (`upgrade`, `create`): the answer's object, or the fault,
/// which kills the child.
fn control(
    conn: &mut Conn,
    command: &str,
    options: &ProcessOptions,
    request: &Request,
    write: impl FnOnce(&mut Vec<u8>, u64),
) -> Result<lockstep_canon::Map, EnvError> {
    let id = conn.next_id();
    let mut buf = Vec::new();
    write(&mut buf, id);
    let outcome = conn
        .child
        .send(&buf)
        .and_then(|()| conn.child.recv(options.request_timeout))
        .map_err(|fault| fault.to_string())
        .and_then(|line| {
            message::parse_line(line)
                .map_err(|e| format!("the answer is not JSON ({e}): {}", excerpt(line)))
        })
        .and_then(|value| {
            message::check_id(&value, id)
                .map_err(|e| format!("the answer breaks the protocol: {e}"))?;
            match message::reply(&value) {
                Ok(Reply::Ok(map)) => Ok(map.clone()),
                Ok(Reply::Failed { error, .. }) => Err(format!("the env refused: {error}")),
                Err(e) => Err(format!("the answer breaks the protocol: {e}")),
            }
        });
    outcome.map_err(|what| {
        let e = fatal_error(&mut conn.child, command, request, 0, &what);
        conn.dead = Some(e.clone());
        e
    })
}

impl ProcessEnv {
    /// Starts `argv` (no shell) and reads its handshake; the env speaks `lockstep/1`.
    pub fn spawn(argv: &[String], options: &ProcessOptions) -> Result<ProcessEnv, EnvError> {
        Self::spawn_with_env(argv, options, &[], None)
    }

    fn spawn_with_env(
        argv: &[String],
        options: &ProcessOptions,
        extra: &[(String, String)],
        dirs: Option<Arc<PrivateDirs>>,
    ) -> Result<ProcessEnv, EnvError> {
        let (conn, handshake) = start(argv, options, extra, dirs)?;
        let pid = conn.child.id();
        Ok(Self::instance(
            Arc::new(Link::new(conn)),
            pid,
            None,
            display_argv(argv),
            options,
            handshake,
        ))
    }

    fn instance(
        conn: Shared,
        pid: u32,
        instance: Option<u64>,
        command: String,
        options: &ProcessOptions,
        handshake: Handshake,
    ) -> ProcessEnv {
        let spec = handshake.spec();
        ProcessEnv {
            conn,
            pid,
            instance,
            command,
            options: options.clone(),
            handshake,
            spec,
            transition: Transition::default(),
            steps: 0,
            started: false,
            dead: None,
            closed: false,
            buf: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The reset contract the env declared.
    pub fn contract(&self) -> &WireContract {
        &self.handshake.contract
    }

    /// The whole handshake.
    pub fn handshake(&self) -> &Handshake {
        &self.handshake
    }

    /// Steps answered since the last reset (kept after a fault: how far the episode got).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The instance number in a `lockstep/2` child (`None` over `lockstep/1`).
    pub fn instance_number(&self) -> Option<u64> {
        self.instance
    }

    /// The child's last stderr lines so far.
    pub fn stderr_tail(&self) -> Vec<String> {
        lock(&self.conn).child.stderr_tail()
    }

    fn check_usable(&mut self) -> Result<(), EnvError> {
        if self.dead.is_none() {
            self.dead = lock(&self.conn).dead.clone();
        }
        if let Some(e) = &self.dead {
            return Err(EnvError::new(format!(
                "env process already failed: {}",
                e.message
            )));
        }
        if self.closed {
            return Err(EnvError::new(format!(
                "env process `{}` is closed",
                self.command
            )));
        }
        Ok(())
    }

    /// Writes a request (with the id `write` is given) into `self.buf`, names the instance,
    /// sends it and returns the parsed answer line, checked to carry the request's id. Any fault
    /// kills the child and is remembered by it and by this instance.
    fn exchange(
        &mut self,
        request: &Request,
        write: impl FnOnce(&mut Vec<u8>, u64) -> Result<(), EnvError>,
    ) -> Result<Value, EnvError> {
        let timeout = self.options.request_timeout;
        let shared = Arc::clone(&self.conn);
        let mut conn = lock(&shared);
        if let Some(e) = &conn.dead {
            self.dead = Some(e.clone());
            return Err(EnvError::new(format!(
                "env process already failed: {}",
                e.message
            )));
        }
        let id = conn.next_id();
        write(&mut self.buf, id)?;
        if let Some(n) = self.instance {
            message::set_instance(&mut self.buf, n);
        }
        if conn.concurrent {
            let outcome = in_flight(&shared, conn, &self.buf, id, timeout);
            return outcome.map_err(|(mut conn, what)| {
                let e = match what {
                    Some(what) => {
                        let e =
                            fatal_error(&mut conn.child, &self.command, request, self.steps, &what);
                        conn.dead = Some(e.clone());
                        shared.wake.notify_all();
                        e
                    }
                    None => conn
                        .dead
                        .clone()
                        .expect("a fault without its text left it dead"),
                };
                self.dead = Some(e.clone());
                e
            });
        }
        let outcome = conn
            .child
            .send(&self.buf)
            .and_then(|()| conn.child.recv(timeout))
            .map_err(|fault| fault.to_string())
            .and_then(|line| {
                message::parse_line(line)
                    .map_err(|e| format!("the answer is not JSON ({e}): {}", excerpt(line)))
            })
            .and_then(|value| {
                message::check_id(&value, id)
                    .map(|()| value)
                    .map_err(|e| format!("the answer breaks the protocol: {e}"))
            });
        outcome.map_err(|what| {
            let e = fatal_error(&mut conn.child, &self.command, request, self.steps, &what);
            conn.dead = Some(e.clone());
            self.dead = Some(e.clone());
            e
        })
    }

    /// Reads each layer a `state` answer named with the wired probes and places its snapshot
    /// in `state` under the layer's name, as a contract's probed layer is.
    fn read_layers(
        &mut self,
        state: &mut Value,
        layers: Vec<(String, lockstep::probe::ProbeSpec)>,
    ) -> Result<(), EnvError> {
        if layers.is_empty() {
            return Ok(());
        }
        if let Some((name, _)) = layers
            .iter()
            .find(|(name, _)| !self.handshake.layers.contains(name))
        {
            let what = format!(
                "the answer breaks the protocol: layer `{name}` was not named in the handshake's `layers`"
            );
            return Err(self.fail(&Request::State, &what));
        }
        let probes = self.options.probes.0.clone().unwrap_or_default();
        message::place_layer_snapshots(state, layers, &probes)
            .map_err(|e| EnvError::new(format!("env process `{}`: {e}", self.command)))
    }

    /// Kills the child for a fault and builds (and remembers) the error.
    fn fail(&mut self, request: &Request, what: &str) -> EnvError {
        let shared = Arc::clone(&self.conn);
        let mut conn = lock(&shared);
        let e = fatal_error(&mut conn.child, &self.command, request, self.steps, what);
        conn.dead = Some(e.clone());
        self.dead = Some(e.clone());
        e
    }

    /// Reads the `ok` of an answer; `ok: false` is an error that keeps the child.
    fn answer<'v>(
        &mut self,
        request: &Request,
        value: &'v Value,
    ) -> Result<&'v lockstep_canon::Map, EnvError> {
        match message::reply(value) {
            Ok(Reply::Ok(map)) => Ok(map),
            Ok(Reply::Failed { error, traceback }) => {
                let mut message = format!(
                    "env process `{}` (pid {}): {}: the env failed: {error}",
                    self.command,
                    self.pid,
                    describe(request, self.steps)
                );
                if let Some(tb) = traceback {
                    push_traceback(&mut message, &tb, 12);
                }
                Err(EnvError::new(message))
            }
            Err(e) => Err(self.fail(request, &format!("the answer breaks the protocol: {e}"))),
        }
    }

    fn transition_request(
        &mut self,
        request: Request,
        write: impl FnOnce(&mut Vec<u8>, u64) -> Result<(), EnvError>,
    ) -> Result<&Transition, EnvError> {
        let mut value = self.exchange(&request, write)?;
        self.answer(&request, &value)?;
        let read = match &mut value {
            Value::Object(map) => {
                message::read_transition(map, &self.spec, &mut self.transition, &mut self.scratch)
                    .map_err(|e| e.to_string())
            }
            _ => Err("the answer is not a JSON object".to_string()),
        };
        match read {
            Ok(()) => Ok(&self.transition),
            Err(e) => Err(self.fail(&request, &format!("the answer breaks the protocol: {e}"))),
        }
    }
}

/// The handshake, or why it is unusable. `"ok"` may be absent; `"ok": false` means the env
/// could not start, unless it speaks another protocol version, which is named first.
fn read_handshake(v: &Value) -> Result<Handshake, String> {
    if let Some(Value::Bool(false)) = v.get("ok") {
        return match v.get("protocol").and_then(Value::as_str) {
            Some(p) if p != message::PROTOCOL_VERSION => Err(format!(
                "the env speaks protocol {p:?}, lockstep speaks {:?}",
                message::PROTOCOL_VERSION
            )),
            _ => {
                let mut what = format!(
                    "the env failed to start: {}",
                    v.get("error")
                        .and_then(Value::as_str)
                        .unwrap_or("(no error message)")
                );
                if let Some(tb) = v.get("traceback").and_then(Value::as_str) {
                    push_traceback(&mut what, tb, 60);
                }
                Err(what)
            }
        };
    }
    message::parse_handshake(v).map_err(|e| format!("the handshake breaks the protocol: {e}"))
}

/// Appends the last `max` lines of a traceback, one per line, indented.
fn push_traceback(message: &mut String, traceback: &str, max: usize) {
    let lines: Vec<&str> = traceback.lines().collect();
    let tail = &lines[lines.len().saturating_sub(max)..];
    if tail.len() < lines.len() {
        message.push_str("\ntraceback (last lines):");
    } else {
        message.push_str("\ntraceback:");
    }
    for l in tail {
        message.push_str("\n  ");
        message.push_str(l);
    }
}

/// `step 17` etc.
fn describe(request: &Request, steps: u64) -> String {
    match request {
        Request::Handshake => "handshake".to_string(),
        Request::Upgrade => "upgrade to lockstep/2".to_string(),
        Request::Create => "create (an env instance)".to_string(),
        Request::Fork => "fork (a worker)".to_string(),
        Request::EndFork => "end_fork".to_string(),
        Request::Reset(Some(seed)) => format!("reset (seed {seed})"),
        Request::Reset(None) => "reset (no seed)".to_string(),
        Request::Step(n) => format!("step {n}"),
        Request::State => format!("state (after step {steps})"),
        Request::Tracer(op) => format!("{op} (after step {steps})"),
        Request::Close => "close".to_string(),
    }
}

/// The first 200 characters of an offending line, for messages.
pub(crate) fn excerpt(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut out: String = text.chars().take(200).collect();
    if text.chars().count() > 200 {
        out.push_str("...");
    }
    format!("{out:?}")
}

/// Kills and reaps the child, then names the request, the step, the fault and stderr's tail.
fn fatal_error(
    child: &mut Child,
    command: &str,
    request: &Request,
    steps: u64,
    what: &str,
) -> EnvError {
    child.kill();
    // The pid tells which of several children failed (and finds its traces in system logs);
    // it makes the error text differ between runs, which only an erroring trial shows.
    let mut message = format!(
        "env process `{command}` (pid {}): {}: {what}",
        child.id(),
        describe(request, steps)
    );
    let tail = child.stderr_tail();
    if tail.is_empty() {
        message.push_str("\n(stderr was empty)");
    } else {
        message.push_str(&format!("\nlast {} stderr lines:", tail.len()));
        for line in tail {
            message.push_str("\n  | ");
            message.push_str(&line);
        }
    }
    EnvError::new(message)
}

impl ProcessEnv {
    /// A reset with `seed`, or the env's unseeded reset (`"seed": null`) for `None`.
    fn reset_request(
        &mut self,
        seed: Option<u64>,
        options: &Value,
    ) -> Result<&Transition, EnvError> {
        self.check_usable()?;
        let command = self.command.clone();
        self.steps = 0;
        self.started = true;
        self.transition_request(Request::Reset(seed), |buf, id| {
            message::write_reset(buf, id, seed, options).map_err(|e| {
                EnvError::new(format!(
                    "env process `{command}`: reset options cannot be sent: {e}"
                ))
            })
        })
    }
}

impl ProcessEnv {
    /// One request of the source tracer; its answer's object.
    fn tracer_request(
        &mut self,
        op: &'static str,
        write: impl FnOnce(&mut Vec<u8>, u64),
    ) -> Result<lockstep_canon::Map, EnvError> {
        self.check_usable()?;
        let request = Request::Tracer(op);
        let value = self.exchange(&request, |buf, id| {
            write(buf, id);
            Ok(())
        })?;
        self.answer(&request, &value).cloned()
    }

    /// The `sources` or `effects` the env recorded.
    fn records(&mut self, op: &'static str) -> Result<Vec<Value>, EnvError> {
        let map = self.tracer_request(op, |buf, id| message::write_op(buf, id, op))?;
        message::read_records(&map, op).map_err(|e| {
            self.fail(
                &Request::Tracer(op),
                &format!("the answer breaks the protocol: {e}"),
            )
        })
    }
}

impl Env for ProcessEnv {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn seedless(&self) -> bool {
        self.handshake.seedless
    }

    /// The declared contract, when the env names its fields; otherwise the audit infers one.
    fn contract(&self) -> Option<lockstep::contract::Contract> {
        let c = &self.handshake.contract;
        // The layers the state answers carry are fields of it like the env's own.
        let mut fields = c.fields.clone()?;
        fields.extend(self.handshake.layers.iter().cloned());
        fields.sort();
        fields.dedup();
        lockstep::contract::Contract::new(
            c.name.clone(),
            u32::try_from(c.version).ok()?,
            lockstep::contract::ProfileName::Python,
            vec![lockstep::contract::Layer {
                name: "state".into(),
                fields,
                probe: None,
            }],
        )
        .ok()
    }

    fn reset(&mut self, seed: u64, options: &Value) -> Result<&Transition, EnvError> {
        self.reset_request(Some(seed), options)
    }

    /// The protocol's reset with `"seed": null`: the adapter calls the env's own `reset()`.
    fn reset_unseeded(&mut self, options: &Value) -> Option<Result<&Transition, EnvError>> {
        Some(self.reset_request(None, options))
    }

    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError> {
        self.check_usable()?;
        if !self.started {
            return Err(EnvError::new(format!(
                "env process `{}`: step before the first reset",
                self.command
            )));
        }
        let n = self.steps + 1;
        let spec = self.spec.clone();
        self.transition_request(Request::Step(n), |buf, id| {
            message::write_step(buf, id, actions, &spec);
            Ok(())
        })?;
        self.steps = n;
        Ok(&self.transition)
    }

    fn state(&mut self) -> Result<Value, EnvError> {
        self.check_usable()?;
        let value = self.exchange(&Request::State, |buf, id| {
            message::write_op(buf, id, "state");
            Ok(())
        })?;
        let map = self.answer(&Request::State, &value)?;
        let read = message::read_state(map)
            .and_then(|state| message::read_state_layers(map).map(|layers| (state, layers)));
        let (mut state, layers) = match read {
            Ok(read) => read,
            Err(e) => {
                return Err(self.fail(
                    &Request::State,
                    &format!("the answer breaks the protocol: {e}"),
                ))
            }
        };
        self.read_layers(&mut state, layers)?;
        Ok(state)
    }

    fn trace_sources(&mut self, on: bool) -> Result<bool, EnvError> {
        if !self.handshake.tracer {
            return Ok(false);
        }
        self.tracer_request("trace", |buf, id| message::write_trace(buf, id, on))?;
        Ok(true)
    }

    fn traced_sources(&mut self) -> Result<Vec<Value>, EnvError> {
        if !self.handshake.tracer {
            return Ok(Vec::new());
        }
        self.records("sources")
    }

    fn effects(&mut self) -> Result<Option<Vec<Value>>, EnvError> {
        if !self.handshake.tracer {
            return Ok(None);
        }
        let map =
            self.tracer_request("effects", |buf, id| message::write_op(buf, id, "effects"))?;
        // `null`: this child was not asked to record them.
        if map.get("effects").is_none_or(Value::is_null) {
            return Ok(None);
        }
        message::read_records(&map, "effects")
            .map(Some)
            .map_err(|e| {
                self.fail(
                    &Request::Tracer("effects"),
                    &format!("the answer breaks the protocol: {e}"),
                )
            })
    }

    fn provenance(&mut self) -> Result<Option<Value>, EnvError> {
        if !self.handshake.provenance {
            return Ok(None);
        }
        let map = self.tracer_request("provenance", |buf, id| {
            message::write_op(buf, id, "provenance")
        })?;
        Ok(map.get("provenance").filter(|v| !v.is_null()).cloned())
    }

    fn close(&mut self) -> Result<(), EnvError> {
        if self.closed {
            return Ok(());
        }
        if self.dead.is_none() {
            self.dead = lock(&self.conn).dead.clone();
        }
        if let Some(e) = &self.dead {
            self.closed = true;
            return Err(e.clone());
        }
        let result = self
            .exchange(&Request::Close, |buf, id| {
                message::write_op(buf, id, "close");
                Ok(())
            })
            .and_then(|v| self.answer(&Request::Close, &v).map(|_| ()));
        self.closed = true;
        if self.instance.is_some() {
            // One instance of a shared child: the child lives on until its last user is gone.
            return result;
        }
        let finished = lock(&self.conn).child.finish(self.options.request_timeout);
        match finished {
            Some(status) if !status.success() && result.is_ok() => Err(EnvError::new(format!(
                "env process `{}` (pid {}): close: the process ended with {status}",
                self.command, self.pid
            ))),
            None if result.is_ok() => Err(EnvError::new(format!(
                "env process `{}` (pid {}): close: the process did not exit within {} and was killed",
                self.command,
                self.pid,
                show_duration(self.options.request_timeout)
            ))),
            _ => result,
        }
    }
}

/// The variable that asks the Python adapter to record its effects (docs/contract.md,
/// "Effects"): set for a trial's own child and for `lockstep contract infer`, not for the
/// fresh processes the checks compare with.
pub const EFFECTS_VAR: &str = "LOCKSTEP_EFFECTS";

/// Builds [`ProcessEnv`]s: each `make()` starts a fresh child from `argv`. A trial makes its
/// instances through [`ProcessEnvFactory::session`] instead (through
/// [`EnvFactory::session`]), which hosts them in one child when the child offers `lockstep/2`.
#[derive(Debug)]
pub struct ProcessEnvFactory {
    pub argv: Vec<String>,
    pub options: ProcessOptions,
    /// Children of the other-process check started so far (numbers their `PYTHONHASHSEED`).
    other_processes: AtomicU64,
    /// Children started in all (for tests and reports of what a run cost).
    started: AtomicU64,
    /// The private directories of each reference run (seed, steps) that ended: the leftover
    /// check's first process, when it asks for that seed (see [`ProcessRunner::run_after`]).
    reference_dirs: Mutex<BTreeMap<(u64, u64), Arc<PrivateDirs>>>,
}

impl ProcessEnvFactory {
    /// A factory for `argv` (program first, no shell) with the given options.
    pub fn new(argv: Vec<String>, options: ProcessOptions) -> ProcessEnvFactory {
        ProcessEnvFactory {
            argv,
            options,
            other_processes: AtomicU64::new(0),
            started: AtomicU64::new(0),
            reference_dirs: Mutex::new(BTreeMap::new()),
        }
    }

    /// Starts one child and reads its handshake, typed (for callers that want
    /// [`ProcessEnv::contract`] or [`ProcessEnv::steps`]).
    pub fn spawn(&self) -> Result<ProcessEnv, EnvError> {
        self.spawn_with_hash_seed(0)
    }

    /// Starts a child as the other-process check does: like [`Self::spawn`], but with its own
    /// `PYTHONHASHSEED` (1 for the first, 2 for the next, ...) when
    /// [`ProcessOptions::vary_python_hash_seed`] is set.
    pub fn spawn_other_process(&self) -> Result<ProcessEnv, EnvError> {
        let n = self.other_processes.fetch_add(1, Ordering::Relaxed) + 1;
        self.spawn_with_hash_seed(n)
    }

    /// How many children this factory (and its sessions) started.
    pub fn children_started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    fn hash_seed_env(&self, hash_seed: u64) -> Vec<(String, String)> {
        let mut extra = Vec::new();
        if self.options.vary_python_hash_seed
            && !self.options.env.iter().any(|(k, _)| k == "PYTHONHASHSEED")
        {
            extra.push(("PYTHONHASHSEED".to_string(), hash_seed.to_string()));
        }
        extra
    }

    fn spawn_with_hash_seed(&self, hash_seed: u64) -> Result<ProcessEnv, EnvError> {
        self.spawn_in(hash_seed, None)
    }

    /// A fresh child with `PYTHONHASHSEED=hash_seed` (when varied) in `dirs`, or in fresh
    /// private directories.
    fn spawn_in(
        &self,
        hash_seed: u64,
        dirs: Option<Arc<PrivateDirs>>,
    ) -> Result<ProcessEnv, EnvError> {
        self.started.fetch_add(1, Ordering::Relaxed);
        ProcessEnv::spawn_with_env(
            &self.argv,
            &self.options,
            &self.hash_seed_env(hash_seed),
            dirs,
        )
    }

    /// One rollout on a fresh child (see [`Self::spawn_in`]), recorded here with the first
    /// transitions kept as the check's own rollouts keep them, and the child closed.
    fn fresh_rollout(
        &self,
        hash_seed: u64,
        dirs: Option<Arc<PrivateDirs>>,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String> {
        let mut env = self.spawn_in(hash_seed, dirs).map_err(|e| e.to_string())?;
        let opts = RolloutOptions {
            capture,
            keep_first: trace::KeepFirst::CHECKS,
            ignore: self.options.ignore.clone(),
            ..RolloutOptions::default()
        };
        let recorded = trace::rollout(&mut env, seed, steps, &opts).map_err(|e| e.to_string());
        let closed = env.close();
        let recorded = recorded?;
        closed.map_err(|e| e.to_string())?;
        Ok(recorded)
    }

    /// A factory for one trial: every instance it makes lives in one child when the child
    /// offers `lockstep/2` (else each is a child of its own, as with [`Self::spawn`]). The child
    /// starts at the first `make()` and ends when the session and its instances are dropped; a
    /// child that failed is replaced by a fresh one at the next `make()`. A session must never
    /// outlive its trial: a child shared by two trials would make a verdict depend on how
    /// trials were scheduled.
    pub fn session(&self) -> ProcessSession<'_> {
        ProcessSession {
            factory: self,
            host: Mutex::new(None),
        }
    }
}

/// A `lockstep/2` child hosting a session's instances.
struct Host {
    conn: Shared,
    pid: u32,
    handshake: Handshake,
    /// Whether instance 0 (the one the handshake describes) was handed out.
    first_taken: bool,
}

/// The instances of one trial, in one child: see [`ProcessEnvFactory::session`].
pub struct ProcessSession<'a> {
    factory: &'a ProcessEnvFactory,
    host: Mutex<Option<Host>>,
}

impl ProcessSession<'_> {
    /// An instance in the session's child; on a thread of the child's own when `own_thread`
    /// and the child runs instances on threads (else on its main thread, with every other).
    fn make_env(&self, own_thread: bool) -> Result<ProcessEnv, EnvError> {
        let f = self.factory;
        let command = display_argv(&f.argv);
        let mut host = self
            .host
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if host.as_ref().is_some_and(|h| lock(&h.conn).dead.is_some()) {
            *host = None;
        }
        if host.is_none() {
            f.started.fetch_add(1, Ordering::Relaxed);
            // The trial's own child records its effects (the adapter's audit hook, which
            // costs every audited event of the interpreter, is installed only here).
            let mut extra = f.hash_seed_env(0);
            extra.push((EFFECTS_VAR.to_string(), "1".to_string()));
            let (mut conn, handshake) = start(&f.argv, &f.options, &extra, None)?;
            let pid = conn.child.id();
            if !handshake.offers_v2() {
                // A lockstep/1 child hosts one env: this instance is its own child.
                let conn = Arc::new(Link::new(conn));
                return Ok(ProcessEnv::instance(
                    conn, pid, None, command, &f.options, handshake,
                ));
            }
            let threads = handshake.threads && f.options.concurrent_instances;
            let upgraded = control(
                &mut conn,
                &command,
                &f.options,
                &Request::Upgrade,
                |buf, id| message::write_upgrade(buf, id, threads),
            )?;
            // Several requests in flight only when asked for and granted.
            conn.concurrent = threads && upgraded.get("threads") == Some(&Value::Bool(true));
            *host = Some(Host {
                conn: Arc::new(Link::new(conn)),
                pid,
                handshake,
                first_taken: false,
            });
        }
        let h = host.as_mut().expect("set above");
        // Instance 0 was built on the child's main thread, before the handshake: an instance
        // on a thread of its own is always a new one.
        let own_thread = own_thread && lock(&h.conn).concurrent;
        let number = if h.first_taken || own_thread {
            let mut conn = quiet(&h.conn);
            let map = control(
                &mut conn,
                &command,
                &f.options,
                &Request::Create,
                |buf, id| message::write_create(buf, id, own_thread),
            )?;
            message::read_instance(&map).map_err(|e| {
                let what = format!("the answer breaks the protocol: {e}");
                let e = fatal_error(&mut conn.child, &command, &Request::Create, 0, &what);
                conn.dead = Some(e.clone());
                e
            })?
        } else {
            h.first_taken = true;
            0
        };
        Ok(ProcessEnv::instance(
            Arc::clone(&h.conn),
            h.pid,
            Some(number),
            command,
            &f.options,
            h.handshake.clone(),
        ))
    }
}

impl EnvFactory for ProcessSession<'_> {
    fn id(&self) -> String {
        self.factory.id()
    }

    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        Ok(Box::new(self.make_env(false)?))
    }

    fn make_threaded(&self) -> Result<Box<dyn Env>, EnvError> {
        Ok(Box::new(self.make_env(true)?))
    }

    fn forker(&self) -> Option<&dyn Forker> {
        Some(self.factory)
    }

    fn vector_twin(&self) -> Option<Box<dyn EnvFactory + '_>> {
        self.factory.vector_twin()
    }
}

impl EnvFactory for ProcessEnvFactory {
    fn id(&self) -> String {
        display_argv(&self.argv)
    }

    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        Ok(Box::new(self.spawn()?))
    }

    fn session(&self) -> Option<Box<dyn EnvFactory + '_>> {
        Some(Box::new(ProcessEnvFactory::session(self)))
    }

    fn forker(&self) -> Option<&dyn Forker> {
        Some(self)
    }

    /// The adapter's twin of a vector env: the same command with `--twin` (docs/protocol.md).
    /// Any command gets one; the check asks only when the handshake says `num_envs`.
    fn vector_twin(&self) -> Option<Box<dyn EnvFactory + '_>> {
        let mut argv = self.argv.clone();
        argv.push("--twin".to_string());
        Some(Box::new(ProcessEnvFactory::new(argv, self.options.clone())))
    }
}

/// The forked-workers check: a fresh child plays the seed, then the warm-up seeds, then forks
/// (`lockstep/2`'s `fork` op); in the fork a new instance plays the seed again. A child that
/// does not offer `lockstep/2` with `"fork": true` cannot fork: `Ok(None)`.
impl Forker for ProcessEnvFactory {
    fn fork_runs(
        &self,
        seed: u64,
        warm_up: &[u64],
        steps: u64,
        opts: &RolloutOptions,
    ) -> Result<Option<(Recorded, Recorded)>, String> {
        let session = self.session();
        let mut env = session.make_env(false).map_err(|e| e.to_string())?;
        if env.instance.is_none() || !env.handshake.fork {
            return Ok(None);
        }
        let reference = trace::rollout(&mut env, seed, steps, opts).map_err(|e| e.to_string())?;
        let plain = RolloutOptions {
            capture: None,
            ..opts.clone()
        };
        for &s in warm_up {
            trace::rollout(&mut env, s, steps, &plain).map_err(|e| e.to_string())?;
        }
        let command = display_argv(&self.argv);
        let op = |request: Request, name: &'static str| -> Result<(), String> {
            let mut conn = quiet(&env.conn);
            control(&mut conn, &command, &self.options, &request, |buf, id| {
                message::write_op(buf, id, name)
            })
            .map(|_| ())
            .map_err(|e| e.to_string())
        };
        op(Request::Fork, "fork")?;
        // The fork now serves the pipes: this instance is created in it.
        let mut worker = session.make_env(false).map_err(|e| e.to_string())?;
        let forked = trace::rollout(&mut worker, seed, steps, opts).map_err(|e| e.to_string());
        let ended = op(Request::EndFork, "end_fork");
        let forked = forked?;
        ended?;
        Ok(Some((reference, forked)))
    }
}

fn lock_map<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The other-process check for an external env: each run is a rollout of a fresh child (a new
/// interpreter, and with [`ProcessOptions::vary_python_hash_seed`] another string-hash salt),
/// recorded by this process. Reset options are JSON null, as for every [`ProcessRunner`].
impl ProcessRunner for ProcessEnvFactory {
    fn varies_hash_seed(&self) -> bool {
        !self.hash_seed_env(1).is_empty()
    }

    fn run(
        &self,
        _env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String> {
        // The rollout is recorded here, so it keeps its first transitions as the check's own
        // rollouts do: a difference there is explained without running the child again.
        let n = self.other_processes.fetch_add(1, Ordering::Relaxed) + 1;
        self.fresh_rollout(n, None, seed, steps, capture)
    }

    /// The seed alone in a fresh child with the string-hash salt of the trial's own child
    /// (`PYTHONHASHSEED=0`): only being fresh differs.
    fn run_reference(
        &self,
        _env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Option<Recorded>, String> {
        if capture.is_some() || !self.options.private_dirs {
            return self.fresh_rollout(0, None, seed, steps, capture).map(Some);
        }
        let dirs = Arc::new(PrivateDirs::new().map_err(|e| format!("private directories: {e}"))?);
        let recorded = self.fresh_rollout(0, Some(Arc::clone(&dirs)), seed, steps, None)?;
        lock_map(&self.reference_dirs).insert((seed, steps), dirs);
        Ok(Some(recorded))
    }

    /// Two fresh children one after the other in the same private directories: `earlier`
    /// plays in the first, `seed` in the second. Not applicable without private directories.
    fn run_after(
        &self,
        _env: &str,
        earlier: u64,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Option<Recorded>, String> {
        if !self.options.private_dirs {
            return Ok(None);
        }
        // The directories a reference run of `earlier` used and left, taken once; else a first
        // process plays `earlier` now.
        let used = lock_map(&self.reference_dirs).remove(&(earlier, steps));
        let dirs = match used {
            Some(dirs) => dirs,
            None => {
                let dirs =
                    Arc::new(PrivateDirs::new().map_err(|e| format!("private directories: {e}"))?);
                self.fresh_rollout(0, Some(Arc::clone(&dirs)), earlier, steps, None)?;
                dirs
            }
        };
        self.fresh_rollout(0, Some(dirs), seed, steps, capture)
            .map(Some)
    }

    /// The continuation check's episodes in a fresh child: a pid, a hash seed and a clock of
    /// their own, which two instances in one process share.
    fn run_continued(
        &self,
        _env: &str,
        seed: u64,
        steps: u64,
        episodes: &[RolloutOptions],
    ) -> Result<Option<Vec<Recorded>>, String> {
        let mut env = self.spawn_other_process().map_err(|e| e.to_string())?;
        let mut runs = Vec::with_capacity(episodes.len());
        let mut result = Ok(true);
        for opts in episodes {
            match trace::rollout(&mut env, seed, steps, opts) {
                Ok(r) => runs.push(r),
                Err(trace::TraceError::NoUnseededReset) => {
                    result = Ok(false);
                    break;
                }
                Err(e) => {
                    result = Err(e.to_string());
                    break;
                }
            }
        }
        let closed = env.close();
        let complete = result?;
        closed.map_err(|e| e.to_string())?;
        Ok(complete.then_some(runs))
    }
}
