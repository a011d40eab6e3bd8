//! [`ProcessEnv`]: an [`Env`] served by a child process, and its factory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lockstep_canon::Value;

use crate::child::{show_duration, Child};
use crate::message::{self, Handshake, Reply, WireContract};
use lockstep::check::ProcessRunner;
use lockstep::env::{Actions, Env, EnvError, EnvFactory, EnvSpec, Transition};
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

/// An environment served over `lockstep/1` by a child process (any language).
///
/// Every fault of the child (it exits, crashes, hangs past the request timeout, prints a line
/// that is not JSON or is too long, breaks the protocol) is an [`EnvError`] naming the request,
/// the step and the child's last stderr lines; the child is then killed and reaped, and every
/// later call fails with the same error. An env that answers `"ok": false` (an exception in the
/// env) gives an error too but stays usable.
pub struct ProcessEnv {
    child: Child,
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
    /// Id of the last request sent (replies echo it).
    request_id: u64,
    buf: Vec<u8>,
    scratch: Vec<u8>,
}

/// The request being answered, for messages: `handshake`, `reset (seed 3)`, `step 17`, ...
enum Request {
    Handshake,
    Reset(u64),
    Step(u64),
    State,
    Close,
}

impl ProcessEnv {
    /// Starts `argv` (no shell) and reads its handshake.
    pub fn spawn(argv: &[String], options: &ProcessOptions) -> Result<ProcessEnv, EnvError> {
        Self::spawn_with_env(argv, options, &[])
    }

    fn spawn_with_env(
        argv: &[String],
        options: &ProcessOptions,
        extra: &[(String, String)],
    ) -> Result<ProcessEnv, EnvError> {
        let command = display_argv(argv);
        let mut env = options.env.clone();
        env.extend(extra.iter().cloned());
        let mut child = Child::spawn(argv, &env, options.max_message_bytes, options.stderr_lines)
            .map_err(|e| {
            EnvError::new(format!("env process `{command}`: cannot start: {e}"))
        })?;
        let line = match child.recv(options.startup_timeout) {
            Ok(line) => line,
            Err(fault) => {
                return Err(fatal_error(
                    &mut child,
                    &command,
                    &Request::Handshake,
                    0,
                    &fault.to_string(),
                ))
            }
        };
        let handshake = message::parse_line(line)
            .map_err(|e| format!("the handshake is not JSON ({e}): {}", excerpt(line)))
            .and_then(|v| read_handshake(&v));
        let handshake = match handshake {
            Ok(h) => h,
            Err(what) => {
                return Err(fatal_error(
                    &mut child,
                    &command,
                    &Request::Handshake,
                    0,
                    &what,
                ))
            }
        };
        let spec = handshake.spec();
        Ok(ProcessEnv {
            child,
            command,
            options: options.clone(),
            handshake,
            spec,
            transition: Transition::default(),
            steps: 0,
            started: false,
            dead: None,
            closed: false,
            request_id: 0,
            buf: Vec::new(),
            scratch: Vec::new(),
        })
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
        self.child.id()
    }

    /// The child's last stderr lines so far.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.child.stderr_tail()
    }

    fn check_usable(&self) -> Result<(), EnvError> {
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

    /// The id for the next request.
    fn next_id(&mut self) -> u64 {
        self.request_id += 1;
        self.request_id
    }

    /// Sends the request in `self.buf` and returns the parsed answer line, checked to carry the
    /// request's id. Any fault kills the child and is remembered.
    fn exchange(&mut self, request: &Request) -> Result<Value, EnvError> {
        let timeout = self.options.request_timeout;
        let id = self.request_id;
        let outcome = self
            .child
            .send(&self.buf)
            .and_then(|()| self.child.recv(timeout))
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
        outcome.map_err(|what| self.fail(request, &what))
    }

    /// Kills the child for a fault and builds (and remembers) the error.
    fn fail(&mut self, request: &Request, what: &str) -> EnvError {
        let e = fatal_error(&mut self.child, &self.command, request, self.steps, what);
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
                    self.child.id(),
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

    fn transition_request(&mut self, request: Request) -> Result<&Transition, EnvError> {
        let mut value = self.exchange(&request)?;
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
        Request::Reset(seed) => format!("reset (seed {seed})"),
        Request::Step(n) => format!("step {n}"),
        Request::State => format!("state (after step {steps})"),
        Request::Close => "close".to_string(),
    }
}

/// The first 200 characters of an offending line, for messages.
fn excerpt(line: &[u8]) -> String {
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

impl Env for ProcessEnv {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// The declared contract, when the env names its fields; otherwise the audit infers one.
    fn contract(&self) -> Option<lockstep::contract::Contract> {
        let c = &self.handshake.contract;
        let fields = c.fields.clone()?;
        lockstep::contract::Contract::new(
            c.name.clone(),
            u32::try_from(c.version).ok()?,
            lockstep::contract::ProfileName::Python,
            vec![lockstep::contract::Layer {
                name: "state".into(),
                fields,
            }],
        )
        .ok()
    }

    fn reset(&mut self, seed: u64, options: &Value) -> Result<&Transition, EnvError> {
        self.check_usable()?;
        let id = self.next_id();
        message::write_reset(&mut self.buf, id, seed, options).map_err(|e| {
            EnvError::new(format!(
                "env process `{}`: reset options cannot be sent: {e}",
                self.command
            ))
        })?;
        self.steps = 0;
        self.started = true;
        self.transition_request(Request::Reset(seed))
    }

    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError> {
        self.check_usable()?;
        if !self.started {
            return Err(EnvError::new(format!(
                "env process `{}`: step before the first reset",
                self.command
            )));
        }
        let id = self.next_id();
        message::write_step(&mut self.buf, id, actions, &self.spec);
        let n = self.steps + 1;
        self.transition_request(Request::Step(n))?;
        self.steps = n;
        Ok(&self.transition)
    }

    fn state(&mut self) -> Result<Value, EnvError> {
        self.check_usable()?;
        let id = self.next_id();
        message::write_op(&mut self.buf, id, "state");
        let value = self.exchange(&Request::State)?;
        let map = self.answer(&Request::State, &value)?;
        match message::read_state(map) {
            Ok(state) => Ok(state),
            Err(e) => Err(self.fail(
                &Request::State,
                &format!("the answer breaks the protocol: {e}"),
            )),
        }
    }

    fn close(&mut self) -> Result<(), EnvError> {
        if self.closed {
            return Ok(());
        }
        if let Some(e) = &self.dead {
            self.closed = true;
            return Err(e.clone());
        }
        let id = self.next_id();
        message::write_op(&mut self.buf, id, "close");
        let result = self
            .exchange(&Request::Close)
            .and_then(|v| self.answer(&Request::Close, &v).map(|_| ()));
        self.closed = true;
        match self.child.finish(self.options.request_timeout) {
            Some(status) if !status.success() && result.is_ok() => Err(EnvError::new(format!(
                "env process `{}` (pid {}): close: the process ended with {status}",
                self.command,
                self.child.id()
            ))),
            None if result.is_ok() => Err(EnvError::new(format!(
                "env process `{}` (pid {}): close: the process did not exit within {} and was killed",
                self.command,
                self.child.id(),
                show_duration(self.options.request_timeout)
            ))),
            _ => result,
        }
    }
}

/// Builds [`ProcessEnv`]s: each `make()` starts a fresh child from `argv`.
#[derive(Debug)]
pub struct ProcessEnvFactory {
    pub argv: Vec<String>,
    pub options: ProcessOptions,
    /// Children of the other-process check started so far (numbers their `PYTHONHASHSEED`).
    other_processes: AtomicU64,
}

impl ProcessEnvFactory {
    /// A factory for `argv` (program first, no shell) with the given options.
    pub fn new(argv: Vec<String>, options: ProcessOptions) -> ProcessEnvFactory {
        ProcessEnvFactory {
            argv,
            options,
            other_processes: AtomicU64::new(0),
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

    fn spawn_with_hash_seed(&self, hash_seed: u64) -> Result<ProcessEnv, EnvError> {
        let mut extra = Vec::new();
        if self.options.vary_python_hash_seed
            && !self.options.env.iter().any(|(k, _)| k == "PYTHONHASHSEED")
        {
            extra.push(("PYTHONHASHSEED".to_string(), hash_seed.to_string()));
        }
        ProcessEnv::spawn_with_env(&self.argv, &self.options, &extra)
    }
}

impl EnvFactory for ProcessEnvFactory {
    fn id(&self) -> String {
        display_argv(&self.argv)
    }

    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        Ok(Box::new(self.spawn()?))
    }
}

/// The other-process check for an external env: each run is a rollout of a fresh child (a new
/// interpreter, and with [`ProcessOptions::vary_python_hash_seed`] another string-hash salt),
/// recorded by this process. Reset options are JSON null, as for every [`ProcessRunner`].
impl ProcessRunner for ProcessEnvFactory {
    fn run(
        &self,
        _env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String> {
        let mut env = self.spawn_other_process().map_err(|e| e.to_string())?;
        let opts = RolloutOptions {
            capture,
            ..RolloutOptions::default()
        };
        let recorded = trace::rollout(&mut env, seed, steps, &opts).map_err(|e| e.to_string());
        let closed = env.close();
        let recorded = recorded?;
        closed.map_err(|e| e.to_string())?;
        Ok(recorded)
    }
}
