//! The environment trait every lockstep check drives, and the typed arrays environments show.
//!
//! The trait is stateful (`reset` / `step` / `state`) because the environments people bring are:
//! Gymnasium, PettingZoo and browser benchmarks all keep their episode inside an object. It is
//! multi-agent in the PettingZoo-parallel shape; a single-agent env is one agent.
//!
//! `reset` and `step` return a borrow of a [`Transition`] the env owns and reuses, so a fast env
//! can rewrite only what changed instead of allocating every step. [`Array`] records every
//! mutable borrow with a process-unique revision: a tracer may reuse the digest of an array
//! whose revision has not moved, and cannot be fooled, because the only way to change the
//! contents is through a borrow that takes a fresh revision.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use lockstep_canon::Value;

/// Element type of an [`Array`]. The tag is part of the trace encoding: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    I8,
    U8,
    I32,
    I64,
    F32,
    F64,
}

impl DType {
    /// Stable one-byte tag used in trace framing.
    pub const fn tag(self) -> u8 {
        match self {
            DType::Bool => 1,
            DType::I8 => 2,
            DType::U8 => 3,
            DType::I32 => 4,
            DType::I64 => 5,
            DType::F32 => 6,
            DType::F64 => 7,
        }
    }

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// The numpy name (`float32`, `int8`, ...), used in every text format.
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// Parses a numpy dtype name.
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "int8" => DType::I8,
            "uint8" => DType::U8,
            "int32" => DType::I32,
            "int64" => DType::I64,
            "float32" => DType::F32,
            "float64" => DType::F64,
            _ => return None,
        })
    }
}

/// Typed storage of an [`Array`]. `Bool` is stored as `u8` 0/1, as numpy does.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayData {
    Bool(Vec<u8>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl ArrayData {
    pub fn dtype(&self) -> DType {
        match self {
            ArrayData::Bool(_) => DType::Bool,
            ArrayData::I8(_) => DType::I8,
            ArrayData::U8(_) => DType::U8,
            ArrayData::I32(_) => DType::I32,
            ArrayData::I64(_) => DType::I64,
            ArrayData::F32(_) => DType::F32,
            ArrayData::F64(_) => DType::F64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ArrayData::Bool(v) | ArrayData::U8(v) => v.len(),
            ArrayData::I8(v) => v.len(),
            ArrayData::I32(v) => v.len(),
            ArrayData::I64(v) => v.len(),
            ArrayData::F32(v) => v.len(),
            ArrayData::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn zeros(dtype: DType, len: usize) -> ArrayData {
        match dtype {
            DType::Bool => ArrayData::Bool(vec![0; len]),
            DType::I8 => ArrayData::I8(vec![0; len]),
            DType::U8 => ArrayData::U8(vec![0; len]),
            DType::I32 => ArrayData::I32(vec![0; len]),
            DType::I64 => ArrayData::I64(vec![0; len]),
            DType::F32 => ArrayData::F32(vec![0.0; len]),
            DType::F64 => ArrayData::F64(vec![0.0; len]),
        }
    }
}

static NEXT_REVISION: AtomicU64 = AtomicU64::new(1);

fn fresh_revision() -> u64 {
    // Only identity matters here, never order between threads: Relaxed is enough.
    NEXT_REVISION.fetch_add(1, Ordering::Relaxed)
}

/// An n-dimensional array of one dtype, row-major. Its canonical bytes are the elements in
/// little-endian order, whatever the machine.
#[derive(Debug, Clone)]
pub struct Array {
    shape: Vec<usize>,
    data: ArrayData,
    revision: u64,
}

impl PartialEq for Array {
    fn eq(&self, other: &Array) -> bool {
        self.shape == other.shape && self.data == other.data
    }
}

/// Errors building an [`Array`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArrayError {
    #[error("shape {shape:?} holds {expected} elements but {actual} were given")]
    ShapeMismatch {
        shape: Vec<usize>,
        expected: usize,
        actual: usize,
    },
    #[error("{len} bytes is not a whole number of {dtype} elements")]
    RaggedBytes { dtype: &'static str, len: usize },
}

impl Array {
    /// An array of zeros.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Array {
        let len = shape.iter().product();
        Array {
            shape: shape.to_vec(),
            data: ArrayData::zeros(dtype, len),
            revision: fresh_revision(),
        }
    }

    /// Wraps typed data; the shape must hold exactly `data.len()` elements.
    pub fn new(shape: &[usize], data: ArrayData) -> Result<Array, ArrayError> {
        let expected: usize = shape.iter().product();
        if expected != data.len() {
            return Err(ArrayError::ShapeMismatch {
                shape: shape.to_vec(),
                expected,
                actual: data.len(),
            });
        }
        Ok(Array {
            shape: shape.to_vec(),
            data,
            revision: fresh_revision(),
        })
    }

    /// Builds an array from little-endian bytes (the wire and trace form).
    pub fn from_le_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<Array, ArrayError> {
        let size = dtype.size();
        if !bytes.len().is_multiple_of(size) {
            return Err(ArrayError::RaggedBytes {
                dtype: dtype.name(),
                len: bytes.len(),
            });
        }
        let data = match dtype {
            DType::Bool => ArrayData::Bool(bytes.to_vec()),
            DType::U8 => ArrayData::U8(bytes.to_vec()),
            DType::I8 => ArrayData::I8(bytes.iter().map(|&b| b as i8).collect()),
            DType::I32 => ArrayData::I32(
                bytes
                    .chunks_exact(4)
                    .map(|c| i32::from_le_bytes(c.try_into().expect("chunk of 4")))
                    .collect(),
            ),
            DType::I64 => ArrayData::I64(
                bytes
                    .chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().expect("chunk of 8")))
                    .collect(),
            ),
            DType::F32 => ArrayData::F32(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().expect("chunk of 4")))
                    .collect(),
            ),
            DType::F64 => ArrayData::F64(
                bytes
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().expect("chunk of 8")))
                    .collect(),
            ),
        };
        Array::new(shape, data)
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn data(&self) -> &ArrayData {
        &self.data
    }

    /// Mutable access to the elements. Takes a fresh revision, so any digest cached for the
    /// old contents is never reused.
    pub fn data_mut(&mut self) -> &mut ArrayData {
        self.revision = fresh_revision();
        &mut self.data
    }

    /// Process-unique identity of the current contents: equal revisions imply equal contents.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Calls `f` with the little-endian bytes of the elements, in chunks, without allocating
    /// on little-endian machines.
    pub fn with_le_bytes(&self, mut f: impl FnMut(&[u8])) {
        macro_rules! emit {
            ($v:expr) => {{
                if cfg!(target_endian = "little") {
                    f(bytemuck::cast_slice($v.as_slice()));
                } else {
                    let mut buf = Vec::with_capacity($v.len() * std::mem::size_of_val(&$v[0]));
                    for x in $v.iter() {
                        buf.extend_from_slice(&x.to_le_bytes());
                    }
                    f(&buf);
                }
            }};
        }
        match &self.data {
            ArrayData::Bool(v) | ArrayData::U8(v) => f(v),
            ArrayData::I8(v) => f(bytemuck::cast_slice(v.as_slice())),
            ArrayData::I32(v) if !v.is_empty() => emit!(v),
            ArrayData::I64(v) if !v.is_empty() => emit!(v),
            ArrayData::F32(v) if !v.is_empty() => emit!(v),
            ArrayData::F64(v) if !v.is_empty() => emit!(v),
            _ => f(&[]),
        }
    }

    /// The little-endian bytes as an owned vector (wire formats, tests).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * self.dtype().size());
        self.with_le_bytes(|b| out.extend_from_slice(b));
        out
    }

    /// Element `index` as f64 (exact for every dtype except i64 beyond 2^53), for reports.
    pub fn element_f64(&self, index: usize) -> Option<f64> {
        Some(match &self.data {
            ArrayData::Bool(v) | ArrayData::U8(v) => f64::from(*v.get(index)?),
            ArrayData::I8(v) => f64::from(*v.get(index)?),
            ArrayData::I32(v) => f64::from(*v.get(index)?),
            ArrayData::I64(v) => *v.get(index)? as f64,
            ArrayData::F32(v) => f64::from(*v.get(index)?),
            ArrayData::F64(v) => *v.get(index)?,
        })
    }
}

/// A declared action or observation space.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Space {
    /// `start ..= start + n - 1`.
    Discrete { n: u64, start: i64 },
    /// One discrete choice per entry: `0 ..= nvec[i] - 1`.
    MultiDiscrete { nvec: Vec<u64> },
    /// Elementwise bounds; `low.len() == high.len() == shape.product()`.
    Box {
        dtype: String,
        shape: Vec<usize>,
        low: Vec<f64>,
        high: Vec<f64>,
    },
    /// One part per entry, in order (Gymnasium's `Tuple`). An action is an [`Action::Tuple`].
    Tuple { spaces: Vec<Space> },
    /// One part per key, in key order (Gymnasium's `Dict`). An action is an [`Action::Dict`].
    Dict { spaces: BTreeMap<String, Space> },
    /// Any number of elements of one space (Gymnasium's `Sequence`). An observation holds its
    /// elements stacked along a first axis whose length is the sequence's (docs/protocol.md);
    /// an action is an [`Action::Tuple`] of the elements.
    Sequence { space: std::boxed::Box<Space> },
}

/// One agent's declared interface.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentSpec {
    pub name: String,
    pub action_space: Space,
    /// Observation key -> space, keys sorted.
    pub observation_space: BTreeMap<String, Space>,
}

/// What an environment declares about itself before any episode.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvSpec {
    /// A stable id, e.g. `fixture`, `range:ransomware`, or the command line of an external env.
    pub id: String,
    /// The configuration that, with the seed, determines an episode. Goldens and reports name it.
    pub config: Value,
    /// Agents in a fixed order (sorted by name).
    pub agents: Vec<AgentSpec>,
}

/// An action for one agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Discrete(i64),
    MultiDiscrete(Vec<i64>),
    Continuous(Vec<f64>),
    /// The parts of a [`Space::Tuple`] in order, or the elements of a [`Space::Sequence`].
    Tuple(Vec<Action>),
    /// The parts of a [`Space::Dict`], by key.
    Dict(BTreeMap<String, Action>),
}

/// Actions for the live agents, by name.
pub type Actions = BTreeMap<String, Action>;

/// What one agent sees after a reset or a step.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentStep {
    /// Observation key -> array. An agent that has an `action_mask` key (int8 or bool, one
    /// entry per discrete choice, multi-discrete masks concatenated) gets only unmasked actions
    /// from lockstep's action sampler.
    pub obs: BTreeMap<String, Array>,
    /// 0.0 after a reset.
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
    /// Any JSON; digested in canonical form.
    pub info: Value,
}

/// What the env shows after a reset or a step: every agent that acted or was reset, and the
/// log lines emitted by this call (new lines only).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transition {
    pub agents: BTreeMap<String, AgentStep>,
    pub logs: Vec<String>,
}

impl Transition {
    /// True when every agent is terminated or truncated (the episode is over).
    pub fn is_done(&self) -> bool {
        self.agents.values().all(|a| a.terminated || a.truncated)
    }

    /// Agents still acting after this transition, in name order.
    pub fn live_agents(&self) -> impl Iterator<Item = &str> {
        self.agents
            .iter()
            .filter(|(_, a)| !(a.terminated || a.truncated))
            .map(|(n, _)| n.as_str())
    }
}

/// An environment failed (or, for an external env, its process or protocol did).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct EnvError {
    pub message: String,
}

impl EnvError {
    pub fn new(message: impl Into<String>) -> EnvError {
        EnvError {
            message: message.into(),
        }
    }
}

/// A stateful, seeded, multi-agent environment.
///
/// Contract for implementors: after `reset(seed, options)` the episode must depend on nothing
/// but `seed`, `options`, the spec's `config` and the actions given; [`Env::state`] must return
/// everything the env's reset contract covers, as plain JSON.
pub trait Env: Send {
    fn spec(&self) -> &EnvSpec;

    /// Starts an episode. Rewards are 0 and flags false in the returned transition.
    fn reset(&mut self, seed: u64, options: &Value) -> Result<&Transition, EnvError>;

    /// Starts an episode with no seed: the `reset()` a training loop calls after its first
    /// episode (Gymnasium's vector envs, Stable-Baselines3, RLlib seed only the first), which
    /// continues from the env's own RNG. `None` when the env has no such reset: the built-in
    /// envs derive every episode from its seed, so for them the continuation check does not
    /// apply.
    fn reset_unseeded(&mut self, options: &Value) -> Option<Result<&Transition, EnvError>> {
        let _ = options;
        None
    }

    /// Advances the episode by one step of all live agents.
    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError>;

    /// The contracted state, as JSON.
    fn state(&mut self) -> Result<Value, EnvError>;

    /// The reset contract the env declares for its starting state, if any. Without one, an
    /// audit infers the contract from the top-level fields of the state after a reset.
    fn contract(&self) -> Option<crate::contract::Contract> {
        None
    }

    /// True when the env declares that its episodes do not depend on the seed at all (it has
    /// no randomness: a fixed maze, rock-paper-scissors against a scripted opponent). The
    /// other-seed check is then reported as not applicable instead of failing; it still fails
    /// if two seeds do give different episodes. Undeclared, an env that ignores its seed fails.
    fn seedless(&self) -> bool {
        false
    }

    /// The probes that read the probed layers of [`Env::contract`] (a database, a browser);
    /// the audit places their snapshots in the starting state. An env whose contract probes
    /// nothing needs none.
    fn probes(&self) -> Option<&crate::probe::ProbeSet> {
        None
    }

    /// Switches the env's source tracer on or off (docs/replay.md, "Causes"): while on, the
    /// env records each read of a nondeterministic source (a process-global RNG, the clock,
    /// the pid, a file) with the line of its own code that made it. `Ok(false)` when the env
    /// has no tracer: only Python envs have one, and the built-in envs need none.
    fn trace_sources(&mut self, on: bool) -> Result<bool, EnvError> {
        let _ = on;
        Ok(false)
    }

    /// The reads the tracer recorded since the last call, each a JSON object
    /// ([`crate::cause::SourceRead`]); empty when tracing is off.
    fn traced_sources(&mut self) -> Result<Vec<Value>, EnvError> {
        Ok(Vec::new())
    }

    /// What the env's process touched outside itself since the env was made (files written,
    /// databases opened, connections: [`crate::cause::Effect`]), or `None` when the env does
    /// not record it.
    fn effects(&mut self) -> Result<Option<Vec<Value>>, EnvError> {
        Ok(None)
    }

    /// What runs the env, for the report (`about.provenance`): an interpreter's version and
    /// its packages', or `None` when the env does not say (the built-in envs are this
    /// lockstep, whose version the report has).
    fn provenance(&mut self) -> Result<Option<Value>, EnvError> {
        Ok(None)
    }

    /// Releases resources (an external env's process). Called at most once.
    fn close(&mut self) -> Result<(), EnvError> {
        Ok(())
    }
}

/// Builds fresh instances of one environment configuration, for checks that need several
/// (interleaved, parallel workers).
pub trait EnvFactory: Send + Sync {
    fn id(&self) -> String;
    fn make(&self) -> Result<Box<dyn Env>, EnvError>;

    /// An instance the parallel check steps on a thread of its own while others step theirs.
    /// An external env's child runs it on a thread of the child's own, and every instance made
    /// with [`Self::make`] on the child's main thread: a thread-bound env (a browser client
    /// bound to the thread that started it) then fails the parallel check only, in words, and
    /// every other check drives it as its users do. Default: [`Self::make`].
    fn make_threaded(&self) -> Result<Box<dyn Env>, EnvError> {
        self.make()
    }

    /// How the parallel check forks this process to run its threads in the fork, when the env
    /// lives in this process and a crash of it on threads must not end the caller (an env of
    /// the caller's Python interpreter). Default: `None`, the threads run here (an external
    /// env's threads are in its child already).
    fn thread_isolation(&self) -> Option<&dyn crate::check::ThreadIsolation> {
        None
    }

    /// The factory one trial (one env, one seed: its audit and all its checks) makes its
    /// instances with, when it differs from this one: an external env hosts them all in one
    /// child process. Never shared between trials, so no verdict depends on scheduling.
    /// Default: `None`, this factory itself.
    fn session(&self) -> Option<Box<dyn EnvFactory + '_>> {
        None
    }

    /// How the forked-workers check forks this env's process, when it can
    /// ([`crate::check::Forker`]). Default: `None`, the check does not apply.
    fn forker(&self) -> Option<&dyn crate::check::Forker> {
        None
    }

    /// For a vector env (sub-envs served as agents `env_0`, `env_1`, ...): the factory of its
    /// twin, the same sub-envs as single envs driven as the vector env promises (the vector
    /// check's reference). Default: `None`, the check does not apply.
    fn vector_twin(&self) -> Option<Box<dyn EnvFactory + '_>> {
        None
    }
}

impl<F> EnvFactory for (String, F)
where
    F: Fn() -> Result<Box<dyn Env>, EnvError> + Send + Sync,
{
    fn id(&self) -> String {
        self.0.clone()
    }
    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        (self.1)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutation_takes_a_fresh_revision() {
        let mut a = Array::zeros(DType::F32, &[2, 3]);
        let before = a.revision();
        if let ArrayData::F32(v) = a.data_mut() {
            v[1] = 1.5;
        }
        assert_ne!(before, a.revision());
        assert_eq!(a.element_f64(1), Some(1.5));
    }

    #[test]
    fn le_bytes_round_trip() {
        let a = Array::new(&[3], ArrayData::I32(vec![1, -2, 300])).unwrap();
        let bytes = a.to_le_bytes();
        assert_eq!(bytes, [1, 0, 0, 0, 254, 255, 255, 255, 44, 1, 0, 0]);
        let b = Array::from_le_bytes(DType::I32, &[3], &bytes).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn shape_must_match_data() {
        let err = Array::new(&[2, 2], ArrayData::F64(vec![0.0; 3])).unwrap_err();
        assert!(err.to_string().contains("4 elements but 3"));
        assert!(Array::from_le_bytes(DType::F32, &[1], &[0, 0, 0]).is_err());
    }
}
