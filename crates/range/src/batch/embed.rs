//! A blue agent's `siem_embedding` kept from step to step: the token counts of its window (the
//! last `embedding_lines` buffered lines about its subnets) updated with the lines that came
//! and went, instead of re-walking the window's lines (a heap `features` vector each, cold at
//! thousands of sub-envs) whenever one line about its subnets arrives.
//!
//! Parity: [`obs::write_embedding`] adds ±1.0 per token in `f32`; every partial sum is a small
//! integer (far below 2^24), so it is exact in any order and equals the integer count
//! converted. The window holds the same lines as that walk: new lines join at the newest end,
//! the oldest leave when it is full, and whenever one of the window's lines left the buffer
//! (or the step brought more lines than it holds) the window is rebuilt from the buffer as
//! the walk would. A line evicted outside the window changes nothing: the buffer evicts oldest
//! first, so it was older than the window, which then was full and stays so.

use std::collections::VecDeque;

use crate::params::Params;
use crate::siem::{self, EMBED_DIM};
use crate::sim::{State, BLUE_SUBNETS};

#[derive(Debug, Clone)]
pub(super) struct EmbedWindow {
    /// Signed token counts of the window's lines (a feature's top bit is its sign).
    counts: [i32; EMBED_DIM],
    /// The window's lines as episode line numbers (lines pushed into the buffer before it),
    /// oldest first.
    lines: VecDeque<u64>,
}

impl EmbedWindow {
    pub(super) fn new() -> EmbedWindow {
        EmbedWindow {
            counts: [0; EMBED_DIM],
            lines: VecDeque::new(),
        }
    }

    /// Brings the window to the current state of blue agent `agent`. `pushed`: the lines pushed
    /// into the buffer so far this episode (the number of the next line); `full`: rebuild.
    pub(super) fn update(
        &mut self,
        state: &State,
        params: &Params,
        agent: usize,
        pushed: u64,
        full: bool,
    ) {
        let buf = &state.siem.buffer;
        let subnets = BLUE_SUBNETS[agent];
        let fresh = state.last.new_logs.len();
        let base = pushed - buf.len() as u64;
        // A window line left the buffer (its tokens are gone with it; the buffer evicts oldest
        // first, so older lines of the agent's subnets went too), or lines of this step did.
        let lost = self.lines.front().is_some_and(|&oldest| oldest < base);
        if full || lost || fresh >= buf.len() {
            return self.rebuild(state, params, agent, base);
        }
        for i in buf.len() - fresh..buf.len() {
            let line = &buf[i];
            if subnets & (1 << line.subnet) == 0 {
                continue;
            }
            count(&mut self.counts, &line.features, 1);
            self.lines.push_back(base + i as u64);
            if self.lines.len() > params.embedding_lines {
                let old = self.lines.pop_front().expect("the window is not empty");
                // Still buffered: no window line left the buffer this step.
                let Some(at) = old.checked_sub(base) else {
                    return self.rebuild(state, params, agent, base);
                };
                count(&mut self.counts, &buf[at as usize].features, -1);
            }
        }
    }

    /// The window from the buffer, newest line first, as [`obs::write_embedding`] walks it.
    fn rebuild(&mut self, state: &State, params: &Params, agent: usize, base: u64) {
        self.counts = [0; EMBED_DIM];
        self.lines.clear();
        for (i, line) in state.siem.buffer.iter().enumerate().rev() {
            if self.lines.len() == params.embedding_lines {
                break;
            }
            if BLUE_SUBNETS[agent] & (1 << line.subnet) != 0 {
                count(&mut self.counts, &line.features, 1);
                self.lines.push_front(base + i as u64);
            }
        }
    }

    /// Writes the embedding: the counts as floats, L2-normalised.
    pub(super) fn write(&self, out: &mut [f32]) {
        let mut acc = [0.0f32; EMBED_DIM];
        for (a, c) in acc.iter_mut().zip(self.counts) {
            *a = c as f32;
        }
        siem::normalise(&mut acc);
        out.copy_from_slice(&acc);
    }
}

/// Adds (`sign` 1) or removes (-1) one line's tokens.
fn count(counts: &mut [i32; EMBED_DIM], features: &[u8], sign: i32) {
    for &f in features {
        let v = if f & 0x80 != 0 { -sign } else { sign };
        counts[(f & 0x7f) as usize] += v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obs;
    use crate::params::{PRESETS, SCENARIOS};
    use crate::sampler::ActionSampler;
    use crate::sim;

    /// The kept window, updated when the batch updates it (lines about the agent's subnets
    /// came or went), writes the bits of a fresh [`obs::write_embedding`] after every step, in
    /// every scenario and preset, through episodes that fill and evict the buffer.
    #[test]
    fn kept_embedding_equals_a_fresh_one() {
        let mut rebuilt_by_eviction = 0;
        for scenario in SCENARIOS {
            for preset in PRESETS {
                let mut params = Params::new(scenario).with_preset(preset).unwrap();
                for (seed, lines) in [(0, params.embedding_lines), (1, 1), (2, 3)] {
                    params.embedding_lines = lines.min(params.log_buffer);
                    let mut state = sim::reset(seed, &params);
                    let mut sampler = ActionSampler::new(seed);
                    let mut windows = [EmbedWindow::new(), EmbedWindow::new(), EmbedWindow::new()];
                    let mut pushed = state.siem.buffer.len() as u64;
                    let mut mask = vec![0i8; params.mask_len()];
                    let (mut got, mut want) = (vec![0f32; EMBED_DIM], vec![0f32; EMBED_DIM]);
                    let mut full = true;
                    for _ in 0..300 {
                        let changed = obs::subnets_with_changed_lines(&state);
                        for (a, w) in windows.iter_mut().enumerate() {
                            if full || changed & BLUE_SUBNETS[a] != 0 {
                                if !full && state.last.evicted_subnets & BLUE_SUBNETS[a] != 0 {
                                    rebuilt_by_eviction += 1;
                                }
                                w.update(&state, &params, a, pushed, full);
                            }
                            w.write(&mut got);
                            obs::write_embedding(&state, &params, a, &mut want);
                            let bits =
                                |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                            assert_eq!(bits(&got), bits(&want), "{scenario:?} {preset} {seed}");
                        }
                        if state.done() {
                            break;
                        }
                        let joint = sampler.joint(&state, &params, &mut mask);
                        sim::step(&mut state, &joint, &params);
                        pushed += state.last.new_logs.len() as u64;
                        full = false;
                    }
                }
            }
        }
        assert!(
            rebuilt_by_eviction > 50,
            "evictions seen: {rebuilt_by_eviction}"
        );
    }
}
