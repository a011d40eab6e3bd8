//! A correct environment that passes every replay check, and faulty variants that a check must
//! catch: the canaries that prove the checks work (TigerBeetle keeps a fuzzer that must fail).
//!
//! The correct fixture is a small two-agent grid world (`blue`, `red`, 8x8 cells): each agent
//! moves (discrete 4, with an `action_mask`), marks the cells it has seen, spends a seeded amount
//! of energy per step and terminates when it runs out; the episode is truncated at `max_steps`.
//! Observations cover every dtype (`action_mask` int8, `energy` float64, `hosts` uint8, `noise`
//! float32, `pos` int32, `seen` bool, `tick` int64), infos are JSON objects and every step logs
//! lines with simulated timestamps. All randomness comes from the seed tree.
//!
//! Each faulty variant breaks one determinism rule of DESIGN.md, the way real environments do,
//! and is caught at a known place (first divergence: step, agent, key):
//!
//! | name | fault | caught by | first divergence |
//! |---|---|---|---|
//! | `fixture:global-rng` | `noise` from a process-global RNG reseeded at reset | interleaved, parallel | step 1, `blue`, `noise` (parallel: step 0 or 1, threads race) |
//! | `fixture:wall-clock` | a heartbeat log line holds the wall clock | same, interleaved, process, parallel | step 5, logs line 2 |
//! | `fixture:hash-order` | `hosts` in `HashMap` iteration order (random per map) | same, interleaved, process, parallel | step 0, `blue`, `hosts` |
//! | `fixture:sticky-cache` | reset keeps the `seen` cache of the last episode | same (rollouts on one instance) | step 0, `blue`, `seen` |
//! | `fixture:stale-info` | reset keeps `episode_return`, shown in the info | same (rollouts on one instance) | step 1, `blue`, info `/episode_return` |
//! | `fixture:late-divergence` | after step 50, `tick` reads a process-global step counter | same, interleaved, parallel (process: once the parent has stepped it) | step 51, `blue`, `tick` |
//! | `fixture:seedless` | ignores the seed | other seed | none: seeds give the same episode |
//! | `fixture:drift` | rewards doubled from step 20: deterministic, but not the recorded dynamics | golden verify against `fixture` | step 20, `blue`, reward |

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use lockstep_canon::{Map, Number, Value};

use crate::clock;
use crate::env::{
    Action, Actions, AgentSpec, AgentStep, Array, ArrayData, DType, Env, EnvError, EnvFactory,
    EnvSpec, Space, Transition,
};
use crate::seed::{SeedTree, Stream};

/// Every fixture name, the correct one first.
pub const NAMES: &[&str] = &[
    "fixture",
    "fixture:global-rng",
    "fixture:wall-clock",
    "fixture:hash-order",
    "fixture:sticky-cache",
    "fixture:stale-info",
    "fixture:late-divergence",
    "fixture:seedless",
    "fixture:drift",
];

const GRID: i32 = 8;
const CELLS: usize = (GRID * GRID) as usize;
const AGENTS: [&str; 2] = ["blue", "red"];
const NOISE: usize = 6;
const HOSTS: [&str; 16] = [
    "auth-01",
    "backup-01",
    "build-02",
    "db-01",
    "db-02",
    "dc-01",
    "dns-01",
    "files-01",
    "hr-03",
    "mail-01",
    "proxy-01",
    "siem-01",
    "vpn-01",
    "web-01",
    "web-02",
    "wiki-01",
];
/// Default truncation step.
pub const MAX_STEPS: u64 = 150;

/// Which rule a fixture breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    None,
    GlobalRng,
    WallClock,
    HashOrder,
    StickyCache,
    StaleInfo,
    LateDivergence,
    Seedless,
    Drift,
}

impl Fault {
    pub const ALL: [Fault; 9] = [
        Fault::None,
        Fault::GlobalRng,
        Fault::WallClock,
        Fault::HashOrder,
        Fault::StickyCache,
        Fault::StaleInfo,
        Fault::LateDivergence,
        Fault::Seedless,
        Fault::Drift,
    ];

    /// The registered env name (`fixture`, `fixture:global-rng`, ...).
    pub fn env_name(self) -> &'static str {
        NAMES[self as usize]
    }

    pub fn from_env_name(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.env_name() == name)
    }

    fn label(self) -> &'static str {
        match self {
            Fault::None => "none",
            _ => &self.env_name()["fixture:".len()..],
        }
    }
}

/// A factory of fixture instances.
#[derive(Debug, Clone, Copy)]
pub struct FixtureFactory {
    pub fault: Fault,
    pub max_steps: u64,
}

impl EnvFactory for FixtureFactory {
    fn id(&self) -> String {
        self.fault.env_name().to_string()
    }
    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        Ok(Box::new(Fixture::new(self.fault, self.max_steps)))
    }
}

/// The factory registered under `name` (see [`NAMES`]).
pub fn factory(name: &str) -> Option<FixtureFactory> {
    Fault::from_env_name(name).map(|fault| FixtureFactory {
        fault,
        max_steps: MAX_STEPS,
    })
}

/// Deliberately wrong (fault `global-rng`): one generator for every instance in the process.
static GLOBAL_RNG: Mutex<u64> = Mutex::new(0);
/// Deliberately wrong (fault `late-divergence`): counts steps of every instance in the process.
static GLOBAL_STEPS: AtomicU64 = AtomicU64::new(0);

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Debug, Clone, Default)]
struct Agent {
    x: i32,
    y: i32,
    energy: f64,
    episode_return: f64,
    new_cells: i64,
    seen: Vec<u8>,
    done: bool,
}

/// The fixture environment (see the module doc).
pub struct Fixture {
    fault: Fault,
    spec: EnvSpec,
    max_steps: u64,
    step: u64,
    seed: u64,
    agents: [Agent; 2],
    streams: Vec<Stream>,
    world: Stream,
    t: Transition,
}

impl Fixture {
    pub fn new(fault: Fault, max_steps: u64) -> Fixture {
        let mut config = Map::new();
        config.insert("fault".into(), Value::String(fault.label().into()));
        config.insert("grid".into(), Value::Number(Number::Int(GRID.into())));
        config.insert(
            "max_steps".into(),
            Value::Number(Number::Int(max_steps as i64)),
        );
        let boxed = |dtype: DType, shape: &[usize], lo: f64, hi: f64| {
            let n: usize = shape.iter().product();
            Space::Box {
                dtype: dtype.name().into(),
                shape: shape.to_vec(),
                low: vec![lo; n],
                high: vec![hi; n],
            }
        };
        let observation_space: BTreeMap<String, Space> = [
            ("action_mask", boxed(DType::I8, &[4], 0.0, 1.0)),
            ("energy", boxed(DType::F64, &[1], 0.0, 1.0)),
            ("hosts", boxed(DType::U8, &[HOSTS.len()], 0.0, 255.0)),
            ("noise", boxed(DType::F32, &[NOISE], 0.0, 1.0)),
            ("pos", boxed(DType::I32, &[2], 0.0, f64::from(GRID - 1))),
            (
                "seen",
                boxed(DType::Bool, &[GRID as usize, GRID as usize], 0.0, 1.0),
            ),
            ("tick", boxed(DType::I64, &[1], 0.0, f64::INFINITY)),
        ]
        .into_iter()
        .map(|(k, s)| (k.to_string(), s))
        .collect();
        let agents = AGENTS
            .iter()
            .map(|name| AgentSpec {
                name: name.to_string(),
                action_space: Space::Discrete { n: 4, start: 0 },
                observation_space: observation_space.clone(),
            })
            .collect();
        Fixture {
            fault,
            spec: EnvSpec {
                id: fault.env_name().into(),
                config: Value::Object(config),
                agents,
            },
            max_steps,
            step: 0,
            seed: 0,
            agents: Default::default(),
            streams: Vec::new(),
            world: SeedTree::new(0).stream("fixture/world"),
            t: Transition::default(),
        }
    }

    fn noise(&mut self, i: usize) -> Vec<f32> {
        if self.fault == Fault::GlobalRng {
            let mut g = GLOBAL_RNG.lock().unwrap_or_else(|e| e.into_inner());
            (0..NOISE)
                .map(|_| (splitmix(&mut g) >> 40) as f32 / (1u64 << 24) as f32)
                .collect()
        } else {
            (0..NOISE).map(|_| self.streams[i].f64() as f32).collect()
        }
    }

    fn timestamp(&mut self) -> String {
        let jitter = self.world.below(1000) as u32;
        clock::format_rfc3339_millis(clock::DEFAULT_EPOCH_UNIX + self.step as i64, jitter)
    }

    fn mask(a: &Agent) -> [i8; 4] {
        [
            i8::from(a.y > 0),
            i8::from(a.y < GRID - 1),
            i8::from(a.x > 0),
            i8::from(a.x < GRID - 1),
        ]
    }

    fn info(&self, i: usize) -> Value {
        let a = &self.agents[i];
        let int = |v: i64| Value::Number(Number::Int(v));
        let mut m = Map::new();
        m.insert(
            "cell".into(),
            Value::Array(vec![int(a.x.into()), int(a.y.into())]),
        );
        m.insert("new_cells".into(), int(a.new_cells));
        m.insert("step".into(), int(self.step as i64));
        if self.step > 0 {
            m.insert(
                "episode_return".into(),
                Value::Number(Number::Float(a.episode_return)),
            );
        }
        Value::Object(m)
    }

    fn hosts(&mut self) -> Vec<u8> {
        let values: Vec<u8> = HOSTS.iter().map(|_| self.world.below(256) as u8).collect();
        if self.fault == Fault::HashOrder {
            // Deliberately wrong: std's RandomState gives every map its own order.
            let map: HashMap<&str, u8> = HOSTS.iter().copied().zip(values).collect();
            map.values().copied().collect()
        } else {
            values
        }
    }

    fn heartbeat(&mut self) -> String {
        if self.fault == Fault::WallClock {
            // Deliberately wrong: this fixture leaks the wall clock into a log line so that the
            // same-seed and other-process checks have something to catch.
            #[allow(clippy::disallowed_methods)]
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            format!("heartbeat wall_ns={now}")
        } else {
            format!("heartbeat sim={}", self.timestamp())
        }
    }
}

fn arr(shape: &[usize], data: ArrayData) -> Array {
    Array::new(shape, data).expect("fixture shapes match their data")
}

impl Env for Fixture {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64, _options: &Value) -> Result<&Transition, EnvError> {
        self.seed = seed;
        // The seedless fault derives everything from a constant, as an env that ignores the
        // seed it is given does.
        let used = if self.fault == Fault::Seedless {
            0
        } else {
            seed
        };
        let tree = SeedTree::new(used);
        self.streams = AGENTS
            .iter()
            .map(|a| tree.stream(&format!("fixture/energy/{a}")))
            .collect();
        self.world = tree.stream("fixture/world");
        if self.fault == Fault::GlobalRng {
            *GLOBAL_RNG.lock().unwrap_or_else(|e| e.into_inner()) = seed;
        }
        self.step = 0;
        let hosts = self.hosts();
        let mut logs = vec![format!("{} reset seed={used}", self.timestamp())];
        self.t = Transition::default();
        for (i, &name) in AGENTS.iter().enumerate() {
            let x = self.world.below(GRID as u64) as i32;
            let y = self.world.below(GRID as u64) as i32;
            let keep_cache = self.fault == Fault::StickyCache && !self.agents[i].seen.is_empty();
            let a = &mut self.agents[i];
            a.x = x;
            a.y = y;
            a.energy = 1.0;
            a.new_cells = 0;
            a.done = false;
            if self.fault != Fault::StaleInfo {
                a.episode_return = 0.0;
            }
            if !keep_cache {
                a.seen = vec![0; CELLS];
            }
            a.seen[(y * GRID + x) as usize] = 1;
            let a = self.agents[i].clone();
            logs.push(format!("{} {name} at ({x},{y})", self.timestamp()));
            let noise = self.noise(i);
            let obs: BTreeMap<String, Array> = [
                (
                    "action_mask",
                    arr(&[4], ArrayData::I8(Fixture::mask(&a).to_vec())),
                ),
                ("energy", arr(&[1], ArrayData::F64(vec![a.energy]))),
                ("hosts", arr(&[HOSTS.len()], ArrayData::U8(hosts.clone()))),
                ("noise", arr(&[NOISE], ArrayData::F32(noise))),
                ("pos", arr(&[2], ArrayData::I32(vec![a.x, a.y]))),
                (
                    "seen",
                    arr(
                        &[GRID as usize, GRID as usize],
                        ArrayData::Bool(a.seen.clone()),
                    ),
                ),
                ("tick", arr(&[1], ArrayData::I64(vec![0]))),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            let info = self.info(i);
            self.t.agents.insert(
                name.to_string(),
                AgentStep {
                    obs,
                    reward: 0.0,
                    terminated: false,
                    truncated: false,
                    info,
                },
            );
        }
        self.t.logs = logs;
        Ok(&self.t)
    }

    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError> {
        if self.streams.is_empty() {
            return Err(EnvError::new("step before reset"));
        }
        self.step += 1;
        let step = self.step;
        let global = if self.fault == Fault::LateDivergence {
            GLOBAL_STEPS.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            step
        };
        let mut logs = Vec::new();
        for (i, &name) in AGENTS.iter().enumerate() {
            if self.agents[i].done {
                let s = self
                    .t
                    .agents
                    .get_mut(name)
                    .expect("reset inserted every agent");
                s.reward = 0.0;
                continue;
            }
            let action = match actions.get(name) {
                Some(Action::Discrete(a)) if (0..4).contains(a) => *a,
                Some(other) => {
                    return Err(EnvError::new(format!(
                        "agent {name}: action {other:?} is not in discrete(4)"
                    )))
                }
                None => return Err(EnvError::new(format!("agent {name}: no action"))),
            };
            let drain = self.streams[i].uniform(0.0, 0.01);
            let noise = self.noise(i);
            let a = &mut self.agents[i];
            let (nx, ny) = match action {
                0 => (a.x, a.y - 1),
                1 => (a.x, a.y + 1),
                2 => (a.x - 1, a.y),
                _ => (a.x + 1, a.y),
            };
            let moved = (0..GRID).contains(&nx) && (0..GRID).contains(&ny);
            if moved {
                a.x = nx;
                a.y = ny;
            }
            let cell = (a.y * GRID + a.x) as usize;
            let fresh = a.seen[cell] == 0;
            let mut reward = if fresh { 1.0 } else { 0.0 } - 0.01;
            if self.fault == Fault::Drift && step >= 20 {
                reward *= 2.0;
            }
            if fresh {
                a.seen[cell] = 1;
                a.new_cells += 1;
            }
            a.energy -= drain;
            a.episode_return += reward;
            let terminated = a.energy <= 0.0;
            a.done = terminated || step >= self.max_steps;
            let a = a.clone();
            let tick = if self.fault == Fault::LateDivergence && step > 50 {
                global as i64
            } else {
                step as i64
            };
            let ts = self.timestamp();
            logs.push(format!("{ts} {name} moved to ({},{})", a.x, a.y));
            let info = self.info(i);
            let s = self
                .t
                .agents
                .get_mut(name)
                .expect("reset inserted every agent");
            let obs = &mut s.obs;
            let mask = Fixture::mask(&a);
            if let Some(m) = obs.get_mut("action_mask") {
                let same = matches!(m.data(), ArrayData::I8(v) if v[..] == mask[..]);
                if !same {
                    *m.data_mut() = ArrayData::I8(mask.to_vec());
                }
            }
            if let Some(ArrayData::F64(v)) = obs.get_mut("energy").map(Array::data_mut) {
                v[0] = a.energy;
            }
            if let Some(ArrayData::F32(v)) = obs.get_mut("noise").map(Array::data_mut) {
                v.copy_from_slice(&noise);
            }
            if moved {
                if let Some(ArrayData::I32(v)) = obs.get_mut("pos").map(Array::data_mut) {
                    v.copy_from_slice(&[a.x, a.y]);
                }
            }
            if fresh {
                if let Some(ArrayData::Bool(v)) = obs.get_mut("seen").map(Array::data_mut) {
                    v[cell] = 1;
                }
            }
            if let Some(ArrayData::I64(v)) = obs.get_mut("tick").map(Array::data_mut) {
                v[0] = tick;
            }
            s.reward = reward;
            s.terminated = terminated;
            s.truncated = !terminated && step >= self.max_steps;
            s.info = info;
        }
        if step.is_multiple_of(5) {
            let line = self.heartbeat();
            logs.push(line);
        }
        self.t.logs = logs;
        Ok(&self.t)
    }

    fn state(&mut self) -> Result<Value, EnvError> {
        let int = |v: i64| Value::Number(Number::Int(v));
        let mut agents = Map::new();
        for (i, a) in self.agents.iter().enumerate() {
            let mut m = Map::new();
            m.insert(
                "cell".into(),
                Value::Array(vec![int(a.x.into()), int(a.y.into())]),
            );
            m.insert("energy".into(), Value::Number(Number::Float(a.energy)));
            m.insert(
                "episode_return".into(),
                Value::Number(Number::Float(a.episode_return)),
            );
            m.insert(
                "seen".into(),
                Value::Array(a.seen.iter().map(|&s| Value::Bool(s != 0)).collect()),
            );
            agents.insert(AGENTS[i].into(), Value::Object(m));
        }
        let mut m = Map::new();
        m.insert("agents".into(), Value::Object(agents));
        m.insert("seed".into(), int(self.seed as i64));
        m.insert("step".into(), int(self.step as i64));
        Ok(Value::Object(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{rollout, End, RolloutOptions};

    #[test]
    fn names_round_trip() {
        for f in Fault::ALL {
            assert_eq!(Fault::from_env_name(f.env_name()), Some(f));
            assert_eq!(factory(f.env_name()).unwrap().id(), f.env_name());
        }
        assert!(factory("fixture:nope").is_none());
    }

    #[test]
    fn episodes_end_by_truncation_or_energy() {
        let f = FixtureFactory {
            fault: Fault::None,
            max_steps: 30,
        };
        let mut env = f.make().unwrap();
        let r = rollout(env.as_mut(), 3, 500, &RolloutOptions::default()).unwrap();
        assert_eq!(r.trace.end, End::Done);
        assert_eq!(r.trace.step_digests.len(), 31);
        let last = r.trace.step_digests.last().unwrap();
        assert!(last.agents.values().all(|a| a.terminated || a.truncated));
    }

    #[test]
    fn step_before_reset_is_an_error() {
        let mut env = Fixture::new(Fault::None, 10);
        assert!(env.step(&Actions::new()).is_err());
    }
}
