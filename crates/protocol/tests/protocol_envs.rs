//! Real Gymnasium and PettingZoo envs served by the Python adapter: same seed, same episode
//! (in one child and across children with different `PYTHONHASHSEED`), other seed, other
//! episode; `state()` is JSON. These tests are how the determinism of each env was found out.

mod protocol_common;

use std::process::Command;

use lockstep::env::{Env, EnvFactory, Space};
use lockstep_canon::Value;
use protocol_common::{factory, first_difference, python, require, rollout};

/// Rolls `args` out: seed 11 twice in one child, seed 12 in it, seed 11 in a second child.
fn check_deterministic(args: &[&str], max_steps: usize) {
    let f = factory(args);
    let mut a = f.make().expect("first child starts");
    let first = rollout(a.as_mut(), 11, max_steps)
        .map_err(|(_, e)| e)
        .unwrap();
    let again = rollout(a.as_mut(), 11, max_steps)
        .map_err(|(_, e)| e)
        .unwrap();
    let other = rollout(a.as_mut(), 12, max_steps)
        .map_err(|(_, e)| e)
        .unwrap();
    a.close().unwrap();
    let mut b = f.spawn_other_process().expect("second child starts");
    let elsewhere = rollout(&mut b, 11, max_steps).map_err(|(_, e)| e).unwrap();
    b.close().unwrap();

    assert!(
        first.transitions.len() > 10,
        "{args:?}: episode too short to tell"
    );
    assert_eq!(
        first_difference(&first.transitions, &again.transitions),
        None,
        "{args:?}: same seed, same child"
    );
    assert_eq!(
        first_difference(&first.transitions, &elsewhere.transitions),
        None,
        "{args:?}: same seed, another child (another PYTHONHASHSEED)"
    );
    let d = first_difference(&first.transitions, &other.transitions)
        .unwrap_or_else(|| panic!("{args:?}: seeds 11 and 12 gave the same episode"));
    assert_eq!(
        d.step, 0,
        "{args:?}: another seed differs from the reset on"
    );

    // state() is JSON of the env's attributes, its RNG among them (Gymnasium keeps it in
    // `_np_random`, PettingZoo envs in `np_random`); the same seed gives the same starting state.
    let state = &first.state_after_reset;
    assert!(
        ["_np_random", "np_random"]
            .iter()
            .any(|k| matches!(state.get(k), Some(Value::Object(_)))),
        "{args:?}: {state:?}"
    );
    assert_eq!(state, &again.state_after_reset);
    assert_eq!(state, &elsewhere.state_after_reset);
    assert_ne!(state, &other.state_after_reset);
}

#[test]
fn cartpole_is_deterministic() {
    require(&["gymnasium"]);
    check_deterministic(&["gymnasium", "CartPole-v1"], 500);
}

#[test]
fn acrobot_is_deterministic() {
    require(&["gymnasium"]);
    check_deterministic(&["gymnasium", "Acrobot-v1"], 200);
}

#[test]
fn pendulum_box_actions_are_deterministic() {
    require(&["gymnasium"]);
    let f = factory(&["gymnasium", "Pendulum-v1"]);
    let env = f.make().unwrap();
    assert!(matches!(
        &env.spec().agents[0].action_space,
        Space::Box { dtype, shape, .. } if dtype == "float32" && shape == &[1]
    ));
    drop(env);
    check_deterministic(&["gymnasium", "Pendulum-v1"], 200);
}

#[test]
fn mountain_car_is_deterministic() {
    require(&["gymnasium"]);
    check_deterministic(&["gymnasium", "MountainCar-v0"], 200);
}

#[test]
fn pettingzoo_simple_spread_is_deterministic() {
    require(&["pettingzoo", "mpe2"]);
    let f = factory(&["pettingzoo", "mpe2.simple_spread_v3"]);
    let env = f.make().unwrap();
    let names: Vec<_> = env.spec().agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["agent_0", "agent_1", "agent_2"]);
    drop(env);
    // Each agent's `action` keeps the last step's action after reset, overwritten before any
    // use by the next step (docs/findings.md): not starting state.
    check_deterministic(
        &[
            "pettingzoo",
            "mpe2.simple_spread_v3",
            "--exclude",
            "/world/agents/*/action",
        ],
        100,
    );
}

/// The bytes lockstep receives are the bytes Python holds: no float is re-formatted.
#[test]
fn cartpole_observation_bytes_match_plain_python() {
    require(&["gymnasium"]);
    let script = "import gymnasium as g, struct\n\
                  e = g.make('CartPole-v1')\n\
                  o, _ = e.reset(seed=5)\n\
                  print(o.tobytes().hex())\n\
                  o, r, *_ = e.step(1)\n\
                  print(o.tobytes().hex(), struct.pack('<d', float(r)).hex())\n";
    let out = Command::new(python())
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();

    let mut env = factory(&["gymnasium", "CartPole-v1"]).make().unwrap();
    let t = env.reset(5, &Value::Null).unwrap();
    assert_eq!(
        hex::encode(t.agents["agent"].obs["obs"].to_le_bytes()),
        lines[0]
    );
    let mut actions = lockstep::env::Actions::new();
    actions.insert("agent".into(), lockstep::env::Action::Discrete(1));
    let t = env.step(&actions).unwrap();
    let step = &t.agents["agent"];
    let want: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(hex::encode(step.obs["obs"].to_le_bytes()), want[0]);
    assert_eq!(hex::encode(step.reward.to_le_bytes()), want[1]);
    env.close().unwrap();
}

/// A Dict observation becomes one key per entry; a Discrete entry an int64 array of one.
#[test]
fn dict_and_discrete_observations_become_keys() {
    require(&["gymnasium"]);
    let mut env = factory(&["factory", "lockstep_adapter.testing:walker"])
        .make()
        .unwrap();
    let spec = env.spec().clone();
    let keys: Vec<_> = spec.agents[0].observation_space.keys().collect();
    assert_eq!(keys, ["pos", "tick"]);
    let t = env.reset(1, &Value::Null).unwrap();
    let obs = &t.agents["agent"].obs;
    assert_eq!(obs["pos"].dtype(), lockstep::env::DType::F64);
    assert_eq!(obs["tick"].dtype(), lockstep::env::DType::I64);
    assert_eq!(obs["tick"].shape(), &[1]);
    env.close().unwrap();
}

/// `--state` serves the contracted state and declares its fields in the handshake.
#[test]
fn custom_state_function_and_contract() {
    require(&["gymnasium"]);
    let f = factory(&[
        "factory",
        "lockstep_adapter.testing:walker",
        "--state",
        "lockstep_adapter.testing:walker_state",
    ]);
    let mut env = f.spawn().unwrap();
    let fields = env.contract().fields.clone().unwrap();
    assert_eq!(fields, ["pos", "rng", "t", "tick"]);
    env.reset(3, &Value::Null).unwrap();
    let state = env.state().unwrap();
    let keys: Vec<_> = state.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, fields);
    // The PCG64 state is a 128-bit integer: it arrives exact, not as a float.
    assert!(matches!(
        state.pointer("/rng/state/state"),
        Some(Value::Number(lockstep_canon::Number::BigInt(_)))
    ));
    env.close().unwrap();
}
