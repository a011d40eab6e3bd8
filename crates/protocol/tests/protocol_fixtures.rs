//! Deliberately broken Python envs (python/lockstep_adapter/testing.py) served by the adapter:
//! each bug is caught by the comparison that should catch it and located at its step, agent
//! and key. A correct env of the same family is the control.

mod protocol_common;

use lockstep::env::{Env, EnvFactory};
use lockstep_canon::Value;
use lockstep_protocol::ProcessEnvFactory;
use protocol_common::{adapter_argv, first_difference, options, require, rollout, Divergence};

fn walker(bug: Option<&str>, extra: &[&str]) -> ProcessEnvFactory {
    let kwargs = match bug {
        Some(b) => format!("{{\"bug\": \"{b}\"}}"),
        None => "{}".to_string(),
    };
    let mut args = vec![
        "factory",
        "lockstep_adapter.testing:walker",
        "--kwargs",
        kwargs.as_str(),
    ];
    args.extend_from_slice(extra);
    ProcessEnvFactory::new(adapter_argv(&args), options())
}

fn at(step: usize, key: &str) -> Option<Divergence> {
    Some(Divergence {
        step,
        agent: "agent".to_string(),
        key: key.to_string(),
    })
}

/// Same seed twice in one child.
fn same_child(f: &ProcessEnvFactory) -> Option<Divergence> {
    let mut env = f.make().unwrap();
    let a = rollout(env.as_mut(), 5, 60).map_err(|(_, e)| e).unwrap();
    let b = rollout(env.as_mut(), 5, 60).map_err(|(_, e)| e).unwrap();
    env.close().unwrap();
    first_difference(&a.transitions, &b.transitions)
}

/// Same seed in an instance and in a child as the other-process check starts it (the factory
/// gives them PYTHONHASHSEED 0 and 1).
fn two_children(f: &ProcessEnvFactory) -> Option<Divergence> {
    let mut x = f.make().unwrap();
    let mut y = f.spawn_other_process().unwrap();
    let a = rollout(x.as_mut(), 5, 60).map_err(|(_, e)| e).unwrap();
    let b = rollout(&mut y, 5, 60).map_err(|(_, e)| e).unwrap();
    first_difference(&a.transitions, &b.transitions)
}

#[test]
fn correct_walker_replays_everywhere() {
    require(&["gymnasium"]);
    let f = walker(None, &[]);
    assert_eq!(same_child(&f), None);
    assert_eq!(two_children(&f), None);
}

#[test]
fn global_numpy_rng_is_caught_at_step_1() {
    require(&["gymnasium"]);
    assert_eq!(
        same_child(&walker(Some("global_rng"), &[])),
        at(1, "obs/pos")
    );
}

#[test]
fn state_kept_across_reset_is_caught_at_the_reset() {
    require(&["gymnasium"]);
    let f = walker(Some("leaky_reset"), &["--fields", "tick"]);
    // A fresh child hides it: each child's first episode starts clean.
    assert_eq!(two_children(&f), None);
    assert_eq!(same_child(&f), at(0, "obs/tick"));
    // The declared field shows it in the starting state too.
    let mut env = f.make().unwrap();
    let a = rollout(env.as_mut(), 5, 60).map_err(|(_, e)| e).unwrap();
    let b = rollout(env.as_mut(), 5, 60).map_err(|(_, e)| e).unwrap();
    let d = lockstep::diff::diff(&a.state_after_reset, &b.state_after_reset);
    assert_eq!(d.different_fields, ["tick"]);
}

#[test]
fn wall_clock_in_info_is_caught_at_step_1() {
    require(&["gymnasium"]);
    assert_eq!(same_child(&walker(Some("wall_clock"), &[])), at(1, "info"));
}

#[test]
fn set_iteration_order_is_caught_across_processes_at_step_5() {
    require(&["gymnasium"]);
    let f = walker(Some("hash_seed"), &[]);
    // One process has one hash salt: it replays there...
    assert_eq!(same_child(&f), None);
    // ...and not in a process with another PYTHONHASHSEED.
    assert_eq!(two_children(&f), at(5, "info"));
}

#[test]
fn late_divergence_is_caught_at_step_40() {
    require(&["gymnasium"]);
    assert_eq!(same_child(&walker(Some("late"), &[])), at(40, "obs/pos"));
}

/// An exception in the env is answered `ok: false`: an error naming the step and the Python
/// exception, and the child stays usable.
#[test]
fn an_exception_in_the_env_is_an_error_that_keeps_the_child() {
    require(&["gymnasium"]);
    let mut env = walker(Some("raises"), &[]).spawn().unwrap();
    let (episode, err) = rollout(&mut env, 5, 60).unwrap_err();
    assert_eq!(episode.transitions.len(), 2, "reset and step 1 were kept");
    assert_eq!(env.steps(), 1);
    let msg = err.to_string();
    assert!(msg.contains("step 2"), "{msg}");
    assert!(msg.contains("ValueError: walker: refusing step 2"), "{msg}");
    assert!(msg.contains("traceback"), "{msg}");
    assert!(env.reset(5, &Value::Null).is_ok());
    env.close().unwrap();
}
