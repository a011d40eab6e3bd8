//! The `postgres` probe against a real PostgreSQL server that the test starts itself: a fresh
//! cluster (`initdb`) in a temporary directory, on a free loopback port, stopped on drop.
//! Debian's `postgresql` package must be installed (scripts/test installs it); without it the
//! tests fail and say so.
mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{changed, closed_port, snapshot, spec};
use serde_json::json;

struct Server {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

/// `initdb` and `pg_ctl` refuse to run as root: run them as `postgres` then.
fn as_owner(program: PathBuf) -> Command {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

impl Server {
    fn start() -> Server {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("bin"))
            .find(|b| b.join("initdb").is_file())
            .expect("PostgreSQL is not installed: install Debian's package as root: `apt-get install postgresql` (scripts/test does)");
        let dir = tempfile::Builder::new()
            .prefix("lockstep-pg-")
            .tempdir()
            .unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let ok = Command::new("chown")
                .arg("postgres:")
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(ok.success(), "chown of the data directory failed");
        }
        let data = dir.path().join("data");
        let out = as_owner(bin.join("initdb"))
            .args([
                "-U",
                "lockstep",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = closed_port();
        let out = as_owner(bin.join("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .arg("-o")
            .arg(format!(
                "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
                dir.path().display()
            ))
            .arg("-l")
            .arg(dir.path().join("log"))
            .args(["-w", "start"])
            .output()
            .unwrap();
        let log = std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "pg_ctl start: {} {log}",
            String::from_utf8_lossy(&out.stderr)
        );
        Server { bin, dir, port }
    }

    fn url(&self) -> String {
        format!("postgresql://lockstep@127.0.0.1:{}/postgres", self.port)
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url(), postgres::NoTls).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = as_owner(self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

fn fill(c: &mut postgres::Client, schema: &str, order: &[i32]) {
    c.batch_execute(&format!(
        "CREATE SCHEMA {schema};
         CREATE TABLE {schema}.users (id int PRIMARY KEY, name text, visits int, tags jsonb);
         CREATE TABLE {schema}.log (line text);"
    ))
    .unwrap();
    for &id in order {
        c.execute(
            &format!("INSERT INTO {schema}.users VALUES ($1, $2, 0, '{{\"b\": 1, \"a\": 2}}')"),
            &[&id, &format!("user{id}")],
        )
        .unwrap();
        c.execute(
            &format!("INSERT INTO {schema}.log VALUES ($1)"),
            &[&format!("line{id}")],
        )
        .unwrap();
    }
}

#[test]
fn rows_in_key_order_a_located_change_and_each_failure() {
    let server = Server::start();
    let mut c = server.client();
    fill(&mut c, "a", &[1, 2, 10]);
    fill(&mut c, "b", &[10, 2, 1]);
    let of = |schema: &str| {
        spec(
            "postgres",
            &[("url", json!(server.url())), ("schema", json!(schema))],
        )
    };
    let sa = snapshot("db", &of("a")).unwrap();
    assert_eq!(sa, snapshot("db", &of("b")).unwrap(), "insertion order");
    assert_eq!(sa.pointer("/users/2/name"), Some(&"user2".into()));
    assert_eq!(sa.pointer("/users/2/tags/a"), Some(&2.into()));
    assert_eq!(
        sa.pointer("/log").and_then(|v| v.as_array()).map(Vec::len),
        Some(3)
    );

    c.execute("UPDATE a.users SET visits = 7 WHERE id = 2", &[])
        .unwrap();
    assert_eq!(
        changed(&sa, &snapshot("db", &of("a")).unwrap()),
        ["/users/2/visits"]
    );

    let bad = spec(
        "postgres",
        &[
            ("url", json!(server.url())),
            ("schema", json!("a")),
            ("tables", json!(["nope"])),
        ],
    );
    let err = snapshot("db", &bad).unwrap_err();
    assert!(
        err.contains("no table `nope` in schema `a` (tables: log, users)"),
        "{err}"
    );
    let refused = format!("postgresql://lockstep@127.0.0.1:{}/postgres", closed_port());
    let err = snapshot("db", &spec("postgres", &[("url", json!(refused))])).unwrap_err();
    assert!(
        err.starts_with("layer `db` (probe postgres): cannot connect"),
        "{err}"
    );
    assert!(err.to_lowercase().contains("refused"), "{err}");
    let err = snapshot("db", &spec("postgres", &[("url", json!("nonsense://x"))])).unwrap_err();
    assert!(err.contains("bad url"), "{err}");
    let nodb = format!("postgresql://lockstep@127.0.0.1:{}/nodb", server.port);
    let err = snapshot("db", &spec("postgres", &[("url", json!(nodb))])).unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
}
