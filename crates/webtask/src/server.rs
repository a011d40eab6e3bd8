//! The webtask's HTTP server: one task page, visits counted in SQLite.
//!
//! `serve(db)` listens on a free loopback port, prints `port N` on stdout, and answers one
//! connection at a time until its stdin closes (its owner is gone):
//! - `GET /`: counts a visit (`visits` row 1) and serves the page, which names the target
//!   (`<span id="target">left</span>`) and has a `left` and a `right` button;
//! - `POST /choose?side=left|right` (the buttons): `{"success": side == target and this is
//!   the first visit, "visits": n}`; it changes nothing;
//! - anything else: 404.
//!
//! The database is opened per request, so the env can replace the file between episodes.
//! Its schema ([`SCHEMA`]): `task(id, seed, target)` and `visits(id, page, count)`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;

use rusqlite::Connection;

/// The tables a fresh task database holds.
pub const SCHEMA: &str =
    "CREATE TABLE task (id INTEGER PRIMARY KEY, seed INTEGER NOT NULL, target TEXT NOT NULL);
CREATE TABLE visits (id INTEGER PRIMARY KEY, page TEXT NOT NULL, count INTEGER NOT NULL);";

const PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>webtask</title><link rel="icon" href="data:,"></head>
<body>
<p>Click the <span id="target">TARGET</span> button.</p>
<button id="left" onclick="choose('left')">left</button>
<button id="right" onclick="choose('right')">right</button>
<script>
function choose(side) {
  fetch('/choose?side=' + side, {method: 'POST'})
    .then(r => r.json())
    .then(j => { document.body.dataset.result = JSON.stringify(j); });
}
</script>
</body></html>
"#;

/// Serves until stdin closes. Errors only when the server cannot start.
pub fn serve(db: &Path) -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let mut out = std::io::stdout();
    writeln!(out, "port {port}")?;
    out.flush()?;
    // The owner holds our stdin: when it goes (dropped, killed), so do we.
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        std::process::exit(0);
    });
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if let Err(e) = answer(stream, db) {
            eprintln!("webtask server: {e}");
        }
    }
    Ok(())
}

fn answer(stream: TcpStream, db: &Path) -> Result<(), String> {
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
    let mut request_line = String::new();
    reader
        .read_line(&mut request_line)
        .map_err(|e| e.to_string())?;
    // Skip the headers; no request we answer has a body.
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).map_err(|e| e.to_string())?;
        if n == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or_default();
    let (status, kind, body) = match (method, target) {
        ("GET", "/") => match visit(db) {
            Ok(task_target) => (
                200,
                "text/html; charset=utf-8",
                PAGE.replace("TARGET", &task_target),
            ),
            Err(e) => (500, "text/plain", e),
        },
        ("POST", t) if t.starts_with("/choose?side=") => {
            match choose(db, &t["/choose?side=".len()..]) {
                Ok(json) => (200, "application/json", json),
                Err(e) => (500, "text/plain", e),
            }
        }
        _ => (404, "text/plain", "not found".to_string()),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} {}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        if status == 200 { "OK" } else { "Error" },
        body.len()
    )
    .and_then(|_| stream.flush())
    .map_err(|e| e.to_string())
}

fn open(db: &Path) -> Result<Connection, String> {
    Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(|e| format!("{}: {e}", db.display()))
}

/// Counts a visit; returns the target.
fn visit(db: &Path) -> Result<String, String> {
    let conn = open(db)?;
    conn.execute("UPDATE visits SET count = count + 1 WHERE id = 1", [])
        .map_err(|e| e.to_string())?;
    conn.query_row("SELECT target FROM task WHERE id = 1", [], |r| r.get(0))
        .map_err(|e| e.to_string())
}

fn choose(db: &Path, side: &str) -> Result<String, String> {
    let conn = open(db)?;
    let (target, visits): (String, i64) = conn
        .query_row(
            "SELECT task.target, visits.count FROM task, visits WHERE task.id = 1 AND visits.id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| e.to_string())?;
    let success = side == target && visits == 1;
    Ok(format!("{{\"success\":{success},\"visits\":{visits}}}"))
}
