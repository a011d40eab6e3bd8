//! Issue 10 item 1: instances of one `lockstep/2` child stepped at the same time. The Python
//! adapter runs each instance on its own thread (handshake `"threads": true`) and lockstep
//! lets the parallel check's threads have requests to different instances in flight at once,
//! each answer matched to its request by id.

mod protocol_common;

use lockstep::check::{run_check, CheckConfig, CheckKind};
use lockstep::env::{ArrayData, EnvFactory};
use lockstep_canon::Value;
use lockstep_protocol::{ProcessEnvFactory, ProcessOptions};
use protocol_common::{adapter_argv, module_argv, options, options_with_timeout, require};

fn walker(bug: &str, options: ProcessOptions) -> ProcessEnvFactory {
    ProcessEnvFactory::new(
        adapter_argv(&[
            "factory",
            "lockstep_adapter.testing:walker",
            "--kwargs",
            &format!("{{\"bug\": \"{bug}\"}}"),
        ]),
        options,
    )
}

fn obs(t: &lockstep::env::Transition) -> f32 {
    match t.agents["agent"].obs["obs"].data() {
        ArrayData::F32(v) => v[0],
        other => panic!("{other:?}"),
    }
}

/// A raw child that answers two requests only once both are in flight, the later first: a
/// client sending one request at a time would hang (and fail on the 5 s timeout); each
/// instance must get its own answers (`10 * t + instance`).
#[test]
fn answers_out_of_request_order_reach_their_instances() {
    let f = ProcessEnvFactory::new(
        module_argv("lockstep_adapter.faults", &["reversed"]),
        options_with_timeout(std::time::Duration::from_secs(5)),
    );
    let session = f.session();
    let envs = [session.make().unwrap(), session.make().unwrap()];
    std::thread::scope(|s| {
        for (i, mut env) in envs.into_iter().enumerate() {
            s.spawn(move || {
                let t = env.reset(1, &Value::Null).unwrap();
                assert_eq!(obs(t), i as f32, "instance {i}: reset");
                for step in 1..=20 {
                    let actions = [("agent".to_string(), lockstep::env::Action::Discrete(0))];
                    let t = env.step(&actions.into()).unwrap();
                    assert_eq!(obs(t), (10 * step + i) as f32, "instance {i}: step {step}");
                }
                env.close().unwrap();
            });
        }
    });
    assert_eq!(f.children_started(), 1);
}

/// With several requests in flight, an answer carrying an id that no request has is a
/// protocol fault of the child, which ends it for every instance.
#[test]
fn an_answer_to_no_request_in_flight_is_a_fault() {
    let f = ProcessEnvFactory::new(
        module_argv("lockstep_adapter.faults", &["stray_id", "2"]),
        options_with_timeout(std::time::Duration::from_secs(5)),
    );
    let session = f.session();
    let mut a = session.make().unwrap();
    let mut b = session.make().unwrap();
    a.reset(1, &Value::Null).unwrap();
    b.reset(1, &Value::Null).unwrap();
    let actions: lockstep::env::Actions =
        [("agent".to_string(), lockstep::env::Action::Discrete(0))].into();
    a.step(&actions).unwrap();
    let e = a.step(&actions).unwrap_err().to_string();
    assert!(e.contains("step 2") && e.contains("carries id"), "{e}");
    let e = b.step(&actions).unwrap_err().to_string();
    assert!(e.contains("already failed"), "{e}");
}

/// A race inside one step: each step stages its position in a module-level buffer, releases
/// the GIL, and reads it back. Instances taking turns (the interleaved check, or the
/// parallel check with one request at a time) never see it; instances stepped at the same
/// time on their own threads do, and the parallel check localises it to `pos`.
#[test]
fn a_race_inside_a_step_fails_only_the_parallel_check_with_instances_at_once() {
    require(&["gymnasium"]);
    let cfg = CheckConfig::new(5, 60);
    let f = walker("shared_scratch", options());
    let session = f.session();
    for kind in [CheckKind::SameSeed, CheckKind::Interleaved] {
        let o = run_check(kind, &session, &cfg, Some(&f)).unwrap();
        assert!(o.passed, "{kind:?}: {}", o.summary);
    }
    let o = run_check(CheckKind::ParallelWorkers, &session, &cfg, Some(&f)).unwrap();
    assert!(!o.passed, "{}", o.summary);
    let d = o.divergence.expect("a failure carries its divergence");
    assert_eq!(
        (d.agent().unwrap_or(""), d.key()),
        ("agent", "pos"),
        "{}",
        o.summary
    );
    drop(session);
    // One child for the session's instances; each seed alone in a fresh one, per check.
    assert_eq!(f.children_started(), 1 + 3 + 4);

    let serial = walker(
        "shared_scratch",
        ProcessOptions {
            concurrent_instances: false,
            ..options()
        },
    );
    let session = serial.session();
    let o = run_check(CheckKind::ParallelWorkers, &session, &cfg, Some(&serial)).unwrap();
    assert!(o.passed, "one request at a time: {}", o.summary);
}
