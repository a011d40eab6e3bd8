//! The `sqlite` probe: every table of a SQLite file (or `tables = [...]`), rows keyed by
//! primary key, values typed as SQLite stores them.
//!
//! ```toml
//! [[layers]]
//! name = "server"
//! probe = "sqlite"
//! path = "app.db"         # relative to the contract file
//! tables = ["users"]      # optional; default every table but SQLite's own
//! ```
//!
//! Snapshot: `{TABLE: {KEY: {COLUMN: VALUE}}}` (see docs/layers.md for keys of composite and
//! missing primary keys). Values: NULL `null`, INTEGER an integer, REAL a float, TEXT a
//! string, BLOB `{"size": n, "sha256": hex}`. The file is opened read-only, inside one read
//! transaction, so the snapshot is consistent and the database is never changed.

use std::path::Path;

use lockstep::probe::{Probe, ProbeSpec};
use lockstep_canon::{Map, Number, Value};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use sha2::{Digest, Sha256};

use crate::rows::table_snapshot;

/// Reads a SQLite database file.
pub struct SqliteProbe;

impl Probe for SqliteProbe {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn snapshot(&self, spec: &ProbeSpec) -> Result<Value, String> {
        spec.allow_only(&["path", "tables"])?;
        let path = spec.required_path("path")?;
        snapshot_file(&path, spec.strings("tables")?.as_deref())
    }
}

/// The snapshot of the database at `path`: `tables`, or every table.
pub fn snapshot_file(path: &Path, tables: Option<&[String]>) -> Result<Value, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("file missing: {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("not a file: {}", path.display()));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let at = |e: rusqlite::Error| match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
            format!("not a SQLite database: {} ({e})", path.display())
        }
        _ => format!("{}: {e}", path.display()),
    };
    conn.execute_batch("BEGIN").map_err(at)?;
    let all = table_names(&conn).map_err(at)?;
    let chosen: Vec<String> = match tables {
        None => all,
        Some(wanted) => {
            if let Some(missing) = wanted.iter().find(|t| !all.contains(t)) {
                return Err(format!(
                    "{}: no table `{missing}` (tables: {})",
                    path.display(),
                    all.join(", ")
                ));
            }
            wanted.to_vec()
        }
    };
    let mut out = Map::new();
    for table in chosen {
        let snapshot = read_table(&conn, &table).map_err(|e| match e {
            Read::Sql(e) => at(e),
            Read::Other(m) => format!("{}: {m}", path.display()),
        })?;
        out.insert(table, snapshot);
    }
    conn.execute_batch("COMMIT").map_err(at)?;
    Ok(Value::Object(out))
}

fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

enum Read {
    Sql(rusqlite::Error),
    Other(String),
}

impl From<rusqlite::Error> for Read {
    fn from(e: rusqlite::Error) -> Read {
        Read::Sql(e)
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn read_table(conn: &Connection, table: &str) -> Result<Value, Read> {
    // (pk position, name) of the primary key columns, in key order.
    let mut info = conn.prepare(&format!("PRAGMA table_info({})", quote(table)))?;
    let mut key: Vec<(i64, String)> = info
        .query_map([], |r| Ok((r.get::<_, i64>(5)?, r.get::<_, String>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .filter(|(pk, _)| *pk > 0)
        .collect();
    key.sort();
    let key: Vec<String> = key.into_iter().map(|(_, n)| n).collect();
    let order = if key.is_empty() {
        String::new()
    } else {
        let cols: Vec<String> = key.iter().map(|c| quote(c)).collect();
        format!(" ORDER BY {}", cols.join(", "))
    };
    let mut stmt = conn.prepare(&format!("SELECT * FROM {}{order}", quote(table)))?;
    let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
    let mut rows = Vec::new();
    let mut query = stmt.query([])?;
    while let Some(r) = query.next()? {
        let mut row = Map::new();
        for (i, column) in columns.iter().enumerate() {
            let value = match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => Value::Number(Number::Int(n)),
                ValueRef::Real(x) => Value::Number(Number::Float(x)),
                ValueRef::Text(t) => {
                    Value::String(String::from_utf8(t.to_vec()).map_err(|_| {
                        Read::Other(format!(
                            "table `{table}` column `{column}`: text is not UTF-8"
                        ))
                    })?)
                }
                ValueRef::Blob(b) => {
                    let mut m = Map::new();
                    m.insert("size".into(), Value::from(b.len() as u64));
                    m.insert(
                        "sha256".into(),
                        Value::String(hex::encode(Sha256::digest(b))),
                    );
                    Value::Object(m)
                }
            };
            row.insert(column.clone(), value);
        }
        rows.push(row);
    }
    table_snapshot(table, &key, rows).map_err(Read::Other)
}
