//! The batched backend: N sub-envs stepped together on a pool of threads kept across steps
//! (rayon), their observations, rewards and flags in contiguous `[N, ...]` buffers.
//!
//! Each sub-env is a `State` stepped by the same pure core as a single env and rendered by the
//! same functions (or variants proven equal, see `sub`), straight into its slots of the
//! buffers, so sub-env i is
//! bit-identical to a single env reset with its seed and given its actions, whatever the
//! thread count (the threads share nothing but read-only parameters). Infos and logs are
//! rendered only when asked for ([`Batch::transition`]).
//!
//! **Seeds and auto-reset.** Sub-env i starts at seed `seed0 + i`; its episode k uses seed
//! `seed0 + i + k * N` (so no two sub-envs ever share a seed, and any sub-episode can be
//! replayed alone from [`Batch::seed`]). When a step ends a sub-env's episode, the buffers show
//! that final transition; the next [`Batch::step`] resets it with its next seed instead of
//! stepping it (its action is ignored), and shows the reset: reward 0, flags false.

mod embed;
mod sub;

use lockstep::env::{EnvSpec, Transition};

use crate::env::{build_spec, render_transition};
use crate::obs;
use crate::params::Params;
use crate::sampler::ActionSampler;
use crate::sim::{JointAction, State};
use crate::{RangeError, N_AGENTS};
use sub::{Dst, Scratch, SubEnv};

/// One observation key of one agent, stored for every sub-env.
#[derive(Debug, Clone)]
pub struct BufferSpec {
    pub agent: usize,
    pub key: &'static str,
    /// Shape for one sub-env; the buffer is `[N, shape...]`.
    pub shape: Vec<usize>,
}

impl BufferSpec {
    pub(crate) fn len(&self) -> usize {
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
    /// The stepping threads (with more than one): kept across steps, so a step costs no
    /// thread start.
    pool: Option<rayon::ThreadPool>,
    spec: EnvSpec,
    envs: Vec<SubEnv>,
    slots: Vec<Slot>,
    specs: Vec<BufferSpec>,
    data: Vec<BufferData>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    /// Every buffer shows the current states (after [`Batch::observe`]); the masks always do.
    shown: bool,
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
                    BufferData::I8(mapped_zeros(n * s.len()))
                } else {
                    BufferData::F32(mapped_zeros(n * s.len()))
                }
            })
            .collect();
        let envs = (0..n)
            .map(|i| SubEnv::new(seed0 + i as u64, &params))
            .collect();
        let threads = threads.max(1);
        let pool = if threads > 1 && n > 1 {
            Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("lockstep-batch-{i}"))
                    .build()
                    .map_err(|e| RangeError::InvalidParam {
                        field: "threads".into(),
                        why: format!("cannot start {threads} threads: {e}"),
                    })?,
            )
        } else {
            None
        };
        let mut b = Batch {
            pool,
            spec: build_spec(&params),
            params,
            seed0,
            threads,
            envs,
            slots: (0..n)
                .map(|i| Slot {
                    seed: seed0 + i as u64,
                    episode: 0,
                    reset_pending: false,
                })
                .collect(),
            specs,
            data,
            rewards: vec![0.0; n * N_AGENTS],
            terminated: vec![false; n],
            truncated: vec![false; n],
            shown: false,
        };
        b.advance(Moves::Render, true)?;
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
    ///
    /// Only the masks, rewards and flags are written; the other buffers show the new states
    /// once [`Batch::observe`] is called (a caller that never reads them never pays for them).
    pub fn step(&mut self, actions: &[JointAction]) -> Result<(), RangeError> {
        self.check_actions(actions)?;
        self.advance(Moves::Given(actions), false)
    }

    /// [`Batch::step`] and [`Batch::observe`] in one pass over the sub-envs (each sub-env's
    /// state is read once): for a caller that reads every buffer after every step.
    pub fn step_observed(&mut self, actions: &[JointAction]) -> Result<(), RangeError> {
        self.check_actions(actions)?;
        self.advance(Moves::Given(actions), true)
    }

    /// Writes every buffer that does not show the current states yet (a no-op when they do).
    /// Each array is written as the single env would have written it after every step: the
    /// incremental writes track what each slot holds, not what the last step changed.
    pub fn observe(&mut self) -> Result<(), RangeError> {
        if self.shown {
            return Ok(());
        }
        self.advance(Moves::Show, true)
    }

    fn check_actions(&self, actions: &[JointAction]) -> Result<(), RangeError> {
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
        Ok(())
    }

    /// Steps every sub-env with actions drawn by its own sampler (`samplers[i]` for sub-env i)
    /// from its masks in the buffers, on the stepping threads: the same draws, in the same
    /// order, as sampling `sample(agent, mask)` for every sub-env and agent and calling
    /// [`Batch::step`] (a sub-env about to reset draws too; its action is ignored). What
    /// `range bench --batch` runs: sampling stays beside the sub-env it feeds, on its thread.
    pub fn step_sampled(&mut self, samplers: &mut [ActionSampler]) -> Result<(), RangeError> {
        if samplers.len() != self.len() {
            return Err(RangeError::InvalidParam {
                field: "batch".into(),
                why: format!("{} samplers for a batch of {}", samplers.len(), self.len()),
            });
        }
        self.advance(Moves::Sampled(samplers), false)
    }

    /// The seed of sub-env `i`'s current episode.
    pub fn seed(&self, i: usize) -> u64 {
        self.slots[i].seed
    }

    /// How many episodes sub-env `i` started before its current one.
    pub fn episode(&self, i: usize) -> u64 {
        self.slots[i].episode
    }

    /// Sub-env `i`'s transition as a single env shows it (observations, rewards, flags, infos
    /// and logs), rendered afresh from its state: a full rendering, for replay and tracing,
    /// not for a learner's loop (the buffers are).
    pub fn transition(&self, i: usize) -> Transition {
        render_transition(&self.envs[i].state, &self.params)
    }

    /// Sub-env `i`'s core state.
    pub fn state(&self, i: usize) -> &State {
        &self.envs[i].state
    }

    /// The spec every sub-env shares (that of `range:<scenario>` with these parameters).
    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// The buffers' layout, in the order of [`Batch::buffer`].
    pub fn buffers(&self) -> &[BufferSpec] {
        &self.specs
    }

    /// Buffer `b`'s contents, `[N, shape...]` row-major. Panics if `b` is not an
    /// `action_mask` and a step since the last [`Batch::observe`] left it behind the states:
    /// a stale observation must not pass for a current one.
    pub fn buffer(&self, b: usize) -> &BufferData {
        assert!(
            self.shown || self.specs[b].key == "action_mask",
            "Batch::buffer({b}): call Batch::observe after a step to bring it up to date"
        );
        &self.data[b]
    }

    /// Whether every buffer shows the current states (no step since [`Batch::observe`]).
    pub fn is_observed(&self) -> bool {
        self.shown
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

    /// Steps (or, with no actions, renders the freshly reset) sub-envs, each thread a
    /// contiguous share of them and of every buffer; `show`: write every observation too.
    fn advance(&mut self, moves: Moves<'_>, show: bool) -> Result<(), RangeError> {
        let n = self.len();
        let chunk = n.div_ceil(self.threads);
        let masks: [usize; N_AGENTS] = std::array::from_fn(|a| {
            self.specs
                .iter()
                .position(|s| s.agent == a && s.key == "action_mask")
                .expect("every agent has a mask")
        });
        let step = !matches!(moves, Moves::Show);
        let (actions, mut samplers) = match moves {
            Moves::Render | Moves::Show => (None, None),
            Moves::Given(a) => (Some(a), None),
            Moves::Sampled(s) => (None, Some(s.chunks_mut(chunk))),
        };
        let stride = n as u64;
        let specs = &self.specs;
        let params = &self.params;
        // Per thread: its part of every buffer.
        let mut parts: Vec<Vec<Dst<'_>>> = (0..n.div_ceil(chunk)).map(|_| Vec::new()).collect();
        for (spec, data) in specs.iter().zip(self.data.iter_mut()) {
            let len = spec.len() * chunk;
            match data {
                BufferData::F32(v) => {
                    for (t, c) in v.chunks_mut(len).enumerate() {
                        parts[t].push(Dst::F32(c));
                    }
                }
                BufferData::I8(v) => {
                    for (t, c) in v.chunks_mut(len).enumerate() {
                        parts[t].push(Dst::I8(c));
                    }
                }
            }
        }
        let mut work = self
            .envs
            .chunks_mut(chunk)
            .zip(self.slots.chunks_mut(chunk))
            .zip(self.rewards.chunks_mut(chunk * N_AGENTS))
            .zip(self.terminated.chunks_mut(chunk))
            .zip(self.truncated.chunks_mut(chunk))
            .zip(parts)
            .enumerate()
            .map(
                |(t, (((((envs, slots), rewards), term), trunc), parts))| Chunk {
                    first: t * chunk,
                    samplers: samplers.as_mut().and_then(|s| s.next()),
                    envs,
                    slots,
                    rewards,
                    terminated: term,
                    truncated: trunc,
                    parts,
                },
            );
        let run = |mut c: Chunk<'_>| {
            if step {
                c.run(specs, params, actions, &masks, stride, show)
            } else {
                c.show(specs, params);
                Ok(())
            }
        };
        match &self.pool {
            Some(pool) if chunk < n => {
                use rayon::prelude::*;
                let work: Vec<Chunk<'_>> = work.collect();
                pool.install(|| work.into_par_iter().try_for_each(run))?;
            }
            // One thread, or a batch smaller than two chunks: all on this thread.
            _ => work.try_for_each(run)?,
        }
        self.shown = show;
        Ok(())
    }
}

/// `len` zeros, every page of them mapped now. A zeroed `Vec` is mapped lazily, page by page
/// on first write, and an `adj_matrix` slot is written entry by entry as red discovers hosts:
/// at 4096 sub-envs (650 MB of `adj_matrix`) the steps of the first thousands of episodes
/// each took page faults, a quarter of the process's CPU time in system time. Writing one
/// element per page here moves that to construction.
fn mapped_zeros<T: Copy + Default>(len: usize) -> Vec<T> {
    let mut v = vec![T::default(); len];
    // Opaque to the optimiser, which could otherwise drop stores of zero into memory it
    // knows the allocator zeroed.
    let s = std::hint::black_box(&mut v[..]);
    let per_page = (4096 / std::mem::size_of::<T>()).max(1);
    for x in s.iter_mut().step_by(per_page) {
        *x = T::default();
    }
    v
}

/// What a batch step does with the sub-envs.
enum Moves<'a> {
    /// Nothing: render the freshly reset states (construction).
    Render,
    /// Nothing: write the observations the last steps left behind.
    Show,
    Given(&'a [JointAction]),
    Sampled(&'a mut [ActionSampler]),
}

/// One thread's share of a batch step.
struct Chunk<'a> {
    first: usize,
    /// With [`Moves::Sampled`]: this chunk's samplers.
    samplers: Option<&'a mut [ActionSampler]>,
    envs: &'a mut [SubEnv],
    slots: &'a mut [Slot],
    rewards: &'a mut [f64],
    terminated: &'a mut [bool],
    truncated: &'a mut [bool],
    parts: Vec<Dst<'a>>,
}

impl Chunk<'_> {
    fn run(
        &mut self,
        specs: &[BufferSpec],
        params: &Params,
        actions: Option<&[JointAction]>,
        masks: &[usize; N_AGENTS],
        stride: u64,
        show: bool,
    ) -> Result<(), RangeError> {
        let stepping = actions.is_some() || self.samplers.is_some();
        let mut scratch = show.then(Scratch::new);
        for j in 0..self.envs.len() {
            let mut sampled = JointAction::default();
            if let Some(samplers) = self.samplers.as_deref_mut() {
                let len = params.mask_len();
                for (a, &b) in masks.iter().enumerate() {
                    if let Dst::I8(v) = &self.parts[b] {
                        sampled.0[a] = samplers[j].sample(a, &v[j * len..(j + 1) * len]);
                    }
                }
            }
            let env = &mut self.envs[j];
            let slot = &mut self.slots[j];
            match actions {
                // Construction: the state is reset, nothing rendered yet.
                None if !stepping => {}
                _ if slot.reset_pending => {
                    slot.episode += 1;
                    slot.seed = slot.seed.wrapping_add(stride);
                    env.reset(slot.seed, params);
                }
                Some(acts) => env.step(&acts[self.first + j], params),
                None => env.step(&sampled, params),
            }
            env.write_masks(params, specs, &mut self.parts, j);
            if let Some(scratch) = scratch.as_deref_mut() {
                env.show(params, specs, &mut self.parts, j, scratch);
            }
            let state = &env.state;
            slot.reset_pending = state.done();
            self.rewards[j * N_AGENTS..(j + 1) * N_AGENTS].copy_from_slice(&state.last.rewards);
            self.terminated[j] = state.terminated;
            self.truncated[j] = state.truncated;
        }
        Ok(())
    }

    /// Writes the observations the last steps left behind.
    fn show(&mut self, specs: &[BufferSpec], params: &Params) {
        let mut scratch = Scratch::new();
        for (j, env) in self.envs.iter_mut().enumerate() {
            env.show(params, specs, &mut self.parts, j, &mut scratch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::mapped_zeros;

    #[test]
    fn mapped_zeros_are_zeros_of_the_length() {
        for len in [0usize, 1, 1023, 1024, 1025, 5000, 300_001] {
            let f: Vec<f32> = mapped_zeros(len);
            assert_eq!(f.len(), len);
            assert!(f.iter().all(|x| x.to_bits() == 0));
            let i: Vec<i8> = mapped_zeros(len);
            assert_eq!(i.len(), len);
            assert!(i.iter().all(|&x| x == 0));
        }
    }
}
