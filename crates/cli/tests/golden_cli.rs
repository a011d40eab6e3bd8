//! End to end: `lockstep golden record -> verify -> (change) verify fails -> update`.

use std::path::Path;
use std::process::{Command, Output};

fn lockstep(args: &[&str], ci: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
    cmd.args(args);
    if ci {
        cmd.env("CI", "true");
    } else {
        cmd.env_remove("CI");
    }
    cmd.output().expect("the lockstep binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn record_verify_change_update() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fixture.golden.json");
    let f = file.to_str().unwrap();
    let pending = dir.path().join("fixture.golden.json.new");

    let o = lockstep(
        &[
            "golden",
            "record",
            "--env",
            "fixture",
            "--seed",
            "5",
            "--steps",
            "40",
            "--date",
            "2026-11-30",
            f,
        ],
        false,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let g = json(&file);
    assert_eq!(g["format"], "lockstep/golden/v2");
    assert!(g["seal"].is_string());
    assert_eq!(g["env"], "fixture");
    assert_eq!(g["seed"], 5);
    assert_eq!(g["action_sampler"], "lockstep/actions/v1");
    assert_eq!(g["step_digests"].as_array().unwrap().len(), 41);
    assert_eq!(g["changelog"][0]["reason"], "recorded");

    // Recording over an existing golden is refused.
    let o = lockstep(&["golden", "record", "--env", "fixture", f], false);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("lockstep golden update"));

    let o = lockstep(&["golden", "verify", f], false);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).starts_with("lockstep "), "version first");

    // Changed dynamics: verify fails at the step, CI writes no pending file.
    let o = lockstep(&["golden", "verify", "--env", "fixture:drift", f], true);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("step 20, agent \"blue\", reward: golden"),
        "{out}"
    );
    assert!(!pending.exists(), "CI is set: nothing written");
    // Locally: a pending file, and the last line is the command to run next.
    let o = lockstep(&["golden", "verify", "--env", "fixture:drift", f], false);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(pending.exists(), "{out}");
    let last = out.lines().last().unwrap();
    assert!(
        last.contains(&format!(
            "lockstep golden update {f} --env fixture:drift --reason"
        )),
        "{last}"
    );

    // No reason, no update.
    for args in [
        vec!["golden", "update", "--env", "fixture:drift", f],
        vec![
            "golden",
            "update",
            "--env",
            "fixture:drift",
            "--reason",
            " ",
            f,
        ],
    ] {
        let o = lockstep(&args, false);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("without a reason"));
    }
    assert_eq!(json(&file), g, "a refused update leaves the file alone");

    let o = lockstep(
        &[
            "golden",
            "update",
            "--env",
            "fixture:drift",
            "--reason",
            "rewards doubled from step 20",
            "--date",
            "2026-12-01",
            f,
        ],
        false,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!pending.exists(), "update clears the pending file");
    let u = json(&file);
    let entry = &u["changelog"][1];
    assert_eq!(entry["reason"], "rewards doubled from step 20");
    assert_eq!(entry["date"], "2026-12-01");
    assert_eq!(entry["old_episode"], g["episode"]);
    assert_eq!(entry["new_episode"], u["episode"]);
    assert_ne!(u["episode"], g["episode"]);
    let o = lockstep(&["golden", "verify", "--env", "fixture:drift", f], false);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Issue 9: a hand-edited golden is the file's fault, said before any env runs, with where.
#[test]
fn an_edited_golden_is_inconsistent_not_a_drift() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g.json");
    let f = file.to_str().unwrap();
    let o = lockstep(
        &["golden", "record", "--env", "fixture", "--steps", "30", f],
        true,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let recorded = json(&file);
    for (edit, at) in [
        ("/steps", "at field steps (/steps)"),
        ("/step_digests/4", "step 4 is missing"),
        (
            "/step_digests/2/agents/red/terminated",
            "at step 2, agent \"red\"",
        ),
        ("/changelog", "the changelog is empty"),
        ("/config/grid", "at seal"),
    ] {
        let mut g = recorded.clone();
        match edit {
            "/steps" => g["steps"] = 20.into(),
            "/step_digests/4" => {
                g["step_digests"].as_array_mut().unwrap().remove(4);
            }
            "/changelog" => g["changelog"] = serde_json::json!([]),
            "/config/grid" => g["config"]["grid"] = 9.into(),
            _ => g["step_digests"][2]["agents"]["red"]["terminated"] = true.into(),
        }
        std::fs::write(&file, serde_json::to_vec_pretty(&g).unwrap()).unwrap();
        let o = lockstep(&["golden", "verify", f], true);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{edit}: {out}");
        assert!(
            out.contains("the file is inconsistent") && out.contains(at),
            "{edit}: {out}"
        );
        assert!(out.contains("edited or corrupted"), "{edit}: {out}");
    }
}

#[test]
fn a_broken_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    std::fs::write(&file, "{").unwrap();
    let o = lockstep(&["golden", "verify", file.to_str().unwrap()], true);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("not a golden file"));
}
