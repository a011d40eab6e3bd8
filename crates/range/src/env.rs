//! [`RangeEnv`]: the [`Env`] wrapper around the pure core.
//!
//! It owns one [`Transition`] and rewrites it in place each step. An array is borrowed
//! mutably (which takes a fresh revision) only when its new contents differ from the old:
//! small arrays are rendered into scratch and compared bit for bit; `adj_matrix` is skipped
//! entirely when the per-slot inputs it depends on did not change.

use std::collections::BTreeMap;

use lockstep::env::{
    Action, Actions, AgentSpec, AgentStep, Array, ArrayData, DType, Env, EnvError, EnvFactory,
    EnvSpec, Space, Transition,
};
use lockstep_canon::Value;

use crate::obs::{self, InfoValue};
use crate::params::{Params, Scenario};
use crate::sim::{self, AgentAction, JointAction, State};
use crate::value::{from_json, to_canon, to_json};
use crate::{RangeError, AGENTS, N_AGENTS, N_TYPES, RED};

/// Builds `range:<scenario>` envs with fixed base parameters.
#[derive(Debug, Clone)]
pub struct RangeFactory {
    params: Params,
    /// The env id its instances report; the CLI sets the exact name it resolved, so traces and
    /// goldens name a configuration that resolves back to the same parameters.
    id: String,
}

impl RangeFactory {
    pub fn new(params: Params) -> Result<RangeFactory, RangeError> {
        params.validate()?;
        let id = format!("range:{}", params.scenario.name());
        Ok(RangeFactory { params, id })
    }

    /// The same factory, its envs reporting `id`.
    pub fn with_id(mut self, id: impl Into<String>) -> RangeFactory {
        self.id = id.into();
        self
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// A concrete env (no boxing).
    pub fn build(&self) -> RangeEnv {
        let mut env = RangeEnv::new(self.params.clone()).expect("validated at construction");
        env.spec.id = self.id.clone();
        env
    }
}

impl EnvFactory for RangeFactory {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        Ok(Box::new(self.build()))
    }
}

/// A factory for scenario `scenario` with an optional preset (`easy`, `medium`, `hard`).
pub fn factory(scenario: &str, preset: Option<&str>) -> Result<RangeFactory, RangeError> {
    let mut params = Params::new(Scenario::from_name(scenario)?);
    if let Some(p) = preset {
        params = params.with_preset(p)?;
    }
    RangeFactory::new(params)
}

/// The range as a stateful [`Env`].
pub struct RangeEnv {
    base: Params,
    params: Params,
    spec: EnvSpec,
    state: State,
    started: bool,
    transition: Transition,
    scratch_f32: Vec<f32>,
    scratch_i8: Vec<i8>,
    /// Reachability rows of each agent's last rendered `adj_matrix`.
    adj_rows: [[u128; 128]; N_AGENTS],
    rows_scratch: [u128; 128],
    /// Target sets of the current state (masks); the next step validates against them.
    sets: [[u128; N_TYPES]; N_AGENTS],
    /// Technique masks rendered last into each info.
    techniques: [u32; N_AGENTS],
    /// The service-derived sets of `state`, recomputed when a step says services changed.
    services: sim::ServiceSets,
    /// The seed of the last episode: an unseeded reset continues its chain
    /// ([`lockstep::seed::SeedTree::continued`]).
    last_seed: Option<u64>,
}

impl RangeEnv {
    pub fn new(params: Params) -> Result<RangeEnv, RangeError> {
        params.validate()?;
        let state = sim::reset(0, &params);
        let services = sim::service_sets(&state);
        let mut env = RangeEnv {
            spec: build_spec(&params),
            base: params.clone(),
            params,
            state,
            started: false,
            transition: Transition::default(),
            scratch_f32: Vec::new(),
            scratch_i8: Vec::new(),
            adj_rows: [[0; 128]; N_AGENTS],
            rows_scratch: [0; 128],
            sets: [[0; N_TYPES]; N_AGENTS],
            techniques: [u32::MAX; N_AGENTS],
            services,
            last_seed: None,
        };
        env.rebuild();
        Ok(env)
    }

    /// Renders the transition from scratch and records what it was rendered from (adjacency
    /// rows, technique masks, target sets): the invariants `refresh` relies on.
    fn rebuild(&mut self) {
        self.transition = render_transition(&self.state, &self.params);
        let hs = sim::host_sets(&self.state);
        self.sets = sim::all_target_sets_with(&self.state, &self.params, &hs);
        for a in 0..N_AGENTS {
            sim::adjacency_rows(&hs, a, &mut self.adj_rows[a][..self.params.max_hosts]);
            self.techniques[a] = technique_mask(&self.state, a);
        }
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The core state (read only; the env is its only writer).
    pub fn core(&self) -> &State {
        &self.state
    }

    /// `adj_matrix` of `agent` as row bitsets (bit j of row i: slot i reaches slot j): what
    /// the array holds, so a copy can rewrite only the rows that differ.
    pub fn adj_rows(&self, agent: usize) -> &[u128] {
        &self.adj_rows[agent][..self.params.max_hosts]
    }

    /// The seed of the last episode (`None` before the first reset).
    pub fn last_seed(&self) -> Option<u64> {
        self.last_seed
    }

    pub fn transition(&self) -> &Transition {
        &self.transition
    }

    /// Resets with explicit params (validated), bypassing options.
    pub fn reset_with(&mut self, seed: u64, params: Params) -> Result<&Transition, RangeError> {
        params.validate()?;
        let reshape = obs_layout(&params) != obs_layout(&self.params);
        if params != self.params {
            let id = std::mem::take(&mut self.spec.id);
            self.spec = build_spec(&params);
            self.spec.id = id;
            self.params = params;
        }
        self.state = sim::reset(seed, &self.params);
        self.last_seed = Some(seed);
        self.services = sim::service_sets(&self.state);
        self.started = true;
        if reshape {
            self.rebuild();
        } else {
            self.refresh(true);
        }
        Ok(&self.transition)
    }

    /// Steps the core with a joint action and refreshes the transition.
    pub fn step_joint(&mut self, joint: &JointAction) -> Result<&Transition, EnvError> {
        if !self.started {
            return Err(EnvError::new("step before reset"));
        }
        if self.state.done() {
            return Err(EnvError::new("the episode is over: call reset"));
        }
        if sim::step_with_sets(
            &mut self.state,
            joint,
            &self.params,
            &self.sets,
            &self.services,
        ) {
            self.services = sim::service_sets(&self.state);
        }
        self.refresh(false);
        Ok(&self.transition)
    }

    /// Rewrites the transition from the state, touching only what changed. `full` after a
    /// reset (no previous step to compare with).
    fn refresh(&mut self, full: bool) {
        let hs = sim::host_sets_with(&self.state, &self.services);
        self.sets = sim::all_target_sets_with(&self.state, &self.params, &hs);
        let sets = &self.sets;
        let params = &self.params;
        let state = &self.state;
        let done_t = state.terminated;
        let done_u = state.truncated;
        let new_line_subnets = obs::subnets_with_changed_lines(state);
        // Reuses the strings' allocations.
        let logs = &mut self.transition.logs;
        logs.truncate(state.last.new_logs.len());
        for (i, line) in state.new_logs().enumerate() {
            match logs.get_mut(i) {
                Some(s) => {
                    s.clear();
                    s.push_str(line);
                }
                None => logs.push(line.to_string()),
            }
        }
        for (a, name) in AGENTS.iter().enumerate() {
            let step = self
                .transition
                .agents
                .get_mut(*name)
                .expect("every agent has a step");
            step.reward = state.last.rewards[a];
            step.terminated = done_t;
            step.truncated = done_u;
            let o = &mut step.obs;
            // obs
            self.scratch_f32.resize(obs::OBS_LEN, 0.0);
            obs::write_obs(state, params, a, &mut self.scratch_f32);
            update_f32(o.get_mut("obs").expect("obs"), &self.scratch_f32);
            // action_mask
            self.scratch_i8.resize(params.mask_len(), 0);
            sim::write_mask_with(state, params, a, &sets[a], &mut self.scratch_i8);
            update_i8(o.get_mut("action_mask").expect("mask"), &self.scratch_i8);
            if a != RED {
                // The buffer changes only when lines become visible, and those are new logs.
                if full || new_line_subnets & crate::sim::BLUE_SUBNETS[a] != 0 {
                    self.scratch_f32.resize(crate::siem::EMBED_DIM, 0.0);
                    obs::write_embedding(state, params, a, &mut self.scratch_f32);
                    update_f32(
                        o.get_mut("siem_embedding").expect("siem"),
                        &self.scratch_f32,
                    );
                }
                self.scratch_f32.resize(params.max_hosts, 0.0);
                obs::write_comm(state, &mut self.scratch_f32);
                update_f32(o.get_mut("blue_comm").expect("comm"), &self.scratch_f32);
            }
            self.scratch_f32.resize(1, 0.0);
            obs::write_delta(state, &mut self.scratch_f32);
            update_f32(o.get_mut("delta_t").expect("delta_t"), &self.scratch_f32);
            if params.pcap {
                update_f32(o.get_mut("pcap").expect("pcap"), &state.pcap);
            }
            if params.node_features {
                self.scratch_f32
                    .resize(params.max_hosts * obs::NODE_FEATURES, 0.0);
                obs::write_node_features(state, params, a, &mut self.scratch_f32);
                update_f32(
                    o.get_mut("node_features").expect("node_features"),
                    &self.scratch_f32,
                );
            }
            // adj_matrix: row bitsets are compared with the last rendered ones and only
            // changed rows are rewritten (blue agents share one computation).
            if a == 0 || a == RED {
                sim::adjacency_rows(&hs, a, &mut self.rows_scratch[..params.max_hosts]);
            }
            let prev = &mut self.adj_rows[a];
            // `prev` always describes the array's contents (also across resets), so a diff
            // is enough even after a reset.
            if prev[..params.max_hosts] != self.rows_scratch[..params.max_hosts] {
                let arr = o.get_mut("adj_matrix").expect("adj");
                if let ArrayData::F32(v) = arr.data_mut() {
                    obs::write_adj_changed(
                        params,
                        v,
                        &self.rows_scratch[..params.max_hosts],
                        Some(&prev[..params.max_hosts]),
                    );
                }
                prev.copy_from_slice(&self.rows_scratch);
            }
            // info, in place: items come in key order, as the map iterates.
            let techniques = &mut self.techniques[a];
            let Value::Object(map) = &mut step.info else {
                step.info = obs::info_value(state, params, a);
                continue;
            };
            let mut slots = map.iter_mut();
            let mut in_step = true;
            obs::info_items(state, params, a, |k, v| {
                let slot = if in_step { slots.next() } else { None };
                match slot {
                    Some((key, slot)) if key == k => {
                        if let InfoValue::Techniques(mask) = v {
                            if *techniques == mask {
                                return;
                            }
                            *techniques = mask;
                        }
                        let v = v.to_value();
                        if !same_bits(slot, &v) {
                            *slot = v;
                        }
                    }
                    _ => in_step = false,
                }
            });
            if !in_step {
                step.info = obs::info_value(state, params, a);
                *techniques = technique_mask(state, a);
            }
        }
    }
}

/// Value equality that tells `0.0` from `-0.0` (canonical JSON does), so an in-place update
/// never keeps a zero of the other sign.
#[inline]
fn same_bits(a: &Value, b: &Value) -> bool {
    use lockstep_canon::Number::{Float, Int};
    match (a, b) {
        (Value::Number(Float(x)), Value::Number(Float(y))) => x.to_bits() == y.to_bits(),
        (Value::Number(Int(x)), Value::Number(Int(y))) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        _ => a == b,
    }
}

fn technique_mask(state: &State, agent: usize) -> u32 {
    if agent == RED {
        state.metrics.red_techniques
    } else {
        state.metrics.seen_techniques[agent]
    }
}

fn same_bits_f32(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn update_f32(arr: &mut Array, fresh: &[f32]) {
    if let ArrayData::F32(v) = arr.data() {
        if same_bits_f32(v, fresh) {
            return;
        }
    }
    if let ArrayData::F32(v) = arr.data_mut() {
        v.copy_from_slice(fresh);
    }
}

fn update_i8(arr: &mut Array, fresh: &[i8]) {
    if let ArrayData::I8(v) = arr.data() {
        if v.as_slice() == fresh {
            return;
        }
    }
    if let ArrayData::I8(v) = arr.data_mut() {
        v.copy_from_slice(fresh);
    }
}

/// Everything that decides the shapes of the transition.
fn obs_layout(p: &Params) -> (usize, bool, bool) {
    (p.max_hosts, p.pcap, p.node_features)
}

/// Renders a whole transition from the state, with fresh arrays: what the wrapper's in-place
/// updates must always equal (tests compare them).
pub fn render_transition(state: &State, params: &Params) -> Transition {
    let mut agents = BTreeMap::new();
    for (a, name) in AGENTS.iter().enumerate() {
        let mut o = BTreeMap::new();
        for key in obs::keys(params, a) {
            let shape = obs::shape(params, key);
            let len: usize = shape.iter().product();
            let data = if key == "action_mask" {
                let mut m = vec![0i8; len];
                obs::write_mask(state, params, a, &mut m);
                ArrayData::I8(m)
            } else {
                let mut v = vec![0f32; len];
                match key {
                    "obs" => obs::write_obs(state, params, a, &mut v),
                    "siem_embedding" => obs::write_embedding(state, params, a, &mut v),
                    "adj_matrix" => obs::write_adj(state, params, a, &mut v),
                    "delta_t" => obs::write_delta(state, &mut v),
                    "blue_comm" => obs::write_comm(state, &mut v),
                    "pcap" => obs::write_pcap(state, &mut v),
                    "node_features" => obs::write_node_features(state, params, a, &mut v),
                    _ => {}
                }
                ArrayData::F32(v)
            };
            o.insert(
                key.to_string(),
                Array::new(&shape, data).expect("shape matches length"),
            );
        }
        agents.insert(
            name.to_string(),
            AgentStep {
                obs: o,
                reward: state.last.rewards[a],
                terminated: state.terminated,
                truncated: state.truncated,
                info: obs::info_value(state, params, a),
            },
        );
    }
    Transition {
        agents,
        logs: state.new_logs().map(str::to_string).collect(),
    }
}

fn boxed(dtype: DType, shape: Vec<usize>, low: f64, high: f64) -> Space {
    let n: usize = shape.iter().product();
    Space::Box {
        dtype: dtype.name().to_string(),
        shape,
        low: vec![low; n],
        high: vec![high; n],
    }
}

pub(crate) fn build_spec(params: &Params) -> EnvSpec {
    let agents = AGENTS
        .iter()
        .enumerate()
        .map(|(a, name)| {
            let mut space = BTreeMap::new();
            for key in obs::keys(params, a) {
                let shape = obs::shape(params, key);
                let s = match key {
                    "action_mask" => boxed(DType::I8, shape, 0.0, 1.0),
                    "siem_embedding" => boxed(DType::F32, shape, -1.0, 1.0),
                    "delta_t" => boxed(DType::F32, shape, 0.0, params.max_ticks as f64 / 50.0),
                    _ => boxed(DType::F32, shape, 0.0, 1.0),
                };
                space.insert(key.to_string(), s);
            }
            AgentSpec {
                name: name.to_string(),
                action_space: Space::MultiDiscrete {
                    nvec: vec![N_TYPES as u64, params.max_hosts as u64],
                },
                observation_space: space,
            }
        })
        .collect();
    let mut config = to_canon(params).expect("params serialise");
    if let Value::Object(m) = &mut config {
        // The dynamics version with the parameters: a golden recorded under another version
        // says so (`config differs at /range_version`) next to its digests.
        m.insert(
            "range_version".to_string(),
            Value::Number(lockstep_canon::Number::Int(i64::from(crate::RANGE_VERSION))),
        );
    }
    EnvSpec {
        id: format!("range:{}", params.scenario.name()),
        config,
        agents,
    }
}

/// Applies reset options: `null`, or an object with optional `preset` (a preset name) and
/// `params` (an object of `Params` fields overriding the base; nested objects merge).
pub fn params_from_options(base: &Params, options: &Value) -> Result<Params, RangeError> {
    let bad = |pointer: &str, why: &str| RangeError::BadOptions {
        pointer: pointer.to_string(),
        why: why.to_string(),
    };
    let map = match options {
        Value::Null => return Ok(base.clone()),
        Value::Object(m) => m,
        _ => return Err(bad("", "options must be null or an object")),
    };
    for k in map.keys() {
        if k != "preset" && k != "params" {
            return Err(bad(
                &format!("/{k}"),
                "unknown option (known: preset, params)",
            ));
        }
    }
    let mut params = match map.get("preset") {
        None | Some(Value::Null) => base.clone(),
        Some(Value::String(p)) => Params::new(base.scenario).with_preset(p)?,
        Some(_) => return Err(bad("/preset", "must be a string")),
    };
    match map.get("params") {
        None | Some(Value::Null) => {}
        Some(Value::Object(over)) => {
            if over.contains_key("scenario") {
                return Err(bad(
                    "/params/scenario",
                    "the scenario is fixed by the env id",
                ));
            }
            let mut json = serde_json::to_value(&params).expect("params serialise");
            let over = to_json(&Value::Object(over.clone()))
                .ok_or_else(|| bad("/params", "numbers must be finite and fit 64 bits"))?;
            merge(&mut json, &over);
            params = serde_json::from_value(json).map_err(|e| bad("/params", &e.to_string()))?;
        }
        Some(_) => return Err(bad("/params", "must be an object")),
    }
    params.validate()?;
    Ok(params)
}

fn merge(into: &mut serde_json::Value, over: &serde_json::Value) {
    match (into, over) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                    _ => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// Converts lockstep actions to the core's joint action. A missing agent sleeps; anything
/// that is not a two-entry multi-discrete action is an error.
pub fn joint_from_actions(actions: &Actions) -> Result<JointAction, RangeError> {
    let mut j = JointAction::default();
    for (name, act) in actions {
        let Some(a) = AGENTS.iter().position(|n| n == name) else {
            return Err(RangeError::BadAction {
                agent: name.clone(),
                why: "no such agent".into(),
            });
        };
        match act {
            Action::MultiDiscrete(v) if v.len() == 2 => {
                j.0[a] = AgentAction {
                    kind: v[0],
                    target: v[1],
                }
            }
            _ => {
                return Err(RangeError::BadAction {
                    agent: name.clone(),
                    why: "expected a multi-discrete action [type, target]".into(),
                })
            }
        }
    }
    Ok(j)
}

impl Env for RangeEnv {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64, options: &Value) -> Result<&Transition, EnvError> {
        let params =
            params_from_options(&self.base, options).map_err(|e| EnvError::new(e.to_string()))?;
        self.reset_with(seed, params)
            .map_err(|e| EnvError::new(e.to_string()))
    }

    /// The next seed of the chain the last seed started (seed 0's chain before any reset):
    /// a training loop's `reset()` gives a new episode, and the same one on every instance.
    fn reset_unseeded(&mut self, options: &Value) -> Option<Result<&Transition, EnvError>> {
        let seed = lockstep::seed::SeedTree::new(self.last_seed.unwrap_or(0)).continued();
        Some(self.reset(seed, options))
    }

    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError> {
        let joint = joint_from_actions(actions).map_err(|e| EnvError::new(e.to_string()))?;
        self.step_joint(&joint)
    }

    fn state(&mut self) -> Result<Value, EnvError> {
        let json = serde_json::to_value(&self.state).map_err(|e| EnvError::new(e.to_string()))?;
        Ok(from_json(&json))
    }
}
