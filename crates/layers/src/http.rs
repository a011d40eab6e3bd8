//! The `http` probe: a GET, and the JSON body it answers (or its status and body digest).
//!
//! ```toml
//! [[layers]]
//! name = "api"
//! probe = "http"
//! url = "http://127.0.0.1:8080/state"
//! body = "json"            # default: the body must be JSON, the snapshot is that value
//!                          # "digest": {"status", "size", "sha256"} of any body
//! timeout_seconds = 10     # optional
//! ```
//!
//! With `body = "json"` a status outside 200..=299 or a body that is not strict JSON is an
//! error. Only GET is ever sent: the probe does not change the service.

use std::time::Duration;

use lockstep::probe::{Probe, ProbeSpec};
use lockstep_canon::{Map, Value};
use sha2::{Digest, Sha256};

/// Bodies larger than this are an error rather than a partial read.
pub const BODY_MAX: u64 = 64 << 20;

/// Reads an HTTP endpoint.
pub struct HttpProbe;

impl Probe for HttpProbe {
    fn name(&self) -> &'static str {
        "http"
    }

    fn snapshot(&self, spec: &ProbeSpec) -> Result<Value, String> {
        spec.allow_only(&["url", "body", "timeout_seconds"])?;
        let url = spec.required_string("url")?;
        let timeout = timeout_setting(spec)?;
        let (status, body) = get(url, timeout)?;
        match spec.string("body")?.unwrap_or("json") {
            "json" => {
                if !(200..=299).contains(&status) {
                    return Err(format!("GET {url}: HTTP status {status}"));
                }
                lockstep_canon::parse(&body).map_err(|e| {
                    format!(
                        "GET {url}: non-JSON body ({} bytes): {}:{}: {}",
                        body.len(),
                        e.line,
                        e.column,
                        e.message
                    )
                })
            }
            "digest" => {
                let mut m = Map::new();
                m.insert("status".into(), Value::from(status));
                m.insert("size".into(), Value::from(body.len() as u64));
                m.insert(
                    "sha256".into(),
                    Value::String(hex::encode(Sha256::digest(&body))),
                );
                Ok(Value::Object(m))
            }
            other => Err(format!(
                "setting `body` must be \"json\" or \"digest\", not {other:?}"
            )),
        }
    }
}

fn timeout_setting(spec: &ProbeSpec) -> Result<Duration, String> {
    match spec.settings.get("timeout_seconds") {
        None => Ok(Duration::from_secs(10)),
        Some(v) => v
            .as_f64()
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 3600.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| {
                format!("setting `timeout_seconds` must be a number in (0, 3600], not {v}")
            }),
    }
}

/// GETs `url`: the status and the whole body. Any status is returned; transport failures
/// (connection refused, timeout, a body over [`BODY_MAX`]) are errors.
pub fn get(url: &str, timeout: Duration) -> Result<(u16, Vec<u8>), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .get(url)
        .call()
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(BODY_MAX)
        .read_to_vec()
        .map_err(|e| format!("GET {url}: reading the body: {e}"))?;
    Ok((status, body))
}
