use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lockstep_canon::Value;

use super::*;
use crate::check::CheckKind;
use crate::env::{
    Actions, AgentSpec, AgentStep, Array, ArrayData, Env, EnvError, EnvSpec, Space, Transition,
};

fn one_agent_spec(id: &str) -> EnvSpec {
    EnvSpec {
        id: id.into(),
        config: Value::Null,
        agents: vec![AgentSpec {
            name: "a".into(),
            action_space: Space::Discrete { n: 2, start: 0 },
            observation_space: std::collections::BTreeMap::new(),
        }],
    }
}

fn one_agent_transition(x: f64) -> Transition {
    let mut t = Transition::default();
    let obs = [(
        "x".to_string(),
        Array::new(&[1], ArrayData::F64(vec![x])).unwrap(),
    )]
    .into_iter()
    .collect();
    t.agents.insert(
        "a".into(),
        AgentStep {
            obs,
            reward: 0.0,
            terminated: false,
            truncated: false,
            info: Value::Null,
        },
    );
    t
}

fn read(kind: &str, source: &str, line: u64, episode: u64, step: u64) -> SourceRead {
    SourceRead {
        episode,
        step,
        kind: kind.into(),
        source: source.into(),
        via: None,
        what: format!("{kind} words"),
        file: Some("/nowhere/envs/grid.py".into()),
        line: Some(line),
        function: Some("step".into()),
        count: 1,
        before: None,
        after: None,
    }
}

#[test]
fn reads_at_one_site_are_counted_once_with_the_first_step() {
    let reads = [
        read("clock", "time.time()", 7, 0, 2),
        read("clock", "time.time()", 7, 0, 1),
        read("clock", "time.time()", 9, 0, 1),
    ];
    let s = sites(CheckKind::SameSeed, &reads, 1);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s[0].site.as_deref(), Some("/nowhere/envs/grid.py:7"));
    assert_eq!((s[0].count, s[0].first.as_str()), (2, "step 1"));
    assert!(s[0].at_divergence);
}

#[test]
fn a_shared_rng_explains_the_interleaved_check_before_an_earlier_clock() {
    let reads = [
        read("clock", "time.time()", 3, 0, 0),
        read("shared_rng", "random.random()", 42, 0, 1),
    ];
    let s = sites(CheckKind::Interleaved, &reads, 1);
    assert_eq!(s[0].source, "random.random()");
    assert_eq!(
        s[0].sentence(),
        "/nowhere/envs/grid.py:42 in step: random.random(), shared_rng words"
    );
    // The same reads explain a fresh process by the clock instead.
    let s = sites(CheckKind::OtherProcess, &reads, 1);
    assert_eq!(s[0].source, "time.time()");
}

#[test]
fn a_shared_state_change_is_shown_before_and_after() {
    let mut r = read("shared_state", "FirstSeedWins._levels", 10, 0, 0);
    r.before = Some(serde_json::json!({}));
    r.after = Some(serde_json::json!({"layout": 684}));
    let s = sites(CheckKind::Interleaved, &[r], 0);
    assert_eq!(s[0].change.as_deref(), Some("{} -> {\"layout\": 684}"));
    assert!(
        s[0].line().ends_with("(1 call changed it, first at reset)"),
        "{}",
        s[0].line()
    );
}

#[test]
fn paths_are_shown_from_the_working_directory_or_the_package() {
    let cwd = std::path::Path::new("/work/proj");
    assert_eq!(
        display_path("/work/proj/envs/grid.py", Some(cwd)),
        "envs/grid.py"
    );
    assert_eq!(
        display_path("/v/lib/python3.11/site-packages/pettingzoo/x.py", Some(cwd)),
        "site-packages/pettingzoo/x.py"
    );
    assert_eq!(
        display_path("/elsewhere/a.py", Some(cwd)),
        "/elsewhere/a.py"
    );
}

/// An env whose step observation is a process-wide counter (every instance advances it), and
/// whose tracer reports that read at its step: the interleaved check fails, and its cause is
/// the read the tracer reported, with the step it was first read at.
struct SharedCounter {
    spec: EnvSpec,
    t: Transition,
    counter: Arc<AtomicU64>,
    tracing: bool,
    pending: Vec<Value>,
    steps: u64,
    episode: u64,
    resets: u64,
}

impl SharedCounter {
    fn note(&mut self) {
        if self.tracing {
            let r = serde_json::json!({
                "episode": self.episode, "step": self.steps, "kind": "shared_rng",
                "source": "random.random()", "what": "the process-global RNG",
                "file": "/nowhere/shared.py", "line": 12, "function": "step", "count": 1
            });
            self.pending.push(lockstep_canon::to_value(&r).unwrap());
        }
    }
}

impl Env for SharedCounter {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }
    fn reset(&mut self, _seed: u64, _options: &Value) -> Result<&Transition, EnvError> {
        self.episode = self.resets;
        self.resets += 1;
        self.steps = 0;
        self.t = one_agent_transition(0.0);
        Ok(&self.t)
    }
    fn step(&mut self, _actions: &Actions) -> Result<&Transition, EnvError> {
        self.steps += 1;
        self.note();
        let v = self.counter.fetch_add(1, Ordering::Relaxed);
        self.t = one_agent_transition(v as f64);
        Ok(&self.t)
    }
    fn state(&mut self) -> Result<Value, EnvError> {
        Ok(Value::Null)
    }
    fn trace_sources(&mut self, on: bool) -> Result<bool, EnvError> {
        self.tracing = on;
        Ok(true)
    }
    fn traced_sources(&mut self) -> Result<Vec<Value>, EnvError> {
        Ok(std::mem::take(&mut self.pending))
    }
}

#[test]
fn a_failed_check_is_explained_by_the_reads_of_its_re_run() {
    let counter = Arc::new(AtomicU64::new(0));
    let make = {
        let counter = Arc::clone(&counter);
        move || -> Result<Box<dyn Env>, EnvError> {
            Ok(Box::new(SharedCounter {
                spec: one_agent_spec("shared-counter"),
                t: Transition::default(),
                counter: Arc::clone(&counter),
                tracing: false,
                pending: Vec::new(),
                steps: 0,
                episode: 0,
                resets: 0,
            }))
        }
    };
    let factory = ("shared-counter".to_string(), make);
    let cfg = CheckConfig::new(3, 5);
    let outcome = run_check(CheckKind::Interleaved, &factory, &cfg, None).unwrap();
    assert!(!outcome.passed, "{}", outcome.summary);
    let cause = explain(CheckKind::Interleaved, &factory, &cfg, &outcome).expect("a cause");
    assert_eq!(
        cause.headline,
        "cause: /nowhere/shared.py:12 in step: random.random(), the process-global RNG"
    );
    assert!(
        cause.traced.contains("re-run to step 1"),
        "{}",
        cause.traced
    );
    assert_eq!(cause.sources.len(), 1);
    assert!(cause.sources[0].at_divergence);
}

#[test]
fn an_env_without_a_tracer_gets_no_cause() {
    let factory = crate::fixtures::factory("fixture:global-rng").unwrap();
    let cfg = CheckConfig::new(0, 20);
    let outcome = run_check(CheckKind::Interleaved, &factory, &cfg, None).unwrap();
    assert!(!outcome.passed);
    assert_eq!(
        explain(CheckKind::Interleaved, &factory, &cfg, &outcome),
        None
    );
}
