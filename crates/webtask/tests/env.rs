//! The webtask env driven directly: its server (`lockstep-webtask-server`), the shared
//! Chromium, the probed starting state, the policy, the contamination and both resets.

use lockstep::env::{Action, Actions, Env};
use lockstep::probe::probe_state;
use lockstep_canon::Value;
use lockstep_webtask::{ResetMode, WebTask};

fn env(mode: ResetMode) -> WebTask {
    let server = std::ffi::OsString::from(env!("CARGO_BIN_EXE_lockstep-webtask-server"));
    WebTask::new(mode, &[server]).unwrap_or_else(|e| panic!("{e}"))
}

fn starting_state(e: &mut WebTask) -> Value {
    let contract = e.contract().unwrap();
    let own = e.state().unwrap();
    probe_state(&contract, e.probes().unwrap(), own).unwrap()
}

fn go() -> Actions {
    Actions::from([("agent".to_string(), Action::Discrete(0))])
}

#[test]
fn the_policy_clicks_the_target_then_the_leftovers_stay_or_go() {
    for (mode, seed) in [
        (ResetMode::Complete, 3),
        (ResetMode::Partial, 3),
        (ResetMode::Partial, 2),
    ] {
        let mut e = env(mode);
        e.reset(seed, &Value::Null).unwrap();
        let fresh = starting_state(&mut e);
        assert_eq!(fresh.pointer("/server/visits/1/count"), Some(&0.into()));
        assert_eq!(
            fresh.pointer("/server/task/1/target"),
            Some(&(if seed % 2 == 1 { "right" } else { "left" }).into())
        );
        assert_eq!(
            fresh.pointer("/client"),
            Some(&Value::Object(Default::default()))
        );
        let t = e.step(&go()).unwrap();
        let info = &t.agents["agent"].info;
        assert_eq!(
            info.get("success"),
            Some(&Value::Bool(true)),
            "{mode:?} {seed}"
        );
        assert_eq!(info.get("cached"), Some(&Value::Bool(false)));
        let dirty = starting_state(&mut e);
        assert_eq!(
            dirty.pointer("/server/visits/1/count"),
            Some(&8.into()),
            "one visit + 7"
        );
        assert_eq!(
            dirty.pointer("/browser/cookies/127.0.0.1/previous_run/value"),
            Some(&"true".into())
        );
        assert_eq!(
            dirty.pointer("/client/choice.json/json/side"),
            Some(&"left".into()),
            "flipped on odd seeds"
        );

        e.reset(seed, &Value::Null).unwrap();
        let again = starting_state(&mut e);
        let diff = lockstep::diff::diff(&fresh, &again);
        let repeat = e.step(&go()).unwrap().agents["agent"].info.clone();
        match mode {
            ResetMode::Complete => {
                assert_eq!(again, fresh);
                assert_eq!(repeat.get("success"), Some(&Value::Bool(true)));
            }
            ResetMode::Partial => {
                assert_eq!(diff.different_fields, ["client"]);
                assert_eq!(repeat.get("cached"), Some(&Value::Bool(true)));
                assert_eq!(
                    repeat.get("success"),
                    Some(&Value::Bool(seed % 2 == 0)),
                    "seed {seed}"
                );
            }
        }
        assert!(e.step(&go()).is_err(), "one step an episode");
    }
}

#[test]
fn instances_sharing_the_browser_never_see_each_other() {
    let mut a = env(ResetMode::Complete);
    let mut b = env(ResetMode::Complete);
    a.reset(0, &Value::Null).unwrap();
    b.reset(0, &Value::Null).unwrap();
    a.step(&go()).unwrap();
    let seen_by_b = starting_state(&mut b);
    assert_eq!(
        seen_by_b.pointer("/browser/cookies"),
        Some(&Value::Object(Default::default()))
    );
    assert_eq!(seen_by_b.pointer("/server/visits/1/count"), Some(&0.into()));
}
