//! Every way a child can fail is a clear error naming the request, the step and the child's
//! last stderr lines; the child is killed and reaped; what was gathered before is kept.
//! Fixtures: python/lockstep_adapter/faults.py (raw protocol) and testing.py (adapter).

mod protocol_common;

use std::time::Duration;

use lockstep::env::Env;
use lockstep_canon::Value;
use lockstep_protocol::{ProcessEnv, ProcessEnvFactory, ProcessOptions};
use protocol_common::{
    adapter_argv, module_argv, options, options_with_timeout, python, require, rollout,
};

fn faults(mode: &str, opts: &ProcessOptions) -> Result<ProcessEnv, lockstep::env::EnvError> {
    ProcessEnv::spawn(&module_argv("lockstep_adapter.faults", &[mode, "3"]), opts)
}

/// Rolls out until the fault and returns the error text, checking that the reset and the
/// steps before step 3 were kept.
fn fault_at_step_3(mode: &str, opts: &ProcessOptions) -> String {
    let mut env = faults(mode, opts).unwrap();
    let (episode, err) = rollout(&mut env, 1, 10).unwrap_err();
    assert_eq!(
        episode.transitions.len(),
        3,
        "{mode}: reset, step 1, step 2 kept"
    );
    assert_eq!(env.steps(), 2, "{mode}");
    let msg = err.to_string();
    assert!(msg.contains("step 3"), "{mode}: {msg}");
    assert!(
        msg.contains("faults: step 3"),
        "{mode}: stderr tail missing: {msg}"
    );
    // Every later call repeats the fault instead of talking to a dead child.
    let again = env.reset(1, &Value::Null).unwrap_err().to_string();
    assert!(again.contains("already failed"), "{again}");
    msg
}

#[test]
fn control_runs_clean() {
    let mut env = faults("ok", &options()).unwrap();
    let episode = rollout(&mut env, 1, 10).map_err(|(_, e)| e).unwrap();
    assert_eq!(episode.transitions.len(), 11);
    assert_eq!(episode.transitions[3].logs, ["t=3"]);
    assert_eq!(
        env.contract().fields.as_deref(),
        Some(&["t".to_string()][..])
    );
    env.close().unwrap();
}

#[test]
fn exit_at_start_names_status_and_stderr() {
    let err = faults("exit_at_start", &options())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("handshake"), "{err}");
    assert!(err.contains("exit status: 3"), "{err}");
    assert!(
        err.contains("faults: exiting before the handshake"),
        "{err}"
    );
}

#[test]
fn a_program_that_does_not_exist_is_an_error() {
    let argv = vec!["/nonexistent/lockstep-env".to_string()];
    let err = ProcessEnv::spawn(&argv, &options())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cannot start"), "{err}");
}

#[test]
fn wrong_protocol_version_is_named() {
    let err = faults("wrong_version", &options())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("lockstep/99") && err.contains("lockstep/1"),
        "{err}"
    );
}

#[test]
fn non_json_line() {
    let msg = fault_at_step_3("non_json", &options());
    assert!(
        msg.contains("not JSON") && msg.contains("this line is not JSON"),
        "{msg}"
    );
}

#[test]
fn oversize_message() {
    let opts = ProcessOptions {
        max_message_bytes: 1 << 20,
        ..options()
    };
    let msg = fault_at_step_3("oversize", &opts);
    assert!(
        msg.contains("longer than the limit of 1048576 bytes"),
        "{msg}"
    );
}

#[test]
fn missing_field() {
    let msg = fault_at_step_3("missing_field", &options());
    assert!(
        msg.contains("missing field `reward`") && msg.contains("/agents/agent"),
        "{msg}"
    );
}

#[test]
fn wrong_array_size() {
    let msg = fault_at_step_3("bad_array", &options());
    assert!(
        msg.contains("array data holds 4 bytes") && msg.contains("needs 8"),
        "{msg}"
    );
}

#[test]
fn exit_mid_episode() {
    let msg = fault_at_step_3("exit", &options());
    assert!(
        msg.contains("exit status: 0") || msg.contains("closed its stdout"),
        "{msg}"
    );
    assert!(msg.contains("faults: exiting mid-episode"), "{msg}");
}

#[test]
fn unrequested_line() {
    let mut env = faults("extra_line", &options()).unwrap();
    let (episode, err) = rollout(&mut env, 1, 10).unwrap_err();
    // Step 3 is answered (twice): the extra line is caught at step 4, whether it arrived
    // before step 4 was sent or was read as its answer (its id is step 3's).
    assert_eq!(episode.transitions.len(), 4);
    let msg = err.to_string();
    assert!(
        msg.contains("step 4") && msg.contains("no request asked for"),
        "{msg}"
    );
}

#[test]
fn crash_mid_episode_through_the_adapter() {
    require(&["gymnasium"]);
    let argv = adapter_argv(&[
        "factory",
        "lockstep_adapter.testing:walker",
        "--kwargs",
        r#"{"bug": "crash"}"#,
    ]);
    let mut env = ProcessEnvFactory::new(argv, options()).spawn().unwrap();
    let (episode, err) = rollout(&mut env, 1, 60).unwrap_err();
    assert_eq!(episode.transitions.len(), 5, "reset and steps 1-4 kept");
    let msg = err.to_string();
    assert!(msg.contains("step 5"), "{msg}");
    assert!(msg.contains("signal: 6"), "SIGABRT named: {msg}");
    assert!(msg.contains("walker: aborting at step 5"), "{msg}");
}

#[test]
fn hang_past_the_timeout_is_killed() {
    require(&["gymnasium"]);
    let argv = adapter_argv(&[
        "factory",
        "lockstep_adapter.testing:walker",
        "--kwargs",
        r#"{"bug": "hang"}"#,
    ]);
    let opts = options_with_timeout(Duration::from_secs(3));
    let mut env = ProcessEnvFactory::new(argv, opts).spawn().unwrap();
    let pid = env.pid();
    let (episode, err) = rollout(&mut env, 1, 60).unwrap_err();
    assert_eq!(episode.transitions.len(), 3);
    let msg = err.to_string();
    assert!(
        msg.contains("step 3") && msg.contains("no answer within 3 s"),
        "{msg}"
    );
    assert!(msg.contains("walker: sleeping at step 3"), "{msg}");
    // Killed and reaped: the pid is gone (no zombie left either).
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "child {pid} still exists"
    );
}

/// Dropping an env without close() ends its child.
#[test]
fn drop_reaps_the_child() {
    let env = faults("ok", &options()).unwrap();
    let pid = env.pid();
    drop(env);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}

/// Bytes that are not UTF-8, or a line that is JSON but not an object, never panic.
#[test]
fn garbage_output_is_an_error_not_a_panic() {
    for script in [
        "import sys; sys.stdout.buffer.write(b'\\xff\\xfe\\x00garbage\\n'); sys.stdout.flush()",
        "print('[1, 2, 3]', flush=True)",
        "print('{\"protocol\": \"lockstep/1\", \"agents\": 5}', flush=True)",
        "print('{' * 100000, flush=True)",
    ] {
        let argv = vec![python(), "-c".to_string(), script.to_string()];
        let err = ProcessEnv::spawn(&argv, &options())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("handshake"), "{err}");
    }
}

/// Whether process `pid` is gone (or a zombie waiting for an init that does not reap).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Issue 9: a child whose forked grandchild keeps the pipes open turned the child's exit into
/// a full request timeout and left the grandchild running. The child's exit status is
/// reported as soon as it exits, and its whole process group is ended.
#[test]
fn a_grandchild_holding_the_pipes_neither_hides_the_exit_nor_outlives_it() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let handshake = r#"{"protocol":"lockstep/1","env_id":"sh","agents":[{"name":"agent","action_space":{"type":"discrete","n":2},"observation_space":{}}]}"#;
    // Before the handshake, and after it (on the first request).
    for (script, request) in [
        (
            format!("sleep 300 & echo $! > '{}'; exit 3", pidfile.display()),
            "handshake",
        ),
        (
            format!(
                "sleep 300 & echo $! > '{}'; echo '{handshake}'; read line; exit 3",
                pidfile.display()
            ),
            "reset (seed 1)",
        ),
    ] {
        let _ = std::fs::remove_file(&pidfile);
        let argv: Vec<String> = ["sh", "-c", &script].map(String::from).to_vec();
        // A timeout far longer than the test may take: only the exit can end the wait.
        let opts = options_with_timeout(Duration::from_secs(120));
        let err = match ProcessEnv::spawn(&argv, &opts) {
            Err(e) => e,
            Ok(mut env) => env.reset(1, &Value::Null).expect_err("the child exits"),
        }
        .to_string();
        assert!(err.contains(request), "{err}");
        assert!(
            err.contains("the process ended (exit status: 3) without answering"),
            "{err}"
        );
        let grandchild: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SIGKILL is delivered at once; the exit itself may take a moment to show.
        let ended = (0..200).any(|_| {
            gone(grandchild) || {
                std::thread::sleep(Duration::from_millis(10));
                false
            }
        });
        assert!(ended, "grandchild {grandchild} still runs");
    }
}

/// Issue 9: protocol errors did not name the child's pid, although docs/protocol.md says they
/// do. Every fault names it: at the handshake, mid-episode, and an `ok: false` answer.
#[test]
fn protocol_errors_name_the_childs_pid() {
    let err = faults("exit_at_start", &options())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("(pid "), "{err}");

    let mut env = faults("non_json", &options()).unwrap();
    let pid = env.pid();
    let (_, err) = rollout(&mut env, 1, 10).unwrap_err();
    let err = err.to_string();
    assert!(err.contains(&format!("(pid {pid}): step 3")), "{err}");

    require(&["gymnasium"]);
    let argv = adapter_argv(&[
        "factory",
        "lockstep_adapter.testing:walker",
        "--kwargs",
        r#"{"bug": "raises"}"#,
    ]);
    let mut env = ProcessEnvFactory::new(argv, options()).spawn().unwrap();
    let pid = env.pid();
    let (_, err) = rollout(&mut env, 1, 10).unwrap_err();
    let err = err.to_string();
    assert!(
        err.contains(&format!("(pid {pid}): step 2: the env failed")),
        "{err}"
    );
}

/// A child that speaks only lockstep/1 (no `upgrades` in its handshake) still works through a
/// session: each instance is a child of its own. The adapter, which offers lockstep/2, hosts
/// every instance of a session in one child, each answering for itself.
#[test]
fn sessions_speak_lockstep_1_to_children_that_only_know_it() {
    use lockstep::env::EnvFactory;
    let f = ProcessEnvFactory::new(
        module_argv("lockstep_adapter.faults", &["ok", "3"]),
        options(),
    );
    let session = f.session();
    let mut a = session.make().unwrap();
    let mut b = session.make().unwrap();
    let ea = rollout(a.as_mut(), 1, 5).map_err(|(_, e)| e).unwrap();
    let eb = rollout(b.as_mut(), 1, 5).map_err(|(_, e)| e).unwrap();
    assert_eq!(ea.transitions, eb.transitions);
    a.close().unwrap();
    b.close().unwrap();
    assert_eq!(f.children_started(), 2);

    require(&["gymnasium"]);
    let f = ProcessEnvFactory::new(adapter_argv(&["gymnasium", "CartPole-v1"]), options());
    let session = f.session();
    let mut envs: Vec<_> = (0..3).map(|_| session.make().unwrap()).collect();
    let episodes: Vec<_> = envs
        .iter_mut()
        .enumerate()
        .map(|(i, e)| {
            rollout(e.as_mut(), 10 + i as u64, 20)
                .map_err(|(_, e)| e)
                .unwrap()
        })
        .collect();
    assert_ne!(
        episodes[0].transitions, episodes[1].transitions,
        "instances are apart"
    );
    // Instance 0 closed, the others still answer.
    envs[0].close().unwrap();
    let again = rollout(envs[1].as_mut(), 11, 20)
        .map_err(|(_, e)| e)
        .unwrap();
    assert_eq!(again.transitions, episodes[1].transitions);
    for e in &mut envs[1..] {
        e.close().unwrap();
    }
    drop(envs);
    drop(session);
    assert_eq!(f.children_started(), 1);
}

/// A child that dies takes every instance it hosted with it (each says so), and the session's
/// next instance is a fresh child.
#[test]
fn a_dead_lockstep_2_child_fails_all_its_instances_and_is_replaced() {
    use lockstep::env::EnvFactory;
    require(&["gymnasium"]);
    let argv = adapter_argv(&[
        "factory",
        "lockstep_adapter.testing:walker",
        "--kwargs",
        r#"{"bug": "crash"}"#,
    ]);
    let f = ProcessEnvFactory::new(argv, options());
    let session = f.session();
    let mut a = session.make().unwrap();
    let mut b = session.make().unwrap();
    let (_, err) = rollout(a.as_mut(), 1, 60).unwrap_err();
    assert!(err.to_string().contains("signal: 6"), "{err}");
    let other = b.reset(1, &Value::Null).unwrap_err().to_string();
    assert!(other.contains("already failed"), "{other}");
    let mut c = session.make().unwrap();
    c.reset(1, &Value::Null).unwrap();
    assert_eq!(f.children_started(), 2);
}
