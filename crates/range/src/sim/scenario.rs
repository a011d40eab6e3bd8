//! The scenarios' rewards and termination rules. Every scenario shares the dynamics; only these
//! differ, so each scenario is one [`Rules`] entry: a reward function and a termination test.
//! [`rules`] is the registry.

use crate::params::{Params, Scenario};
use crate::topology::{slots, Host, CORPORATE, SECURE};
use crate::{N_AGENTS, RED};

use super::events::Events;
use super::state::State;

/// One scenario's rules.
pub(super) struct Rules {
    /// This step's raw reward per agent.
    pub(super) rewards: fn(&State, &Events) -> [f64; N_AGENTS],
    /// Whether the episode ends after this step (all agents at once).
    pub(super) terminal: fn(&State, &Events) -> bool,
    /// Reward per unit of energy an agent spends starting an action (subtracted). The
    /// original documents this term (`ACTION_COST_FACTOR`) but never applies it.
    pub(super) action_cost: f64,
}

/// The registry: the rules of `scenario`.
pub(super) fn rules(scenario: Scenario) -> &'static Rules {
    match scenario {
        Scenario::Ransomware => &RANSOMWARE,
        Scenario::AptEspionage => &APT_ESPIONAGE,
        Scenario::CloudHybrid => &CLOUD_HYBRID,
        Scenario::IotGrid => &IOT_GRID,
        Scenario::OtStuxnet => &OT_STUXNET,
    }
}

/// Scores this step's events under the scenario's rules into `state.last.rewards` and the
/// running scores.
pub(super) fn rewards(state: &mut State, params: &Params, ev: &Events) {
    let rules = rules(params.scenario);
    let mut r = (rules.rewards)(state, ev);
    for (ra, cost) in r.iter_mut().zip(ev.cost) {
        *ra -= rules.action_cost * cost;
    }
    for (a, v) in r.iter().enumerate() {
        state.metrics.score[a] += v;
    }
    state.last.rewards = r;
}

pub(super) fn terminal(state: &State, params: &Params, ev: &Events) -> bool {
    (rules(params.scenario).terminal)(state, ev)
}

static RANSOMWARE: Rules = Rules {
    rewards: ransomware_rewards,
    terminal: |state, ev| {
        kinetic(state, ev)
            || all_compromised(state, |h| h.subnet == CORPORATE || h.subnet == SECURE)
    },
    action_cost: 0.05,
};

static APT_ESPIONAGE: Rules = Rules {
    rewards: |_, ev| {
        let mut r = [0.0; N_AGENTS];
        r[RED] = 5.0 * f64::from(ev.persistence_ticks) - 20.0 * f64::from(ev.infected_isolated);
        for (b, rb) in r.iter_mut().take(3).enumerate() {
            *rb = 20.0 * f64::from(ev.correct_isolation[b]);
        }
        r
    },
    terminal: |state, _| {
        state.metrics.ever_infected
            && slots(state.hosts.active())
                .map(|i| &state.hosts[i])
                .filter(|h| h.compromised())
                .all(|h| h.isolated)
    },
    action_cost: 0.1,
};

static CLOUD_HYBRID: Rules = Rules {
    rewards: |_, ev| zero_sum(25.0, -30.0, ev.secure_breach),
    terminal: |state, _| all_compromised(state, |h| h.subnet == SECURE),
    action_cost: 0.05,
};

static IOT_GRID: Rules = Rules {
    rewards: |_, ev| zero_sum(40.0, -250.0, ev.dc_breach),
    terminal: |state, _| all_compromised(state, |h| h.dc),
    action_cost: 0.05,
};

static OT_STUXNET: Rules = Rules {
    rewards: |_, ev| {
        let k = if ev.kinetic { 10_000.0 } else { 0.0 };
        let mut r = [-k; N_AGENTS];
        r[RED] = k;
        r
    },
    terminal: kinetic,
    action_cost: 0.05,
};

fn ransomware_rewards(state: &State, ev: &Events) -> [f64; N_AGENTS] {
    let mut r = [0.0f64; N_AGENTS];
    r[RED] = 3.0 * f64::from(ev.user_gained)
        + 5.0 * f64::from(ev.root_gained)
        + 10.0 * f64::from(ev.compromised_new)
        + if ev.kinetic { 10_000.0 } else { 0.0 };
    // Real hosts (active, not decoys): all, clean, isolated.
    let (total, clean, isolated) = if state.hosts.is_synced() {
        // From the slot sets (the step syncs them before the rewards).
        let f = state.hosts.flags();
        let real = state.hosts.active() & !f.decoy;
        (
            real.count_ones(),
            (real & !f.privileged & !f.encrypted).count_ones(),
            (real & f.isolated).count_ones(),
        )
    } else {
        let (mut total, mut clean, mut isolated) = (0u32, 0u32, 0u32);
        for i in slots(state.hosts.active()) {
            let h = &state.hosts[i];
            if h.decoy {
                continue;
            }
            total += 1;
            clean += u32::from(h.privilege == 0 && !h.encrypted);
            isolated += u32::from(h.isolated);
        }
        (total, clean, isolated)
    };
    let total = f64::from(total.max(1));
    let health = f64::from(clean) / total;
    let downtime = 5.0 * f64::from(isolated) / total;
    for (b, rb) in r.iter_mut().take(3).enumerate() {
        *rb = 5.0 * f64::from(ev.correct_isolation[b]) - 2.0 * f64::from(ev.false_positive[b])
            + health
            - downtime;
    }
    r
}

/// Red gains `red` per event, every blue agent `blue` per event.
fn zero_sum(red: f64, blue: f64, events: u32) -> [f64; N_AGENTS] {
    let mut r = [blue * f64::from(events); N_AGENTS];
    r[RED] = red * f64::from(events);
    r
}

fn kinetic(state: &State, ev: &Events) -> bool {
    state.physics.as_ref().is_some_and(|p| p.kinetic) || ev.kinetic
}

/// Every real (active, not decoy) host matching `pred` is compromised, and there is one.
fn all_compromised(state: &State, pred: impl Fn(&Host) -> bool) -> bool {
    let mut n = 0;
    for h in slots(state.hosts.active())
        .map(|i| &state.hosts[i])
        .filter(|h| !h.decoy && pred(h))
    {
        if h.privilege == 0 {
            return false;
        }
        n += 1;
    }
    n > 0
}
