//! Rows of a database table as a canonical snapshot: keyed by primary key, so that insertion
//! order never reaches the fingerprint and a changed value is located at
//! `/LAYER/TABLE/KEY/COLUMN`. Shared by the SQLite and PostgreSQL probes.

use lockstep_canon::{Map, Profile, Value};

/// The snapshot of one table: an object from primary key to row when the table has one, else
/// the rows as an array sorted by their canonical bytes (a multiset: order never matters).
pub fn table_snapshot(
    table: &str,
    primary_key: &[String],
    rows: Vec<Map>,
) -> Result<Value, String> {
    if primary_key.is_empty() {
        let mut keyed: Vec<(Vec<u8>, Value)> = rows
            .into_iter()
            .map(|r| {
                let row = Value::Object(r);
                let bytes = lockstep_canon::to_vec(&row, Profile::Python)
                    .map_err(|e| format!("table `{table}`: a row has no canonical form: {e}"))?;
                Ok((bytes, row))
            })
            .collect::<Result<_, String>>()?;
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        return Ok(Value::Array(keyed.into_iter().map(|(_, r)| r).collect()));
    }
    let mut out = Map::new();
    for row in rows {
        let parts: Vec<&Value> = primary_key
            .iter()
            .map(|c| row.get(c).unwrap_or(&Value::Null))
            .collect();
        let key = match parts.as_slice() {
            [one] => key_text(one)?,
            many => {
                let array = Value::Array(many.iter().map(|v| (*v).clone()).collect());
                String::from_utf8(
                    lockstep_canon::to_vec(&array, Profile::Python).map_err(|e| e.to_string())?,
                )
                .expect("canonical JSON is ASCII")
            }
        };
        if out.contains_key(&key) {
            return Err(format!(
                "table `{table}`: two rows share the primary key {key:?} ({})",
                primary_key.join(", ")
            ));
        }
        out.insert(key, Value::Object(row));
    }
    Ok(Value::Object(out))
}

/// A one-column key as an object key: a string as itself, anything else as its canonical JSON.
fn key_text(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.to_string()),
        other => Ok(String::from_utf8(
            lockstep_canon::to_vec(other, Profile::Python).map_err(|e| e.to_string())?,
        )
        .expect("canonical JSON is ASCII")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, name: &str) -> Map {
        let mut m = Map::new();
        m.insert("id".into(), Value::from(id));
        m.insert("name".into(), Value::from(name));
        m
    }

    #[test]
    fn keyed_and_unkeyed_tables_ignore_row_order() {
        let pk = vec!["id".to_string()];
        let a = table_snapshot("t", &pk, vec![row(2, "b"), row(10, "a")]).unwrap();
        let b = table_snapshot("t", &pk, vec![row(10, "a"), row(2, "b")]).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.pointer("/10/name"), Some(&Value::from("a")));
        let a = table_snapshot("t", &[], vec![row(2, "b"), row(1, "a")]).unwrap();
        let b = table_snapshot("t", &[], vec![row(1, "a"), row(2, "b")]).unwrap();
        assert_eq!(a, b);
        let two = vec!["id".to_string(), "name".to_string()];
        let c = table_snapshot("t", &two, vec![row(1, "a")]).unwrap();
        assert!(c.get("[1,\"a\"]").is_some(), "{c:?}");
        let err = table_snapshot("t", &pk, vec![row(1, "a"), row(1, "b")]).unwrap_err();
        assert!(
            err.contains("two rows share the primary key \"1\""),
            "{err}"
        );
    }
}
