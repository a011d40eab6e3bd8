//! Format `lockstep/trace/v2`: one BLAKE3 call per step.
//!
//! Format v1 hashes every array, info, agent and step as its own BLAKE3 input: two hundred or
//! so inputs of at most a few 1 KiB chunks per step of the range, each hashed one 64-byte
//! block after another. v2 lays a whole step out in one buffer and hashes it in one call, so
//! that BLAKE3 hashes its chunks side by side (SIMD) and the tracer builds no per-agent
//! digests:
//!
//! ```text
//! step_k = H('S' || k || agent count
//!            || for each agent, in name order:
//!                 agent name || key count
//!                 || for each observation key, in key order:
//!                      key name || dtype tag (u8) || ndim || dim_0 .. dim_n-1 || byte length
//!                      || the element bytes (little-endian)   if byte length < 16384
//!                      || H(the element bytes)                otherwise
//!                 || reward (f64 bits) || terminated (u8 0/1) || truncated (u8 0/1)
//!                 || canonical JSON of the info (profile python) as a name
//!            || log line count || each log line as a name)
//! episode_-1 = 32 zero bytes;  episode_k = H('E' || episode_k-1 || step_k)
//! ```
//!
//! Integers, names and dtype tags are as in v1 (little-endian `u64`; a name is its UTF-8
//! length then its bytes). Every field's length is known before it is read (a byte length
//! comes before the bytes, and whether they are inline follows from it), so the encoding is
//! unambiguous. An array of 16 KiB or more enters by its element hash (v1's `H(elements)`),
//! which the tracer keeps by [`Array::revision`] across steps instead of hashing the same
//! bytes again; everything else is copied into the step buffer every step.
//!
//! What v2 gives up is localisation inside a step: its [`StepDigest`]s carry the step digest
//! and the number of log lines, no agent, key or info digests (`agents` is empty and `logs`
//! is all zeros). Two v2 traces tell at which step they part; format v1 (the default of
//! every check and golden file) tells where in the step.

//!
//! ## Format `lockstep/trace/v3`: v2's layout, hashed with XXH3-128
//!
//! BLAKE3 is most of v2's cost on the range (a 40 KB adjacency matrix rewritten on most
//! steps, 11 KB of small arrays and infos every step). v3 is for when only equality across
//! runs matters and nobody crafts inputs against the tracer: the same step buffer, with
//! `X` = XXH3-128 (seed 0, its canonical big-endian 16 bytes) in place of `H` for both the
//! element hash and the step:
//!
//! ```text
//! step buffer = v2's, with X(the element bytes) for arrays of 16384 bytes or more
//! step_k = H(X(step buffer))                 (32 bytes, as every lockstep digest)
//! episode_-1 = 32 zero bytes;  episode_k = H('E' || episode_k-1 || step_k)
//! ```
//!
//! Its strength is XXH3-128's: a non-cryptographic hash, for which an accidental collision
//! is as unlikely as a 128-bit one, but a deliberate one is easy. Large arrays are kept by
//! revision, and by comparison with other agents' arrays, as in v2; no copy of their last
//! bytes is kept to rehash changed blocks only: XXH3 hashes a changed 40 KB array whole in
//! less time than copying it would take plus the comparison.

use std::collections::BTreeMap;

use lockstep_canon::Value;

use super::{
    append, digest_of_an_earlier_copy, le_slice, Blocks, CacheMode, Digest, InfoCache, TraceError,
};
use crate::env::{Array, Transition};

/// Version of the encoding above. A change to any byte of it is a new version.
pub const FORMAT_V2: &str = "lockstep/trace/v2";

/// Version of v2's layout hashed with XXH3-128 (above).
pub const FORMAT_V3: &str = "lockstep/trace/v3";

/// Version of v3 with each info as its value layout (below).
pub const FORMAT_V4: &str = "lockstep/trace/v4";

/// Which hash a [`StepHasher`] step uses: v2's BLAKE3 or v3's (and v4's) XXH3-128.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StepHash {
    Blake3,
    Xxh3,
}

/// How a step lays out an agent's info: v2's and v3's canonical JSON text as a name, or
/// v4's value layout ([`super::value_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InfoBytes {
    Text,
    Layout,
}

/// Arrays of at least this many element bytes enter a v2 step by their element hash.
pub const BY_HASH_MIN_BYTES: usize = 16 * 1024;

/// The v2 step hasher's state: the step buffer and what it keeps between steps.
#[derive(Debug, Clone, Default)]
pub(super) struct StepHasher {
    buf: Vec<u8>,
    /// agent -> key -> (revision, element hash) of the last large array seen there.
    elements: BTreeMap<String, BTreeMap<String, (u64, [u8; 32])>>,
    /// agent -> its last info, member by member (cache mode on).
    infos: BTreeMap<String, InfoCache>,
    /// agent -> key -> the last bytes and block chaining values of a large array (as v1's:
    /// an array whose revision moved but whose bytes did not costs a memory comparison).
    blocks: BTreeMap<String, BTreeMap<String, Blocks>>,
}

fn put_u64(buf: &mut Vec<u8>, x: u64) {
    buf.extend_from_slice(&x.to_le_bytes());
}

fn put_name(buf: &mut Vec<u8>, s: &str) {
    put_u64(buf, s.len() as u64);
    buf.extend_from_slice(s.as_bytes());
}

/// XXH3-128 of `bytes`, its canonical (big-endian) bytes.
fn xxh3(bytes: &[u8]) -> [u8; 16] {
    twox_hash::XxHash3_128::oneshot(bytes).to_be_bytes()
}

/// XXH3-128 of an array's element bytes (little-endian), then 16 zero bytes: the shape v2's
/// element hashes are kept in (a v3 step takes the first 16).
fn element_xxh3(a: &Array) -> [u8; 32] {
    let x = match le_slice(a.data()) {
        Some(bytes) => xxh3(bytes),
        None => {
            let mut h = twox_hash::XxHash3_128::new();
            a.with_le_bytes(|b| h.write(b));
            h.finish_128().to_be_bytes()
        }
    };
    let mut h = [0u8; 32];
    h[..16].copy_from_slice(&x);
    h
}

/// BLAKE3 of an array's element bytes, in one call (so that large arrays hash wide).
fn element_hash(a: &Array) -> [u8; 32] {
    match le_slice(a.data()) {
        Some(bytes) => *blake3::hash(bytes).as_bytes(),
        None => {
            let mut h = blake3::Hasher::new();
            a.with_le_bytes(|b| {
                h.update(b);
            });
            *h.finalize().as_bytes()
        }
    }
}

impl StepHasher {
    /// The v2 digest of transition `t` as step `step`.
    pub(super) fn step(
        &mut self,
        step: u64,
        t: &Transition,
        mode: CacheMode,
        (hash, info): (StepHash, InfoBytes),
    ) -> Result<Digest, TraceError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.push(b'S');
        put_u64(&mut buf, step);
        put_u64(&mut buf, t.agents.len() as u64);
        let written = self.agents(step, t, mode, (hash, info), &mut buf);
        if written.is_ok() {
            put_u64(&mut buf, t.logs.len() as u64);
            for line in &t.logs {
                put_name(&mut buf, line);
            }
        }
        let digest = match hash {
            StepHash::Blake3 => Digest(*blake3::hash(&buf).as_bytes()),
            StepHash::Xxh3 => Digest(*blake3::hash(&xxh3(&buf)).as_bytes()),
        };
        self.buf = buf;
        written.map(|()| digest)
    }

    fn agents(
        &mut self,
        step: u64,
        t: &Transition,
        mode: CacheMode,
        (hash, info): (StepHash, InfoBytes),
        buf: &mut Vec<u8>,
    ) -> Result<(), TraceError> {
        for (agent, a) in &t.agents {
            put_name(buf, agent);
            put_u64(buf, a.obs.len() as u64);
            for (key, array) in &a.obs {
                put_name(buf, key);
                buf.push(array.dtype().tag());
                put_u64(buf, array.shape().len() as u64);
                for &d in array.shape() {
                    put_u64(buf, d as u64);
                }
                let len = array.len() * array.dtype().size();
                put_u64(buf, len as u64);
                if len < BY_HASH_MIN_BYTES {
                    match le_slice(array.data()) {
                        Some(bytes) => buf.extend_from_slice(bytes),
                        None => array.with_le_bytes(|b| buf.extend_from_slice(b)),
                    }
                } else {
                    let h = match (mode, hash) {
                        (CacheMode::On, _) => self.cached_element_hash(t, agent, key, array, hash),
                        (CacheMode::Off, StepHash::Blake3) => element_hash(array),
                        (CacheMode::Off, StepHash::Xxh3) => element_xxh3(array),
                    };
                    let len = match hash {
                        StepHash::Blake3 => 32,
                        StepHash::Xxh3 => 16,
                    };
                    buf.extend_from_slice(&h[..len]);
                }
            }
            put_u64(buf, a.reward.to_bits());
            buf.push(u8::from(a.terminated));
            buf.push(u8::from(a.truncated));
            let written = match info {
                InfoBytes::Text => {
                    // The info as a name: its length, patched in once the text is written.
                    let at = buf.len();
                    put_u64(buf, 0);
                    let written = self.info(agent, &a.info, mode, InfoBytes::Text, buf);
                    let len = (buf.len() - at - 8) as u64;
                    buf[at..at + 8].copy_from_slice(&len.to_le_bytes());
                    written
                }
                InfoBytes::Layout => self.info(agent, &a.info, mode, InfoBytes::Layout, buf),
            };
            written.map_err(|e| TraceError::Info {
                step,
                agent: agent.to_string(),
                message: e.to_string(),
            })?;
        }
        Ok(())
    }

    /// Appends `info` as `bytes` says (canonical JSON, or v4's value layout), from the member
    /// cache when it is on.
    fn info(
        &mut self,
        agent: &str,
        info: &Value,
        mode: CacheMode,
        bytes: InfoBytes,
        buf: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        let whole = |buf: &mut Vec<u8>| match bytes {
            InfoBytes::Text => append(info, buf),
            InfoBytes::Layout => super::value_bytes::append_value_bytes(info, buf),
        };
        let Value::Object(map) = info else {
            return whole(buf);
        };
        if mode == CacheMode::Off {
            return whole(buf);
        }
        let cache = match self.infos.get_mut(agent) {
            Some(c) => c,
            None => self.infos.entry(agent.to_string()).or_default(),
        };
        cache.append(map, bytes, buf)
    }

    /// The element hash of a large array (v2's 32 bytes, or v3's 16 then zeros): kept by
    /// revision, or taken from the same key of an agent earlier in this step with the same
    /// bytes, else hashed. v2 rehashes only the changed 4 KiB blocks of the last bytes it
    /// keeps; v3 hashes a changed array whole, which costs less than keeping and comparing a
    /// copy would (XXH3 reads 40 KB in 0.7 µs), but still compares with the other agents'
    /// arrays first (an equal 40 KB compares in half that).
    fn cached_element_hash(
        &mut self,
        t: &Transition,
        agent: &str,
        key: &str,
        array: &Array,
        hash: StepHash,
    ) -> [u8; 32] {
        let rev = array.revision();
        if let Some(&(r, h)) = self.elements.get(agent).and_then(|m| m.get(key)) {
            if r == rev {
                return h;
            }
        }
        let h = match self.same_as_earlier(t, agent, key, array) {
            Some(h) => h,
            None => match (hash, le_slice(array.data())) {
                (StepHash::Xxh3, _) => element_xxh3(array),
                (StepHash::Blake3, Some(bytes)) => {
                    let by_agent = match self.blocks.get_mut(agent) {
                        Some(m) => m,
                        None => self.blocks.entry(agent.to_string()).or_default(),
                    };
                    let blocks = match by_agent.get_mut(key) {
                        Some(b) => b,
                        None => by_agent.entry(key.to_string()).or_default(),
                    };
                    *blocks.hash(bytes).as_bytes()
                }
                (StepHash::Blake3, None) => element_hash(array),
            },
        };
        let slot = match self.elements.get_mut(agent) {
            Some(m) => m,
            None => self.elements.entry(agent.to_string()).or_default(),
        };
        match slot.get_mut(key) {
            Some(entry) => *entry = (rev, h),
            None => {
                slot.insert(key.to_string(), (rev, h));
            }
        }
        h
    }

    /// As v1's: an earlier agent (already recorded this step) showing the same bytes under the
    /// same key, whose cached hash is this step's.
    fn same_as_earlier(
        &self,
        t: &Transition,
        agent: &str,
        key: &str,
        array: &Array,
    ) -> Option<[u8; 32]> {
        digest_of_an_earlier_copy(&self.elements, t, agent, key, array)
    }
}
