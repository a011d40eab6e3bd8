//! The step loop: validate the joint action against the state at the start of the step, start
//! the valid actions, and run the clock tick by tick to the next completion.

use crate::actions::*;
use crate::params::Params;
use crate::{N_AGENTS, N_TYPES, RED};

use super::events::Events;
use super::host_sets::ServiceSets;
use super::hypervisor::duration;
use super::state::{InFlight, JointAction, State};
use super::validity::{all_target_sets, is_valid_with, kind_of};
use super::{blue, churn, green, logging, pcap, red, scenario};

/// Advances the episode by one event-driven step: actions are validated against the state at
/// the start of the step (so the masks shown are exactly what is accepted), started, and the
/// clock runs to the next completion (at least one tick). Does nothing once the episode is over.
pub fn step(state: &mut State, actions: &JointAction, params: &Params) {
    step_inner(state, actions, params, None, None);
}

/// Like [`step`], with the target sets of the current state already computed (the wrapper
/// has them from rendering the masks; nothing changes the state in between). Returns whether
/// some host's services may have changed: a caller keeping [`super::ServiceSets`] recomputes
/// them then (and only then: otherwise they are unchanged). `services`: the caller's kept
/// service sets of `state` (red completions read them until a service changes).
pub fn step_with_sets(
    state: &mut State,
    actions: &JointAction,
    params: &Params,
    sets: &[[u128; N_TYPES]; N_AGENTS],
    services: &ServiceSets,
) -> bool {
    step_inner(state, actions, params, Some(sets), Some(services)) != 0
}

/// [`step_with_sets`] bringing the caller's kept service sets up to date itself: from the
/// hosts whose services may have changed only (a patched or arriving host, a decoy), not
/// every host's.
pub fn step_keeping_sets(
    state: &mut State,
    actions: &JointAction,
    params: &Params,
    sets: &[[u128; N_TYPES]; N_AGENTS],
    services: &mut ServiceSets,
) {
    let changed = step_inner(state, actions, params, Some(sets), Some(services));
    if changed != 0 {
        services.update_slots(state, changed);
    }
}

pub(super) fn step_inner(
    state: &mut State,
    actions: &JointAction,
    params: &Params,
    sets: Option<&[[u128; N_TYPES]; N_AGENTS]>,
    services: Option<&ServiceSets>,
) -> u128 {
    if state.done() {
        return 0;
    }
    // The host slots' flag sets are exact from here on to the end of the step (a caller may
    // have written records).
    state.hosts.sync();
    state.comm.sync();
    state.last.new_logs.clear();
    state.last.evicted_subnets = 0;
    state.last.rewards = [0.0; N_AGENTS];
    state.last.invalid = [false; N_AGENTS];
    let mut ev = Events {
        kept_services: services.cloned(),
        ..Events::default()
    };

    let mut valid = [false; N_AGENTS];
    let fresh;
    let sets = match sets {
        Some(s) => s,
        None => {
            fresh = all_target_sets(state, params);
            &fresh
        }
    };
    for (a, act) in actions.0.iter().enumerate() {
        state.last.target[a] = if act.kind == SLEEP as i64 {
            -1
        } else {
            act.target
        };
        valid[a] = is_valid_with(state, params, a, &sets[a], *act);
        state.last.invalid[a] = !valid[a];
    }
    for (a, act) in actions.0.iter().enumerate() {
        if valid[a] && act.kind != SLEEP as i64 {
            ev.cost[a] = start(state, a, act.kind as usize, act.target as usize);
        }
    }

    let next = state.in_flight.iter().map(|f| f.done_at).min();
    let until = next
        .unwrap_or(state.tick + 1)
        .max(state.tick + 1)
        .min(params.max_ticks);
    let from = state.tick;
    while state.tick < until && !state.terminated {
        state.tick += 1;
        tick(state, params, &mut ev);
    }
    state.hosts.sync();
    state.comm.sync();
    state.last.delta_ticks = state.tick - from;
    state.steps += 1;

    if params.pcap {
        pcap::synth_pcap(state, params, &ev);
    }
    scenario::rewards(state, params, &ev);
    if scenario::terminal(state, params, &ev) {
        state.terminated = true;
    }
    if state.tick >= params.max_ticks {
        state.truncated = true;
    }
    ev.services_slots
}

/// Starts an action and returns the energy it cost.
pub(super) fn start(state: &mut State, agent: usize, kind: usize, target: usize) -> f64 {
    let cost = kind_of(agent, kind).energy;
    state.agents[agent].energy -= cost;
    state.agents[agent].in_flight += 1;
    let d = duration(state, agent, kind);
    if agent != RED && kind == B_RESTORE_BACKUP {
        state.hosts[target].restoring = true;
    }
    state.in_flight.push(InFlight {
        seq: state.next_seq,
        agent: agent as u8,
        kind: kind as u8,
        target: target as u16,
        started: state.tick,
        done_at: state.tick + d,
    });
    state.next_seq += 1;
    cost
}

pub(super) fn tick(state: &mut State, params: &Params, ev: &mut Events) {
    let now = state.tick;
    for a in state.agents.iter_mut() {
        a.energy = (a.energy + params.energy_regen).min(params.energy_start);
    }
    // Completions, in start order.
    while let Some(pos) = state.in_flight.iter().position(|f| f.done_at <= now) {
        let f = state.in_flight.remove(pos);
        state.agents[f.agent as usize].in_flight -= 1;
        if f.agent as usize == RED {
            red::complete_red(state, params, f.kind as usize, f.target as usize, ev);
        } else {
            blue::complete_blue(
                state,
                params,
                f.agent as usize,
                f.kind as usize,
                f.target as usize,
                ev,
            );
        }
    }
    green::green(state, params);
    if let Some(slot) = churn::churn(state, params) {
        ev.services_changed = true;
        ev.services_slots |= 1 << slot;
    }
    if let Some(ph) = state.physics.as_mut() {
        if ph.tick(params, &mut state.rng.physics) {
            ev.kinetic = true;
        }
    }
    // Persistence, uptime: over the real hosts (active, not decoys), from the slot sets.
    state.hosts.sync();
    let f = state.hosts.flags();
    let real = state.hosts.active() & !f.decoy;
    let is_up = real & f.online & !f.isolated & !f.restoring;
    let total = real.count_ones();
    let up = (is_up & !f.encrypted).count_ones();
    ev.persistence_ticks += (is_up & f.privileged & f.persistent).count_ones();
    if total > 0 {
        state.metrics.uptime_sum += f64::from(up) / f64::from(total);
    }
    state.metrics.uptime_ticks += 1;
    logging::release_logs(state, params);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{PRESETS, SCENARIOS};
    use crate::sampler::ActionSampler;
    use crate::sim::host_sets::{host_sets_with, service_sets, ServiceSets};
    use crate::sim::validity::all_target_sets_with;

    /// Plays every scenario and preset, seeds 0 to 3, up to 400 steps each, with the
    /// sampler's valid actions: `step` takes each step (the state, the joint action, the
    /// params, where it is, for messages, and whether it is an episode's first step) and says
    /// whether what it watches changed; returns how many steps changed it.
    fn count_changes_everywhere(
        mut step: impl FnMut(&mut State, &JointAction, &Params, &str, bool) -> bool,
    ) -> usize {
        let mut changes = 0;
        for scenario in SCENARIOS {
            for preset in PRESETS {
                let params = Params::new(scenario).with_preset(preset).unwrap();
                for seed in 0..4 {
                    let mut state = crate::sim::reset(seed, &params);
                    let mut sampler = ActionSampler::new(seed);
                    let mut mask = vec![0i8; params.mask_len()];
                    let at = format!("{scenario:?} {preset} seed {seed}");
                    for k in 0..400 {
                        if state.done() {
                            break;
                        }
                        let joint = sampler.joint(&state, &params, &mut mask);
                        changes += usize::from(step(&mut state, &joint, &params, &at, k == 0));
                    }
                }
            }
        }
        changes
    }

    /// Service sets kept across steps and recomputed only when `step_with_sets` says so (as
    /// the batch and the single env keep them) equal fresh ones after every step, in every
    /// scenario and preset, over episodes where services do change.
    #[test]
    fn kept_service_sets_equal_fresh_ones() {
        let mut kept = ServiceSets::default();
        let changes = count_changes_everywhere(|state, joint, params, at, first| {
            if first {
                kept = service_sets(state);
            }
            let kept = &mut kept;
            let sets = all_target_sets_with(state, params, &host_sets_with(state, kept));
            let before = service_sets(state);
            if step_with_sets(state, joint, params, &sets, kept) {
                *kept = service_sets(state);
            }
            let fresh = service_sets(state);
            assert_eq!(*kept, fresh, "{at}");
            fresh != before
        });
        assert!(changes > 50, "services changed only {changes} times");
    }

    /// Service sets kept by `step_keeping_sets` (updated from the changed hosts only, also
    /// mid-step for red's completions, which `complete_red` checks against fresh sets in unit
    /// tests) equal fresh ones after every step, in every scenario and preset.
    #[test]
    fn service_sets_kept_by_the_step_equal_fresh_ones() {
        let mut kept = ServiceSets::default();
        let changes = count_changes_everywhere(|state, joint, params, at, first| {
            if first {
                kept = service_sets(state);
            }
            let kept = &mut kept;
            let sets = all_target_sets_with(state, params, &host_sets_with(state, kept));
            let before = kept.clone();
            step_keeping_sets(state, joint, params, &sets, kept);
            assert_eq!(*kept, service_sets(state), "{at}");
            *kept != before
        });
        assert!(changes > 50, "services changed only {changes} times");
    }

    /// The host slots' kept sets (active, per subnet) equal the records' after every step, in
    /// every scenario and preset, over episodes where hosts arrive, decoys are deployed and
    /// hosts move subnets.
    #[test]
    fn kept_host_slot_sets_equal_the_records() {
        let changes = count_changes_everywhere(|state, joint, params, at, first| {
            if first {
                assert!(state.hosts.sets_consistent(), "{at}, after the reset");
            }
            let before = (state.hosts.active(), *state.hosts.subnets());
            step(state, joint, params);
            assert!(state.hosts.sets_consistent(), "{at}");
            before != (state.hosts.active(), *state.hosts.subnets())
        });
        assert!(changes > 50, "slot sets changed only {changes} times");
    }
}
