//! The batched backend: N sub-envs stepped together on a pool of scoped threads, their
//! observations, rewards and flags in contiguous `[N, ...]` buffers.
//!
//! Each sub-env is a [`RangeEnv`]: the same pure core and the same incremental rendering as a
//! single env, so sub-env i is bit-identical to a single env reset with its seed and given its
//! actions, whatever the thread count (the threads share nothing but read-only parameters).
//! A buffer slot is rewritten only when the sub-env's array took a new revision.
//!
//! **Seeds and auto-reset.** Sub-env i starts at seed `seed0 + i`; its episode k uses seed
//! `seed0 + i + k * N` (so no two sub-envs ever share a seed, and any sub-episode can be
//! replayed alone from [`Batch::seed`]). When a step ends a sub-env's episode, the buffers show
//! that final transition; the next [`Batch::step`] resets it with its next seed instead of
//! stepping it (its action is ignored), and shows the reset: reward 0, flags false.

use lockstep::env::{ArrayData, Transition};

use crate::env::RangeEnv;
use crate::obs;
use crate::params::Params;
use crate::sim::JointAction;
use crate::{RangeError, AGENTS, N_AGENTS};

/// One observation key of one agent, stored for every sub-env.
#[derive(Debug, Clone)]
pub struct BufferSpec {
    pub agent: usize,
    pub key: &'static str,
    /// Shape for one sub-env; the buffer is `[N, shape...]`.
    pub shape: Vec<usize>,
}

impl BufferSpec {
    fn len(&self) -> usize {
        self.shape.iter().product()
    }
}

/// Contiguous storage of a buffer: `action_mask` is int8, every other key float32.
#[derive(Debug, Clone, PartialEq)]
pub enum BufferData {
    F32(Vec<f32>),
    I8(Vec<i8>),
}

/// Where a sub-env stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    seed: u64,
    episode: u64,
    /// The episode ended at the last step: the next step resets.
    reset_pending: bool,
}

/// N range envs stepped together.
pub struct Batch {
    params: Params,
    seed0: u64,
    threads: usize,
    envs: Vec<RangeEnv>,
    slots: Vec<Slot>,
    specs: Vec<BufferSpec>,
    data: Vec<BufferData>,
    /// Per sub-env, per buffer: the array revision last copied (`u64::MAX`: never).
    copied: Vec<Vec<u64>>,
    /// Per sub-env, per agent: the `adj_matrix` rows (as bitsets) the buffer holds, so that
    /// only rows that changed are copied (the array is max_hosts² floats).
    adj: Vec<[[u128; 128]; N_AGENTS]>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
}

impl Batch {
    /// `n` sub-envs of `params`, reset to seeds `seed0..seed0 + n`, stepped on `threads`
    /// threads (at least 1).
    pub fn new(params: Params, n: usize, seed0: u64, threads: usize) -> Result<Batch, RangeError> {
        params.validate()?;
        if n == 0 {
            return Err(RangeError::InvalidParam {
                field: "batch".into(),
                why: "a batch needs at least one sub-env".into(),
            });
        }
        if seed0.checked_add(n as u64).is_none() {
            return Err(RangeError::InvalidParam {
                field: "seed".into(),
                why: format!("seed {seed0} + batch {n} overflows u64"),
            });
        }
        let mut specs = Vec::new();
        for a in 0..N_AGENTS {
            for key in obs::keys(&params, a) {
                specs.push(BufferSpec {
                    agent: a,
                    key,
                    shape: obs::shape(&params, key),
                });
            }
        }
        let data = specs
            .iter()
            .map(|s| {
                if s.key == "action_mask" {
                    BufferData::I8(vec![0; n * s.len()])
                } else {
                    BufferData::F32(vec![0.0; n * s.len()])
                }
            })
            .collect();
        let mut envs = Vec::with_capacity(n);
        for _ in 0..n {
            envs.push(RangeEnv::new(params.clone())?);
        }
        let mut b = Batch {
            params,
            seed0,
            threads: threads.max(1),
            envs,
            slots: (0..n)
                .map(|i| Slot {
                    seed: seed0 + i as u64,
                    episode: 0,
                    reset_pending: true,
                })
                .collect(),
            copied: vec![vec![u64::MAX; specs.len()]; n],
            adj: vec![[[0; 128]; N_AGENTS]; n],
            specs,
            data,
            rewards: vec![0.0; n * N_AGENTS],
            terminated: vec![false; n],
            truncated: vec![false; n],
        };
        b.advance(None)?;
        Ok(b)
    }

    pub fn len(&self) -> usize {
        self.envs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.envs.is_empty()
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The seed of sub-env 0's first episode.
    pub fn seed0(&self) -> u64 {
        self.seed0
    }

    /// Steps every sub-env with its joint action (`actions[i]` for sub-env i); a sub-env whose
    /// episode ended at the last step is reset with its next seed instead.
    pub fn step(&mut self, actions: &[JointAction]) -> Result<(), RangeError> {
        if actions.len() != self.len() {
            return Err(RangeError::InvalidParam {
                field: "batch".into(),
                why: format!(
                    "{} joint actions for a batch of {}",
                    actions.len(),
                    self.len()
                ),
            });
        }
        self.advance(Some(actions))
    }

    /// The seed of sub-env `i`'s current episode.
    pub fn seed(&self, i: usize) -> u64 {
        self.slots[i].seed
    }

    /// How many episodes sub-env `i` started before its current one.
    pub fn episode(&self, i: usize) -> u64 {
        self.slots[i].episode
    }

    /// Sub-env `i`'s own transition (infos and logs included).
    pub fn transition(&self, i: usize) -> &Transition {
        self.envs[i].transition()
    }

    /// Sub-env `i`.
    pub fn env(&self, i: usize) -> &RangeEnv {
        &self.envs[i]
    }

    /// The buffers' layout, in the order of [`Batch::buffer`].
    pub fn buffers(&self) -> &[BufferSpec] {
        &self.specs
    }

    /// Buffer `b`'s contents, `[N, shape...]` row-major.
    pub fn buffer(&self, b: usize) -> &BufferData {
        &self.data[b]
    }

    /// Index of `agent`'s `key` buffer.
    pub fn find(&self, agent: usize, key: &str) -> Option<usize> {
        self.specs
            .iter()
            .position(|s| s.agent == agent && s.key == key)
    }

    /// Rewards, `[N, 4]` in agent order.
    pub fn rewards(&self) -> &[f64] {
        &self.rewards
    }

    pub fn terminated(&self) -> &[bool] {
        &self.terminated
    }

    pub fn truncated(&self) -> &[bool] {
        &self.truncated
    }

    fn advance(&mut self, actions: Option<&[JointAction]>) -> Result<(), RangeError> {
        let n = self.len();
        let chunk = n.div_ceil(self.threads);
        let stride = n as u64;
        let specs = &self.specs;
        let params = &self.params;
        // Per thread: its sub-envs and its part of every buffer.
        let mut parts: Vec<Vec<Part<'_>>> = (0..n.div_ceil(chunk)).map(|_| Vec::new()).collect();
        for (spec, data) in specs.iter().zip(self.data.iter_mut()) {
            let len = spec.len() * chunk;
            match data {
                BufferData::F32(v) => {
                    for (t, c) in v.chunks_mut(len).enumerate() {
                        parts[t].push(Part::F32(c));
                    }
                }
                BufferData::I8(v) => {
                    for (t, c) in v.chunks_mut(len).enumerate() {
                        parts[t].push(Part::I8(c));
                    }
                }
            }
        }
        let work = self
            .envs
            .chunks_mut(chunk)
            .zip(self.slots.chunks_mut(chunk))
            .zip(self.copied.chunks_mut(chunk))
            .zip(self.adj.chunks_mut(chunk))
            .zip(self.rewards.chunks_mut(chunk * N_AGENTS))
            .zip(self.terminated.chunks_mut(chunk))
            .zip(self.truncated.chunks_mut(chunk))
            .zip(parts)
            .enumerate()
            .map(
                |(t, (((((((envs, slots), copied), adj), rewards), term), trunc), parts))| Chunk {
                    first: t * chunk,
                    envs,
                    slots,
                    copied,
                    adj,
                    rewards,
                    terminated: term,
                    truncated: trunc,
                    parts,
                },
            );
        let run = |mut c: Chunk<'_>| c.run(specs, params, actions, stride);
        // One chunk (one thread, or a batch smaller than two chunks) runs on this thread:
        // spawning would only add its cost.
        if self.threads == 1 || chunk >= n {
            for c in work {
                run(c)?;
            }
            return Ok(());
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = work.map(|c| s.spawn(move || run(c))).collect();
            let mut result = Ok(());
            for h in handles {
                let r = h.join().expect("a batch thread panicked");
                if result.is_ok() {
                    result = r;
                }
            }
            result
        })
    }
}

enum Part<'a> {
    F32(&'a mut [f32]),
    I8(&'a mut [i8]),
}

/// One thread's share of a batch step.
struct Chunk<'a> {
    first: usize,
    envs: &'a mut [RangeEnv],
    slots: &'a mut [Slot],
    copied: &'a mut [Vec<u64>],
    adj: &'a mut [[[u128; 128]; N_AGENTS]],
    rewards: &'a mut [f64],
    terminated: &'a mut [bool],
    truncated: &'a mut [bool],
    parts: Vec<Part<'a>>,
}

impl Chunk<'_> {
    fn run(
        &mut self,
        specs: &[BufferSpec],
        params: &Params,
        actions: Option<&[JointAction]>,
        stride: u64,
    ) -> Result<(), RangeError> {
        for j in 0..self.envs.len() {
            let env = &mut self.envs[j];
            let slot = &mut self.slots[j];
            let done = if slot.reset_pending {
                if actions.is_some() {
                    slot.episode += 1;
                    slot.seed = slot.seed.wrapping_add(stride);
                }
                slot.reset_pending = false;
                env.reset_with(slot.seed, params.clone())?.is_done()
            } else {
                let joint = &actions.expect("stepping has actions")[self.first + j];
                env.step_joint(joint)
                    .map_err(|e| RangeError::InvalidParam {
                        field: "batch".into(),
                        why: e.to_string(),
                    })?
                    .is_done()
            };
            slot.reset_pending = done;
            let env: &RangeEnv = env;
            let t = env.transition();
            for (a, name) in AGENTS.iter().enumerate() {
                let step = &t.agents[*name];
                self.rewards[j * N_AGENTS + a] = step.reward;
                if a == 0 {
                    self.terminated[j] = step.terminated;
                    self.truncated[j] = step.truncated;
                }
            }
            for (b, spec) in specs.iter().enumerate() {
                let arr = &t.agents[AGENTS[spec.agent]].obs[spec.key];
                if arr.revision() == self.copied[j][b] {
                    continue;
                }
                let first_copy = self.copied[j][b] == u64::MAX;
                self.copied[j][b] = arr.revision();
                let len = spec.len();
                if spec.key == "adj_matrix" && !first_copy {
                    // Only the rows whose bitset moved.
                    let (Part::F32(dst), ArrayData::F32(src)) = (&mut self.parts[b], arr.data())
                    else {
                        unreachable!("adj_matrix is float32")
                    };
                    let dst = &mut dst[j * len..(j + 1) * len];
                    let have = &mut self.adj[j][spec.agent];
                    let row = params.max_hosts;
                    for (r, now) in env.adj_rows(spec.agent).iter().enumerate() {
                        if have[r] != *now {
                            dst[r * row..(r + 1) * row]
                                .copy_from_slice(&src[r * row..(r + 1) * row]);
                            have[r] = *now;
                        }
                    }
                    continue;
                }
                if spec.key == "adj_matrix" {
                    let rows = env.adj_rows(spec.agent);
                    self.adj[j][spec.agent][..rows.len()].copy_from_slice(rows);
                }
                match (&mut self.parts[b], arr.data()) {
                    (Part::F32(dst), ArrayData::F32(src)) => {
                        dst[j * len..(j + 1) * len].copy_from_slice(src)
                    }
                    (Part::I8(dst), ArrayData::I8(src)) => {
                        dst[j * len..(j + 1) * len].copy_from_slice(src)
                    }
                    _ => unreachable!("buffer dtypes follow obs::keys"),
                }
            }
        }
        Ok(())
    }
}
