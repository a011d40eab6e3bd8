//! The `postgres` probe: the tables of one schema of a PostgreSQL database, like `sqlite`.
//!
//! ```toml
//! [[layers]]
//! name = "db"
//! probe = "postgres"
//! url = "postgresql://user@127.0.0.1:5432/app"
//! schema = "public"        # optional
//! tables = ["users"]       # optional; default every base table of the schema
//! ```
//!
//! Snapshot: `{TABLE: {KEY: {COLUMN: VALUE}}}`, rows keyed by primary key as for SQLite, each
//! row as PostgreSQL's own `row_to_json` gives it (numbers, strings, booleans, `null`, nested
//! JSON for `json`/`jsonb` and arrays; timestamps and other types as their text). Everything is
//! read in one read-only, repeatable-read transaction: a consistent snapshot that cannot write.

use std::str::FromStr;
use std::time::Duration;

use lockstep::probe::{Probe, ProbeSpec};
use lockstep_canon::{Map, Value};
use postgres::{Client, Config, IsolationLevel, NoTls};

use crate::rows::table_snapshot;

/// Reads a PostgreSQL database.
pub struct PostgresProbe;

impl Probe for PostgresProbe {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn snapshot(&self, spec: &ProbeSpec) -> Result<Value, String> {
        spec.allow_only(&["url", "schema", "tables"])?;
        let url = spec.required_string("url")?;
        let schema = spec.string("schema")?.unwrap_or("public");
        snapshot_database(url, schema, spec.strings("tables")?.as_deref())
    }
}

/// The snapshot of `schema` in the database at `url`.
pub fn snapshot_database(
    url: &str,
    schema: &str,
    tables: Option<&[String]>,
) -> Result<Value, String> {
    let mut config = Config::from_str(url).map_err(|e| format!("bad url {url:?}: {e}"))?;
    config.connect_timeout(Duration::from_secs(10));
    let mut client: Client = config
        .connect(NoTls)
        .map_err(|e| format!("cannot connect to {url}: {}", cause(&e)))?;
    let at = |e: postgres::Error| format!("{url}: {}", cause(&e));
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .isolation_level(IsolationLevel::RepeatableRead)
        .start()
        .map_err(at)?;
    let all: Vec<String> = tx
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name",
            &[&schema],
        )
        .map_err(at)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let chosen = match tables {
        None => all,
        Some(wanted) => {
            if let Some(missing) = wanted.iter().find(|t| !all.contains(t)) {
                return Err(format!(
                    "{url}: no table `{missing}` in schema `{schema}` (tables: {})",
                    all.join(", ")
                ));
            }
            wanted.to_vec()
        }
    };
    let mut out = Map::new();
    for table in chosen {
        let qualified = format!("{}.{}", quote(schema), quote(&table));
        let key: Vec<String> = tx
            .query(
                "SELECT a.attname::text FROM pg_index i \
                 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) \
                 WHERE i.indrelid = $1::text::regclass AND i.indisprimary \
                 ORDER BY array_position(i.indkey::int2[], a.attnum)",
                &[&qualified],
            )
            .map_err(at)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let order = if key.is_empty() {
            String::new()
        } else {
            let cols: Vec<String> = key.iter().map(|c| format!("t.{}", quote(c))).collect();
            format!(" ORDER BY {}", cols.join(", "))
        };
        let rows = tx
            .query(
                &format!("SELECT row_to_json(t)::text FROM {qualified} t{order}"),
                &[],
            )
            .map_err(at)?;
        let mut parsed = Vec::with_capacity(rows.len());
        for r in rows {
            let text: String = r.get(0);
            match lockstep_canon::parse(text.as_bytes()) {
                Ok(Value::Object(m)) => parsed.push(m),
                Ok(_) => return Err(format!("{url}: table `{table}`: a row is not an object")),
                Err(e) => {
                    return Err(format!(
                        "{url}: table `{table}`: a row is not JSON: {}",
                        e.message
                    ))
                }
            }
        }
        out.insert(table.clone(), table_snapshot(&table, &key, parsed)?);
    }
    tx.commit().map_err(at)?;
    Ok(Value::Object(out))
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The server's message or the I/O cause, which `postgres::Error`'s Display leaves out.
fn cause(e: &postgres::Error) -> String {
    match (e.as_db_error(), std::error::Error::source(e)) {
        (Some(db), _) => format!("{}: {}", db.severity(), db.message()),
        (None, Some(source)) => format!("{e}: {source}"),
        (None, None) => e.to_string(),
    }
}
