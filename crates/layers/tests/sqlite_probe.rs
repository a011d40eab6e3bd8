//! The `sqlite` probe on real database files.
mod common;

use std::path::Path;

use common::{changed, snapshot, spec};
use rusqlite::Connection;
use serde_json::json;

fn create(path: &Path, order: &[i64]) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, visits INTEGER, score REAL, avatar BLOB);
         CREATE TABLE log (line TEXT);",
    )
    .unwrap();
    for &id in order {
        c.execute(
            "INSERT INTO users VALUES (?1, ?2, 0, 0.5, x'0102')",
            rusqlite::params![id, format!("user{id}")],
        )
        .unwrap();
        c.execute("INSERT INTO log VALUES (?1)", [format!("line{id}")])
            .unwrap();
    }
}

fn db_spec(path: &Path) -> lockstep::probe::ProbeSpec {
    spec("sqlite", &[("path", json!(path.display().to_string()))])
}

#[test]
fn insertion_order_never_matters_and_values_are_typed() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a.db"), d.path().join("b.db"));
    create(&a, &[1, 2, 10]);
    create(&b, &[10, 2, 1]);
    let sa = snapshot("server", &db_spec(&a)).unwrap();
    assert_eq!(sa, snapshot("server", &db_spec(&b)).unwrap());
    assert_eq!(sa.pointer("/users/2/name"), Some(&"user2".into()));
    assert_eq!(sa.pointer("/users/2/visits"), Some(&0.into()));
    assert_eq!(sa.pointer("/users/2/score"), Some(&0.5.into()));
    assert_eq!(sa.pointer("/users/2/avatar/size"), Some(&2.into()));
    assert_eq!(
        sa.pointer("/log").and_then(|v| v.as_array()).map(Vec::len),
        Some(3)
    );
}

#[test]
fn a_change_is_located_and_the_file_is_not_touched() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("app.db");
    create(&path, &[1, 2]);
    let before = snapshot("server", &db_spec(&path)).unwrap();
    Connection::open(&path)
        .unwrap()
        .execute("UPDATE users SET visits = 7 WHERE id = 2", [])
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let after = snapshot("server", &db_spec(&path)).unwrap();
    assert_eq!(changed(&before, &after), ["/users/2/visits"]);
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "read-only");
    let only = spec(
        "sqlite",
        &[
            ("path", json!(path.display().to_string())),
            ("tables", json!(["log"])),
        ],
    );
    let s = snapshot("server", &only).unwrap();
    assert!(s.get("users").is_none() && s.get("log").is_some());
}

#[test]
fn failures_name_layer_probe_and_cause() {
    let d = tempfile::tempdir().unwrap();
    let err = snapshot("server", &db_spec(&d.path().join("missing.db"))).unwrap_err();
    assert!(
        err.starts_with("layer `server` (probe sqlite): file missing"),
        "{err}"
    );
    assert!(!d.path().join("missing.db").exists(), "never created");
    let junk = d.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    let err = snapshot("server", &db_spec(&junk)).unwrap_err();
    assert!(err.contains("not a SQLite database"), "{err}");
    let path = d.path().join("app.db");
    create(&path, &[1]);
    let bad = spec(
        "sqlite",
        &[
            ("path", json!(path.display().to_string())),
            ("tables", json!(["nope"])),
        ],
    );
    let err = snapshot("server", &bad).unwrap_err();
    assert!(
        err.contains("no table `nope` (tables: log, users)"),
        "{err}"
    );
}
