//! End to end: external environments (`--cmd -- ARGV...`) on the real binary, with children
//! that misbehave in the ways issue 9 and issue 10 list. Children here are small shell and
//! Python scripts, so each test names the defect it guards against.

use std::process::{Command, Output};

fn lockstep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .output()
        .expect("the lockstep binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Issue 9: a child that hangs before its handshake waited a fixed 60 s whatever `--timeout`
/// said. The startup limit is `--timeout` unless `--startup-timeout` gives its own.
#[test]
fn startup_timeout_follows_the_flags() {
    let hang = ["sh", "-c", "sleep 120"];
    let mut args = vec![
        "replay",
        "--checks",
        "same",
        "--timeout",
        "1",
        "--cmd",
        "--",
    ];
    args.extend(hang);
    let o = lockstep(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("handshake: no answer within 1 s"),
        "{}",
        stderr(&o)
    );

    let mut args = vec![
        "replay",
        "--checks",
        "same",
        "--timeout",
        "30",
        "--startup-timeout",
        "1.5",
        "--cmd",
        "--",
    ];
    args.extend(hang);
    let o = lockstep(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("handshake: no answer within 1.500 s"),
        "{}",
        stderr(&o)
    );

    let o = lockstep(&["replay", "--startup-timeout", "0", "--cmd", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--startup-timeout 0 must be a number of seconds"),
        "{}",
        stderr(&o)
    );
}
