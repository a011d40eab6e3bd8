//! The digest of what an episode shows: observations, rewards, terminations, infos, logs.
//!
//! Two rollouts are "the same episode" exactly when their traces are equal. A trace keeps one
//! [`StepDigest`] per transition (step 0 is the reset), with a digest per agent and per
//! observation key, so a difference can be localised to a step, an agent and a key without
//! keeping the arrays; the [`Rollout`] driver can capture the full [`Transition`] of one step
//! when the element itself is wanted (a rollout is deterministic, so the checks re-run to the
//! divergent step instead of keeping every step in memory).
//!
//! # Format `lockstep/trace/v1`
//!
//! Every digest is BLAKE3 (unkeyed, 32-byte output; the `blake3` crate, version 1), chosen
//! over SHA-256 because hashing is nearly all of a trace's cost and BLAKE3 hashes large arrays
//! about three times faster here (see docs/trace.md for the figures). Integers are little-endian, `u64` unless said otherwise; a *name* is its
//! UTF-8 byte length as `u64` followed by the bytes. Each node starts with a one-byte tag, so
//! no two kinds of node can share an encoding, and a parent holds its children's 32-byte
//! digests, so the encoding is unambiguous (a Merkle tree):
//!
//! ```text
//! array   = H('A' || dtype tag (u8, DType::tag) || ndim || dim_0 .. dim_n-1 || byte length || H(element bytes, little-endian))
//! info    = H('I' || canonical JSON of the info, profile python)
//! logs    = H('L' || line count || line_0 as name || .. )         the lines this transition emitted
//! agent   = H('G' || agent name || key count || (key name || array digest)* in key order
//!              || reward (f64 bits) || terminated (u8 0/1) || truncated (u8 0/1) || info digest)
//! step    = H('S' || step index || agent count || agent digest* in agent-name order || logs digest)
//! episode_-1 = 32 zero bytes;  episode_k = H('E' || episode_k-1 || step_k);  episode = episode_last
//! ```
//!
//! A rollout (see [`Rollout`]) is: `reset(seed, options)` (step 0), then while the last
//! transition is not done ([`Transition::is_done`]) and fewer than `steps` steps were taken,
//! `step(actions)` with actions from [`ActionSampler`] seeded with the same seed (algorithm
//! [`ACTION_SAMPLER`]). Reset is never automatic: the trace records how the rollout ended
//! ([`End`]).
//!
//! Array digests are cached per (agent, key) by [`Array::revision`]: an array whose revision has
//! not moved since the last step has the same contents (every mutable borrow takes a fresh,
//! process-unique revision), so its digest is reused instead of hashing the bytes again.
//! Arrays of 16 KiB or more also keep their last bytes and the BLAKE3 chaining value of each
//! 4 KiB block ([`Blocks`]): only changed blocks are rehashed, and the blocks are merged up
//! BLAKE3's own tree, so the element hash is still `blake3::hash` of the bytes. Infos keep
//! their canonical text member by member ([`InfoCache`]): only changed members are written
//! again, and the bytes hashed are still the info's canonical JSON. None of the caches
//! changes a digest: [`CacheMode::Off`] hashes everything from scratch and gives the same
//! digests (tested).

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::time::{Duration, Instant};

use base64::Engine as _;
use blake3::Hasher;
use lockstep_canon::{Profile, Value};

use crate::actions::ActionSampler;
use crate::env::{Actions, AgentStep, Array, ArrayData, DType, Env, EnvError, Transition};

/// Version of the trace encoding above. A change to any byte of it is a new version.
pub const FORMAT: &str = "lockstep/trace/v1";

mod info_cache;
mod kept;
mod v2;
mod value_bytes;
use info_cache::InfoCache;
pub use kept::Kept;
use kept::KeptPrefix;
pub use v2::{BY_HASH_MIN_BYTES, FORMAT_V2, FORMAT_V3, FORMAT_V4};

/// Which encoding a [`Tracer`] computes. v1 (the default) has a digest per agent, key, info
/// and log list, which is what localises a divergence inside a step; v2 ([`v2`]) hashes each
/// step in one BLAKE3 call, several times cheaper, and pins steps and episodes only; v3 is
/// v2's layout hashed with the non-cryptographic XXH3-128, for equality across runs only; v4
/// is v3 with each info as its value layout ([`value_bytes`]) instead of its canonical text,
/// equal exactly where the text is, and what the checks compare ([`CHECK_FORMAT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    V1,
    V2,
    V3,
    V4,
}

impl Format {
    /// The format's name as traces record it ([`FORMAT`], [`FORMAT_V2`], [`FORMAT_V3`],
    /// [`FORMAT_V4`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::V1 => FORMAT,
            Format::V2 => FORMAT_V2,
            Format::V3 => FORMAT_V3,
            Format::V4 => FORMAT_V4,
        }
    }
}

/// Version of the action sampler algorithm ([`crate::actions`], pinned by its value-stability
/// test) that drives every rollout. Goldens record it: a new sampler means new episodes.
pub const ACTION_SAMPLER: &str = "lockstep/actions/v1";

/// A BLAKE3 digest, shown and serialised as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The all-zero digest: the episode chain's start.
    pub const ZERO: Digest = Digest([0; 32]);

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub fn from_hex(text: &str) -> Option<Digest> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(text, &mut out).ok()?;
        Some(Digest(out))
    }

    /// The first 12 hex digits, for one-line summaries.
    pub fn short(&self) -> String {
        self.to_hex()[..12].to_string()
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
        let text = String::deserialize(d)?;
        Digest::from_hex(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not 64 lowercase hex digits"))
        })
    }
}

/// Floats in trace JSON are text (`0.5`, `-0.0`, `NaN`, `inf`), so NaN and infinities survive
/// JSON; the digest, not this text, is the authority.
mod f64_text {
    pub fn serialize<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{x:?}"))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        text.parse()
            .map_err(|_| serde::de::Error::custom(format!("{text:?} is not a float")))
    }
}

/// What one agent showed at one step, as digests (rewards and flags kept as values, so a
/// report can print them).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentDigest {
    pub digest: Digest,
    /// Observation key -> array digest.
    pub obs: BTreeMap<String, Digest>,
    #[serde(with = "f64_text")]
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
    pub info: Digest,
}

/// One transition's digests.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepDigest {
    /// 0 for the reset, then 1, 2, ...
    pub step: u64,
    pub digest: Digest,
    pub agents: BTreeMap<String, AgentDigest>,
    pub logs: Digest,
    /// How many log lines this transition emitted.
    pub log_lines: u64,
}

/// How a rollout ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// Every agent terminated or truncated.
    Done,
    /// The requested number of steps was taken first.
    StepsExhausted,
}

/// The trace of one rollout.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Trace {
    /// [`FORMAT`].
    pub format: String,
    /// The env's id ([`crate::env::EnvSpec::id`]).
    pub env: String,
    pub seed: u64,
    /// Steps requested (the reset is not counted).
    pub steps: u64,
    pub end: End,
    /// The rolling episode digest (the chain's last link).
    pub episode: Digest,
    /// One entry per transition, the reset first.
    pub step_digests: Vec<StepDigest>,
}

/// Whether array digests are reused across steps by revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    #[default]
    On,
    Off,
}

/// A rollout or a trace failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("env failed at step {step}: {source}")]
    Env { step: u64, source: EnvError },
    #[error("the env has no unseeded reset")]
    NoUnseededReset,
    #[error("info of agent {agent:?} at step {step} has no canonical form: {message}")]
    Info {
        step: u64,
        agent: String,
        message: String,
    },
}

/// The bytes of one node, hashed in one call: a `blake3::Hasher` is a 2 KiB struct, and
/// setting one up per small node costs more than hashing the node.
struct Node(Vec<u8>);

impl Node {
    fn new(tag: u8, capacity: usize) -> Node {
        let mut v = Vec::with_capacity(capacity);
        v.push(tag);
        Node(v)
    }
    /// A node written into a recycled buffer (the tracer keeps a few, so that a step
    /// allocates none for its nodes).
    fn reuse(tag: u8, mut v: Vec<u8>) -> Node {
        v.clear();
        v.push(tag);
        Node(v)
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn name(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
    fn finish(&self) -> Digest {
        Digest(*blake3::hash(&self.0).as_bytes())
    }
}

/// The elements' little-endian bytes as one slice, where they are laid out so in memory.
fn le_slice(d: &ArrayData) -> Option<&[u8]> {
    use bytemuck::cast_slice;
    Some(match d {
        ArrayData::Bool(v) | ArrayData::U8(v) => v,
        ArrayData::I8(v) => cast_slice(v),
        _ if cfg!(target_endian = "big") => return None,
        ArrayData::I32(v) => cast_slice(v),
        ArrayData::I64(v) => cast_slice(v),
        ArrayData::F32(v) => cast_slice(v),
        ArrayData::F64(v) => cast_slice(v),
    })
}

/// The digest of one array (node `A`). The elements are hashed on their own first, from
/// offset 0 and in one call, so that BLAKE3 hashes their 1 KiB chunks in parallel (SIMD); a
/// header in front of them would shift every chunk boundary and make most of the work serial.
pub fn array_digest(a: &Array) -> Digest {
    let mut buf = Vec::new();
    array_digest_in(a, &mut buf)
}

/// [`array_digest`] writing its node into a recycled buffer.
fn array_digest_in(a: &Array, buf: &mut Vec<u8>) -> Digest {
    let elements = match le_slice(a.data()) {
        Some(bytes) => blake3::hash(bytes),
        None => {
            let mut h = Hasher::new();
            a.with_le_bytes(|b| {
                h.update(b);
            });
            h.finalize()
        }
    };
    array_node(a, &elements, buf)
}

/// Node `A` of `a` given the BLAKE3 hash of its element bytes.
fn array_node(a: &Array, elements: &blake3::Hash, buf: &mut Vec<u8>) -> Digest {
    let mut n = Node::reuse(b'A', std::mem::take(buf));
    n.bytes(&[a.dtype().tag()]);
    n.u64(a.shape().len() as u64);
    for &d in a.shape() {
        n.u64(d as u64);
    }
    n.u64((a.len() * a.dtype().size()) as u64);
    n.bytes(elements.as_bytes());
    let d = n.finish();
    *buf = n.0;
    d
}

/// The digest of one info value (node `I`).
pub fn info_digest(info: &Value) -> io::Result<Digest> {
    info_digest_with(info, &mut Vec::new())
}

/// [`info_digest`] with a reusable buffer: the canonical writer makes many small writes, and
/// hashing the whole text in one call is several times cheaper than streaming them.
fn info_digest_with(info: &Value, buf: &mut Vec<u8>) -> io::Result<Digest> {
    buf.clear();
    buf.push(b'I');
    append(info, buf)?;
    Ok(Digest(*blake3::hash(buf).as_bytes()))
}

/// Appends the canonical JSON (profile python) of `v` to `buf`, straight into the `Vec`;
/// a value without one is an `InvalidData` error worded as `lockstep_canon::write` words it.
fn append(v: &Value, buf: &mut Vec<u8>) -> io::Result<()> {
    lockstep_canon::append_value(v, Profile::Python, buf)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The digest of one transition's log lines (node `L`).
pub fn logs_digest(lines: &[String]) -> Digest {
    logs_digest_in(lines, &mut Vec::new())
}

/// [`logs_digest`] writing its node into a recycled buffer.
fn logs_digest_in(lines: &[String], buf: &mut Vec<u8>) -> Digest {
    let mut n = Node::reuse(b'L', std::mem::take(buf));
    n.u64(lines.len() as u64);
    for line in lines {
        n.name(line);
    }
    let d = n.finish();
    *buf = n.0;
    d
}

/// The next link of the episode chain (node `E`).
pub fn chain(prev: &Digest, step: &Digest) -> Digest {
    let mut n = Node::new(b'E', 65);
    n.bytes(&prev.0);
    n.bytes(&step.0);
    n.finish()
}

/// Recomputes an agent's digest (node `G`) from the parts a [`AgentDigest`] records: what lets
/// a stored trace (a golden file) be checked for consistency without its env. Equal to the
/// digest [`Tracer::record`] computes (tested).
pub fn agent_digest_of(agent: &str, a: &AgentDigest) -> Digest {
    let mut h = Node::new(b'G', 64 + 40 * a.obs.len());
    h.name(agent);
    h.u64(a.obs.len() as u64);
    for (key, d) in &a.obs {
        h.name(key);
        h.bytes(&d.0);
    }
    h.u64(a.reward.to_bits());
    h.bytes(&[u8::from(a.terminated), u8::from(a.truncated)]);
    h.bytes(&a.info.0);
    h.finish()
}

/// Recomputes a step's digest (node `S`) from its recorded agent digests and logs digest.
pub fn step_digest_of(s: &StepDigest) -> Digest {
    let mut sh = Node::new(b'S', 56 + 32 * s.agents.len());
    sh.u64(s.step);
    sh.u64(s.agents.len() as u64);
    for a in s.agents.values() {
        sh.bytes(&a.digest.0);
    }
    sh.bytes(&s.logs.0);
    sh.finish()
}

/// Arrays of at least this many bytes get a [`Blocks`] cache (cache mode on).
const BLOCKED_MIN_BYTES: usize = 16 * 1024;

/// Bytes per block of [`Blocks`]: four BLAKE3 chunks, a power of two of chunks, so that every
/// block but the last is a whole subtree of BLAKE3's tree and the last one is its tail.
const BLOCK_BYTES: usize = 4 * blake3::CHUNK_LEN;

/// The last element bytes seen under one (agent, key) and the BLAKE3 chaining value of each
/// 4 KiB block of them. When the array changes, blocks are compared with the previous bytes
/// (a memcmp is ten times cheaper than hashing) and only the changed ones are rehashed; the
/// chaining values are then merged up BLAKE3's own tree (`blake3::hazmat`), so the result is
/// exactly `blake3::hash` of the bytes: the trace format does not change (tested).
#[derive(Debug, Clone, Default)]
struct Blocks {
    /// Invariant: `cvs[i]` is the chaining value of block `i` of `prev` at its offset.
    prev: Vec<u8>,
    cvs: Vec<[u8; 32]>,
}

impl Blocks {
    /// `blake3::hash(bytes)`, rehashing only changed blocks.
    fn hash(&mut self, bytes: &[u8]) -> blake3::Hash {
        use blake3::hazmat::HasherExt;
        if bytes.len() <= BLOCK_BYTES {
            // One block is BLAKE3's root itself, not a subtree: nothing to keep.
            self.prev.clear();
            return blake3::hash(bytes);
        }
        let cv = |i: usize, block: &[u8]| {
            Hasher::new()
                .set_input_offset((i * BLOCK_BYTES) as u64)
                .update(block)
                .finalize_non_root()
        };
        if self.prev.len() != bytes.len() {
            self.prev.clear();
            self.prev.extend_from_slice(bytes);
            self.cvs.clear();
            self.cvs
                .extend(bytes.chunks(BLOCK_BYTES).enumerate().map(|(i, b)| cv(i, b)));
        } else {
            let blocks = self
                .prev
                .chunks_mut(BLOCK_BYTES)
                .zip(bytes.chunks(BLOCK_BYTES));
            for (i, (old, new)) in blocks.enumerate() {
                if old != new {
                    old.copy_from_slice(new);
                    self.cvs[i] = cv(i, new);
                }
            }
        }
        merge_root(&self.cvs)
    }
}

/// BLAKE3's left subtree holds the largest power of two of blocks strictly below `n` (n >= 2).
fn left_blocks(n: usize) -> usize {
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// The chaining value of a run of whole blocks' subtrees (non-root).
fn merge_cvs(cvs: &[[u8; 32]]) -> [u8; 32] {
    use blake3::hazmat::{merge_subtrees_non_root, Mode};
    if cvs.len() == 1 {
        return cvs[0];
    }
    let l = left_blocks(cvs.len());
    merge_subtrees_non_root(&merge_cvs(&cvs[..l]), &merge_cvs(&cvs[l..]), Mode::Hash)
}

/// The root hash of at least two blocks' chaining values.
fn merge_root(cvs: &[[u8; 32]]) -> blake3::Hash {
    use blake3::hazmat::{merge_subtrees_root, Mode};
    let l = left_blocks(cvs.len());
    merge_subtrees_root(&merge_cvs(&cvs[..l]), &merge_cvs(&cvs[l..]), Mode::Hash)
}

/// Arrays smaller than this are hashed rather than compared with other agents' arrays.
const DEDUPE_MIN_BYTES: usize = 1024;

/// Bitwise equality of two arrays' elements (floats by bits: `-0.0` and `0.0` differ, equal
/// NaNs agree), whatever the machine's byte order.
fn same_bits(a: &ArrayData, b: &ArrayData) -> bool {
    use ArrayData::*;
    match (a, b) {
        (Bool(x), Bool(y)) | (U8(x), U8(y)) => x == y,
        (I8(x), I8(y)) => x == y,
        (I32(x), I32(y)) => x == y,
        (I64(x), I64(y)) => x == y,
        (F32(x), F32(y)) => {
            bytemuck::cast_slice::<f32, u32>(x) == bytemuck::cast_slice::<f32, u32>(y)
        }
        (F64(x), F64(y)) => {
            bytemuck::cast_slice::<f64, u64>(x) == bytemuck::cast_slice::<f64, u64>(y)
        }
        _ => false,
    }
}

/// A digest already taken this step of an array equal to `array`: the same array shown to an
/// earlier agent (by name order) under the same key, found in `cache` (agent -> key ->
/// (revision, digest) of the array last hashed). Equal by revision, or bit for bit when the
/// array is big enough that comparing is cheaper than hashing. Both trace formats dedupe this
/// way; what they cache differs (`T`).
fn digest_of_an_earlier_copy<T: Copy>(
    cache: &BTreeMap<String, BTreeMap<String, (u64, T)>>,
    t: &Transition,
    agent: &str,
    key: &str,
    array: &Array,
) -> Option<T> {
    for (other, s) in t
        .agents
        .iter()
        .take_while(|(name, _)| name.as_str() < agent)
    {
        let Some(o) = s.obs.get(key) else { continue };
        let Some(&(r, d)) = cache.get(other.as_str()).and_then(|m| m.get(key)) else {
            continue;
        };
        if r != o.revision() {
            continue;
        }
        if o.revision() == array.revision() {
            return Some(d);
        }
        if o.dtype() == array.dtype()
            && o.shape() == array.shape()
            && o.len() * o.dtype().size() >= DEDUPE_MIN_BYTES
            && same_bits(o.data(), array.data())
        {
            return Some(d);
        }
    }
    None
}

/// Digests transitions one after another and keeps the episode chain.
#[derive(Debug, Clone, Default)]
pub struct Tracer {
    mode: CacheMode,
    format: Format,
    /// Format v2's step buffer and caches.
    v2: v2::StepHasher,
    /// agent -> key -> (revision, digest) of the last array seen there.
    cache: BTreeMap<String, BTreeMap<String, (u64, Digest)>>,
    episode: Digest,
    steps: Vec<StepDigest>,
    /// Reused buffer for an info's node bytes.
    scratch: Vec<u8>,
    /// agent -> its last info, member by member (cache mode on).
    infos: BTreeMap<String, InfoCache>,
    /// agent -> key -> block cache of arrays of at least [`BLOCKED_MIN_BYTES`].
    blocks: BTreeMap<String, BTreeMap<String, Blocks>>,
    /// Recycled node buffers: step, agent, and array/logs/chain nodes.
    step_buf: Vec<u8>,
    agent_buf: Vec<u8>,
    node_buf: Vec<u8>,
}

impl Tracer {
    /// A tracer of format v1 (what every check, golden file and `lockstep trace` use).
    pub fn new(mode: CacheMode) -> Tracer {
        Tracer::with_format(Format::V1, mode)
    }

    pub fn with_format(format: Format, mode: CacheMode) -> Tracer {
        Tracer {
            mode,
            format,
            ..Tracer::default()
        }
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Digests `t` as the next step (the first call is step 0) and extends the chain.
    pub fn record(&mut self, t: &Transition) -> Result<&StepDigest, TraceError> {
        let step = self.steps.len() as u64;
        use v2::{InfoBytes, StepHash};
        let whole_step = match self.format {
            Format::V1 => None,
            Format::V2 => Some((StepHash::Blake3, InfoBytes::Text)),
            Format::V3 => Some((StepHash::Xxh3, InfoBytes::Text)),
            Format::V4 => Some((StepHash::Xxh3, InfoBytes::Layout)),
        };
        if let Some(layout) = whole_step {
            let digest = self.v2.step(step, t, self.mode, layout)?;
            self.episode = chain(&self.episode, &digest);
            self.steps.push(StepDigest {
                step,
                digest,
                agents: BTreeMap::new(),
                logs: Digest::ZERO,
                log_lines: t.logs.len() as u64,
            });
            return Ok(self.steps.last().expect("just pushed"));
        }
        let mut sh = Node::reuse(b'S', std::mem::take(&mut self.step_buf));
        sh.u64(step);
        sh.u64(t.agents.len() as u64);
        let mut agents = BTreeMap::new();
        for (agent, a) in &t.agents {
            let d = self.agent(t, step, agent, a)?;
            sh.bytes(&d.digest.0);
            agents.insert(agent.clone(), d);
        }
        let logs = logs_digest_in(&t.logs, &mut self.node_buf);
        sh.bytes(&logs.0);
        let digest = sh.finish();
        self.step_buf = sh.0;
        let mut e = Node::reuse(b'E', std::mem::take(&mut self.node_buf));
        e.bytes(&self.episode.0);
        e.bytes(&digest.0);
        self.episode = e.finish();
        self.node_buf = e.0;
        self.steps.push(StepDigest {
            step,
            digest,
            agents,
            logs,
            log_lines: t.logs.len() as u64,
        });
        Ok(self.steps.last().expect("just pushed"))
    }

    fn agent(
        &mut self,
        t: &Transition,
        step: u64,
        agent: &str,
        a: &AgentStep,
    ) -> Result<AgentDigest, TraceError> {
        let mut h = Node::reuse(b'G', std::mem::take(&mut self.agent_buf));
        h.name(agent);
        h.u64(a.obs.len() as u64);
        let mut obs = BTreeMap::new();
        for (key, array) in &a.obs {
            let d = self.array(t, agent, key, array);
            h.name(key);
            h.bytes(&d.0);
            obs.insert(key.clone(), d);
        }
        h.u64(a.reward.to_bits());
        h.bytes(&[u8::from(a.terminated), u8::from(a.truncated)]);
        let info = self.info(agent, &a.info).map_err(|e| TraceError::Info {
            step,
            agent: agent.to_string(),
            message: e.to_string(),
        })?;
        h.bytes(&info.0);
        let digest = h.finish();
        self.agent_buf = h.0;
        Ok(AgentDigest {
            digest,
            obs,
            reward: a.reward,
            terminated: a.terminated,
            truncated: a.truncated,
            info,
        })
    }

    /// The digest of one agent's info (node `I`), from the member cache when it is on.
    fn info(&mut self, agent: &str, info: &Value) -> io::Result<Digest> {
        let Value::Object(map) = info else {
            return info_digest_with(info, &mut self.scratch);
        };
        if self.mode == CacheMode::Off {
            return info_digest_with(info, &mut self.scratch);
        }
        let cache = match self.infos.get_mut(agent) {
            Some(c) => c,
            None => self.infos.entry(agent.to_string()).or_default(),
        };
        cache.digest(map, &mut self.scratch)
    }

    fn array(&mut self, t: &Transition, agent: &str, key: &str, array: &Array) -> Digest {
        if self.mode == CacheMode::Off {
            return array_digest_in(array, &mut self.node_buf);
        }
        let rev = array.revision();
        if let Some(&(r, d)) = self.cache.get(agent).and_then(|m| m.get(key)) {
            if r == rev {
                return d;
            }
        }
        let d = match self.same_as_earlier(t, agent, key, array) {
            Some(d) => d,
            None => match le_slice(array.data()) {
                Some(bytes) if bytes.len() >= BLOCKED_MIN_BYTES => {
                    let by_agent = match self.blocks.get_mut(agent) {
                        Some(m) => m,
                        None => self.blocks.entry(agent.to_string()).or_default(),
                    };
                    let blocks = match by_agent.get_mut(key) {
                        Some(b) => b,
                        None => by_agent.entry(key.to_string()).or_default(),
                    };
                    array_node(array, &blocks.hash(bytes), &mut self.node_buf)
                }
                _ => array_digest_in(array, &mut self.node_buf),
            },
        };
        let slot = match self.cache.get_mut(agent) {
            Some(m) => m,
            None => self.cache.entry(agent.to_string()).or_default(),
        };
        match slot.get_mut(key) {
            Some(entry) => *entry = (rev, d),
            None => {
                slot.insert(key.to_string(), (rev, d));
            }
        }
        d
    }

    /// The digest of the same key of an agent earlier in this transition whose array has the
    /// same contents (multi-agent envs often show several agents the same large array, e.g. a
    /// shared adjacency matrix): comparing bytes is several times cheaper than hashing them.
    /// Earlier agents were recorded first, so their cache entries are this step's.
    fn same_as_earlier(
        &self,
        t: &Transition,
        agent: &str,
        key: &str,
        array: &Array,
    ) -> Option<Digest> {
        digest_of_an_earlier_copy(&self.cache, t, agent, key, array)
    }

    /// The episode digest so far.
    pub fn episode(&self) -> Digest {
        self.episode
    }

    pub fn steps(&self) -> &[StepDigest] {
        &self.steps
    }

    /// Forgets the episode (keeps the revision cache, which stays valid).
    pub fn clear(&mut self) {
        self.episode = Digest::ZERO;
        self.steps.clear();
    }

    fn into_steps(self) -> Vec<StepDigest> {
        self.steps
    }
}

/// Options of one rollout.
#[derive(Debug, Clone)]
pub struct RolloutOptions {
    pub cache: CacheMode,
    /// The trace format (v1 unless asked).
    pub format: Format,
    /// Keep a full copy of the transition at this step (for element-level localisation).
    pub capture: Option<u64>,
    /// Keep full copies of the first transitions, within this budget (see [`KeepFirst`]).
    pub keep_first: KeepFirst,
    /// The `options` passed to `reset` (JSON null by default).
    pub reset_options: Value,
    /// Seed of the action sampler when it is not the episode seed (the other-seed check holds
    /// the actions fixed, so that only the env's own use of the seed can tell episodes apart).
    pub action_seed: Option<u64>,
    /// Start with the env's unseeded reset ([`Env::reset_unseeded`]), as a training loop does
    /// after its first episode; the rollout's seed then seeds only the action sampler.
    pub unseeded: bool,
    /// Fields removed from every transition before it is digested, kept or captured
    /// ([`crate::ignore`]); the actions are sampled from the unfiltered transition.
    pub ignore: crate::ignore::Ignore,
    /// Also keep each step's check digest ([`CHECK_FORMAT`]) in [`Checked::digests`], and the
    /// agents' returns (see [`Checked`]): what a check's reference records besides its v1
    /// trace, so that other rollouts can be compared with it by check digests ([`Against`]).
    pub check_digests: bool,
    /// Record in format v1 only from the first step whose check digest differs from this
    /// reference's (see [`Against`]); `format` and `check_digests` are then not read.
    pub against: Option<std::sync::Arc<Against>>,
}

impl Default for RolloutOptions {
    fn default() -> RolloutOptions {
        RolloutOptions {
            cache: CacheMode::On,
            format: Format::V1,
            capture: None,
            keep_first: KeepFirst::NONE,
            reset_options: Value::Null,
            action_seed: None,
            unseeded: false,
            ignore: crate::ignore::Ignore::default(),
            check_digests: false,
            against: None,
        }
    }
}

/// The format of the per-step digest the checks compare: v4, one XXH3-128 call over each
/// step's bytes with infos as their value layout (no canonical text to write), several times
/// cheaper than v1 on the range. It pins the same parts of a step as v1 (observations,
/// rewards, flags, infos, logs), and an info's layout is equal exactly where its canonical
/// text is, so two rollouts first differ at the same step in both formats; v1 is what then
/// names the agent, key and element. Check digests are compared within one check only, so
/// this choice never reaches a trace, golden or report.
pub const CHECK_FORMAT: Format = Format::V4;

/// What a rollout recorded for a check besides its trace (`RolloutOptions::check_digests`,
/// and every rollout recorded [`Against`] a reference). `returns` stands in for the per-agent
/// rewards a v1 trace carries, in a rollout that kept no v1 trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    /// The [`CHECK_FORMAT`] digest of each step, the reset first; empty when not asked for.
    pub digests: Vec<Digest>,
    /// Each agent's rewards summed over the steps (the reset not counted), in step order.
    pub returns: BTreeMap<String, f64>,
}

/// How many leading transitions a rollout keeps in full: while both budgets last.
///
/// Why: a check that finds a difference explains it element by element, which needs the full
/// transitions of the step where two runs part. Re-running to that step gives them for an env
/// that reproduces its own runs; for one that does not (an unseeded draw), the re-run may
/// happen to agree and explain nothing. Most such differences show at the reset or in the
/// first steps, so keeping a bounded prefix of the first run answers them from the very runs
/// that differed, and saves the re-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepFirst {
    pub steps: usize,
    /// Array elements and log text, in bytes (infos are not counted: they are small).
    pub bytes: usize,
}

impl KeepFirst {
    pub const NONE: KeepFirst = KeepFirst { steps: 0, bytes: 0 };
    /// What the checks keep: 32 transitions or 1 MiB, whichever is spent first.
    pub const CHECKS: KeepFirst = KeepFirst {
        steps: 32,
        bytes: 1 << 20,
    };
}

/// Drives one rollout step by step, so several can be interleaved in one thread.
pub struct Rollout<'e> {
    env: &'e mut dyn Env,
    sampler: ActionSampler,
    rec: Recorder,
    next: Actions,
    seed: u64,
    steps: u64,
    taken: u64,
    done: bool,
    ignore: crate::ignore::Ignore,
    /// The last transition with the ignored fields removed (none when nothing is ignored).
    filtered: Option<Transition>,
    /// Wall time of the reset and of each step, for the timing hint ([`Recorded::step_times`]).
    times: Vec<Duration>,
}

/// `t` as the rollout records it: itself, or a copy in `filtered` without the ignored fields.
fn shown<'a>(
    ignore: &crate::ignore::Ignore,
    filtered: &'a mut Option<Transition>,
    t: &'a Transition,
) -> &'a Transition {
    if ignore.is_empty() {
        return t;
    }
    let copy = filtered.insert(t.clone());
    ignore.apply(copy);
    copy
}

/// The reference a rollout is compared with as it runs, step by step, by check digests.
///
/// Why: a check compares many rollouts with one reference, and recording each in format v1 (a
/// digest per agent, key, info and log list, what names where two runs part) costs several
/// times what a step of the range does. The check digest ([`CHECK_FORMAT`]) costs a fraction
/// of it and pins the same parts of a step, so while a rollout's check digests equal the
/// reference's, its v1 step digests are the reference's too (a v1 step digest depends on the
/// step's index and contents only). A rollout recorded against a reference therefore hashes
/// in v1 only from the first step whose check digest differs (or that the reference does not
/// have) on: its v1 trace is then the reference's steps before that one followed by its own,
/// exactly the trace a v1 recording of the whole rollout gives, found without re-running
/// anything (so an env that does not reproduce its own runs is localised as well as one that
/// does). A rollout equal to its reference at every step keeps a trace in [`CHECK_FORMAT`]
/// alone: its v1 trace would be the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct Against {
    /// The reference's check digests, the reset first.
    pub checks: Vec<Digest>,
    /// The reference's v1 step digests.
    pub steps: Vec<StepDigest>,
    /// The reference's kept first transitions, which a rollout equal to it shares instead of
    /// copying its own (recorded with the same [`KeepFirst`] budget, they would be the same).
    pub kept: Kept,
}

impl Against {
    /// The reference `r`, recorded in v1 with check digests; `None` for any other recording.
    pub fn of(r: &Recorded) -> Option<Against> {
        (r.trace.format == FORMAT && r.checked.digests.len() == r.trace.step_digests.len()).then(
            || Against {
                checks: r.checked.digests.clone(),
                steps: r.trace.step_digests.clone(),
                kept: r.kept.clone(),
            },
        )
    }
}

impl Tracer {
    /// A v1 tracer that has recorded `steps` already (the episode chain over them).
    fn resumed(mode: CacheMode, steps: &[StepDigest]) -> Tracer {
        let mut t = Tracer::new(mode);
        t.episode = steps.iter().fold(Digest::ZERO, |e, s| chain(&e, &s.digest));
        t.steps = steps.to_vec();
        t
    }
}

/// Everything a rollout records of each transition it shows: the trace, the check digests and
/// returns, the captured step and the kept prefix. A rollout's cost beyond the env's is this
/// (and two clock reads per step), so `lockstep range bench --trace` measures checks' tracing
/// by driving one of these.
#[derive(Debug)]
pub struct Recorder {
    tracer: Tracer,
    /// A second tracer for the check digests, when the trace's own format is not theirs.
    check: Option<Tracer>,
    check_digests: bool,
    checked: Checked,
    /// The reference, and the v1 tracer started at the first step that differs from it.
    against: Option<std::sync::Arc<Against>>,
    v1: Option<Tracer>,
    mode: CacheMode,
    capture: Option<u64>,
    captured: Option<Transition>,
    kept: KeptPrefix,
}

impl Recorder {
    /// A recorder of one rollout with `opts` (its format, cache, check digests or reference,
    /// capture and kept prefix; the rest of `opts` is the rollout's own).
    pub fn new(opts: &RolloutOptions) -> Recorder {
        let against = opts.against.is_some();
        let format = if against { CHECK_FORMAT } else { opts.format };
        let check_digests = opts.check_digests || against;
        let separate = check_digests && format != CHECK_FORMAT;
        Recorder {
            tracer: Tracer::with_format(format, opts.cache),
            check: separate.then(|| Tracer::with_format(CHECK_FORMAT, opts.cache)),
            check_digests,
            checked: Checked::default(),
            against: opts.against.clone(),
            v1: None,
            mode: opts.cache,
            capture: opts.capture,
            captured: None,
            kept: match &opts.against {
                Some(a) => KeptPrefix::sharing(opts.keep_first, a.kept.clone()),
                None => KeptPrefix::new(opts.keep_first),
            },
        }
    }

    /// Records `t` as the next step (the first call is step 0, the reset).
    pub fn record(&mut self, t: &Transition) -> Result<(), TraceError> {
        let step = self.tracer.steps().len() as u64;
        let digest = self.tracer.record(t)?.digest;
        if self.check_digests {
            let check = match self.check.as_mut() {
                Some(c) => c.record(t)?.digest,
                None => digest,
            };
            self.checked.digests.push(check);
            if let Some(against) = &self.against {
                if self.v1.is_none() && against.checks.get(step as usize) != Some(&check) {
                    let same = &against.steps[..(step as usize).min(against.steps.len())];
                    self.v1 = Some(Tracer::resumed(self.mode, same));
                    self.kept.part();
                }
            }
            if let Some(v1) = self.v1.as_mut() {
                v1.record(t)?;
            }
            if step > 0 {
                for (agent, a) in &t.agents {
                    match self.checked.returns.get_mut(agent.as_str()) {
                        Some(sum) => *sum += a.reward,
                        None => {
                            // `0.0 +` as a sum from zero adds: -0.0 counts as 0.0, as in a
                            // sum over a v1 trace's rewards (`check::EpisodeStat::of`).
                            self.checked.returns.insert(agent.clone(), 0.0 + a.reward);
                        }
                    }
                }
            }
        }
        if self.capture == Some(step) {
            self.captured = Some(t.clone());
        }
        self.kept.offer(t);
        Ok(())
    }

    /// The episode digest so far, in the trace's format.
    pub fn episode(&self) -> Digest {
        self.tracer.episode()
    }

    /// What a rollout recorded against this one (a reference, in v1 with check digests) is
    /// compared with, as [`Against::of`] its [`Recorded`]; `None` for another recording.
    pub fn against(&self) -> Option<Against> {
        let v1 = self.tracer.format() == Format::V1 && self.check_digests;
        v1.then(|| Against {
            checks: self.checked.digests.clone(),
            steps: self.tracer.steps().to_vec(),
            kept: self.kept.to_kept(),
        })
    }

    /// The tracer whose trace the rollout returns: the v1 one of a rollout that differs from
    /// its reference (a shorter one is the reference's first steps), else the recording's own.
    fn into_tracer(self) -> (Tracer, Option<Transition>, Kept, Checked) {
        let tracer = match (self.v1, &self.against) {
            (Some(v1), _) => v1,
            (None, Some(a)) if a.steps.len() != self.tracer.steps().len() => {
                Tracer::resumed(self.mode, &a.steps[..self.tracer.steps().len()])
            }
            _ => self.tracer,
        };
        (tracer, self.captured, self.kept.into_kept(), self.checked)
    }
}

/// A finished rollout: its trace, the captured transition if one was asked for and reached,
/// and the kept first transitions (`kept[k]` is step `k`).
#[derive(Debug, Clone)]
pub struct Recorded {
    pub trace: Trace,
    pub captured: Option<Transition>,
    pub kept: Kept,
    /// How long the env took for the reset (`[0]`) and each step: never part of the trace, read
    /// only to tell timing from state when runs differ (`check::timing`). Empty when the run
    /// happened where it was not measured (a stored reference).
    pub step_times: Vec<Duration>,
    /// The check digests and returns, when asked for (`RolloutOptions::check_digests`).
    pub checked: Checked,
}

impl<'e> Rollout<'e> {
    /// Resets `env` with `seed` and records step 0.
    pub fn start(
        env: &'e mut dyn Env,
        seed: u64,
        steps: u64,
        opts: &RolloutOptions,
    ) -> Result<Rollout<'e>, TraceError> {
        let sampler = ActionSampler::new(opts.action_seed.unwrap_or(seed), env.spec());
        let mut r = Rollout {
            env,
            sampler,
            rec: Recorder::new(opts),
            next: Actions::new(),
            seed,
            steps,
            taken: 0,
            done: false,
            ignore: opts.ignore.clone(),
            filtered: None,
            times: Vec::new(),
        };
        let started = stopwatch();
        let t = if opts.unseeded {
            r.env
                .reset_unseeded(&opts.reset_options)
                .ok_or(TraceError::NoUnseededReset)?
        } else {
            r.env.reset(seed, &opts.reset_options)
        }
        .map_err(|source| TraceError::Env { step: 0, source })?;
        r.times.push(started.elapsed());
        let seen = shown(&r.ignore, &mut r.filtered, t);
        r.rec.record(seen)?;
        r.done = t.is_done();
        r.next = r.sampler.sample(t);
        Ok(r)
    }

    /// True when the episode is done or the step budget is spent.
    pub fn finished(&self) -> bool {
        self.done || self.taken >= self.steps
    }

    /// Takes one step unless finished; returns whether a step was taken.
    pub fn advance(&mut self) -> Result<bool, TraceError> {
        if self.finished() {
            return Ok(false);
        }
        let step = self.taken + 1;
        let started = stopwatch();
        let t = self
            .env
            .step(&self.next)
            .map_err(|source| TraceError::Env { step, source })?;
        self.times.push(started.elapsed());
        let seen = shown(&self.ignore, &mut self.filtered, t);
        self.rec.record(seen)?;
        self.taken = step;
        self.done = t.is_done();
        self.next = self.sampler.sample(t);
        Ok(true)
    }

    /// Steps until finished, then returns the trace.
    pub fn run(mut self) -> Result<Recorded, TraceError> {
        while self.advance()? {}
        Ok(self.finish())
    }

    /// The trace so far (call after [`Rollout::finished`] for a whole rollout).
    pub fn finish(self) -> Recorded {
        let env = self.env.spec().id.clone();
        let end = if self.done {
            End::Done
        } else {
            End::StepsExhausted
        };
        let (tracer, captured, kept, checked) = self.rec.into_tracer();
        let episode = tracer.episode();
        Recorded {
            trace: Trace {
                format: tracer.format().as_str().to_string(),
                env,
                seed: self.seed,
                steps: self.steps,
                end,
                episode,
                step_digests: tracer.into_steps(),
            },
            captured,
            kept,
            step_times: self.times,
            checked,
        }
    }
}

impl Recorded {
    /// The full transition of step `k`, when this rollout kept it.
    pub fn kept_at(&self, k: u64) -> Option<&Transition> {
        usize::try_from(k).ok().and_then(|k| self.kept.get(k))
    }
}

/// The wall clock, read only for [`Recorded::step_times`]: no trace, digest or default report
/// holds what it reads (the timing hint, `check::timing`).
#[allow(clippy::disallowed_methods)]
fn stopwatch() -> Instant {
    Instant::now()
}

/// Step times as whole microseconds, for a pipe or a report.
pub fn micros(times: &[Duration]) -> Vec<u64> {
    times
        .iter()
        .map(|t| u64::try_from(t.as_micros()).unwrap_or(u64::MAX))
        .collect()
}

/// The inverse of [`micros`].
pub fn from_micros(us: &[u64]) -> Vec<Duration> {
    us.iter().map(|&u| Duration::from_micros(u)).collect()
}

/// One whole rollout of `env` (see the module doc).
pub fn rollout(
    env: &mut dyn Env,
    seed: u64,
    steps: u64,
    opts: &RolloutOptions,
) -> Result<Recorded, TraceError> {
    Rollout::start(env, seed, steps, opts)?.run()
}

/// One array in JSON: dtype name, shape, little-endian element bytes in base64.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArrayRecord {
    pub dtype: String,
    pub shape: Vec<usize>,
    pub data: String,
}

/// One agent's step in JSON; the info is its canonical JSON text (profile python).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentRecord {
    pub obs: BTreeMap<String, ArrayRecord>,
    #[serde(with = "f64_text")]
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
    pub info: String,
}

/// A whole [`Transition`] in JSON, exact to the bit, so a child process can hand its step to
/// the parent for element-level localisation.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TransitionRecord {
    pub agents: BTreeMap<String, AgentRecord>,
    pub logs: Vec<String>,
}

/// A [`TransitionRecord`] that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad transition record at {pointer}: {message}")]
pub struct RecordError {
    pub pointer: String,
    pub message: String,
}

impl TransitionRecord {
    pub fn from_transition(t: &Transition) -> Result<TransitionRecord, RecordError> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut agents = BTreeMap::new();
        for (name, a) in &t.agents {
            let obs = a
                .obs
                .iter()
                .map(|(k, v)| {
                    let rec = ArrayRecord {
                        dtype: v.dtype().name().to_string(),
                        shape: v.shape().to_vec(),
                        data: b64.encode(v.to_le_bytes()),
                    };
                    (k.clone(), rec)
                })
                .collect();
            let info =
                lockstep_canon::to_vec(&a.info, Profile::Python).map_err(|e| RecordError {
                    pointer: format!("/agents/{name}/info"),
                    message: e.to_string(),
                })?;
            let info = String::from_utf8(info).map_err(|e| RecordError {
                pointer: format!("/agents/{name}/info"),
                message: e.to_string(),
            })?;
            agents.insert(
                name.clone(),
                AgentRecord {
                    obs,
                    reward: a.reward,
                    terminated: a.terminated,
                    truncated: a.truncated,
                    info,
                },
            );
        }
        Ok(TransitionRecord {
            agents,
            logs: t.logs.clone(),
        })
    }

    pub fn to_transition(&self) -> Result<Transition, RecordError> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut t = Transition::default();
        for (name, a) in &self.agents {
            let mut obs = BTreeMap::new();
            for (key, rec) in &a.obs {
                let err = |message: String| RecordError {
                    pointer: format!("/agents/{name}/obs/{key}"),
                    message,
                };
                let dtype = DType::from_name(&rec.dtype)
                    .ok_or_else(|| err(format!("unknown dtype {:?}", rec.dtype)))?;
                let bytes = b64.decode(&rec.data).map_err(|e| err(e.to_string()))?;
                let array = Array::from_le_bytes(dtype, &rec.shape, &bytes)
                    .map_err(|e| err(e.to_string()))?;
                obs.insert(key.clone(), array);
            }
            let nan_ok = lockstep_canon::ParseOptions {
                allow_nan: true,
                ..lockstep_canon::ParseOptions::default()
            };
            let info = lockstep_canon::parse_with(a.info.as_bytes(), &nan_ok).map_err(|e| {
                RecordError {
                    pointer: format!("/agents/{name}/info"),
                    message: e.to_string(),
                }
            })?;
            t.agents.insert(
                name.clone(),
                AgentStep {
                    obs,
                    reward: a.reward,
                    terminated: a.terminated,
                    truncated: a.truncated,
                    info,
                },
            );
        }
        t.logs = self.logs.clone();
        Ok(t)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_v2;
