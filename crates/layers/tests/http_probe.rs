//! The `http` probe against a real loopback server.
mod common;

use common::{changed, closed_port, snapshot, spec, TestServer};
use serde_json::json;

#[test]
fn key_order_never_matters_and_a_change_is_located() {
    let server = TestServer::start(200, "application/json", r#"{"b": {"visits": 1}, "a": 2}"#);
    let s = spec("http", &[("url", json!(server.url()))]);
    let first = snapshot("api", &s).unwrap();
    server.set(200, r#"{"a": 2, "b": {"visits": 1}}"#);
    assert_eq!(snapshot("api", &s).unwrap(), first);
    server.set(200, r#"{"a": 2, "b": {"visits": 8}}"#);
    assert_eq!(
        changed(&first, &snapshot("api", &s).unwrap()),
        ["/b/visits"]
    );
}

#[test]
fn digest_mode_records_status_and_body() {
    let server = TestServer::start(404, "text/plain", "not here");
    let s = spec(
        "http",
        &[("url", json!(server.url())), ("body", json!("digest"))],
    );
    let got = snapshot("api", &s).unwrap();
    assert_eq!(got.get("status"), Some(&404.into()));
    assert_eq!(got.get("size"), Some(&8.into()));
}

#[test]
fn failures_name_layer_probe_and_cause() {
    let url = format!("http://127.0.0.1:{}/state", closed_port());
    let err = snapshot("api", &spec("http", &[("url", json!(url))])).unwrap_err();
    assert!(err.starts_with("layer `api` (probe http): GET "), "{err}");
    assert!(err.to_lowercase().contains("refused"), "{err}");

    let server = TestServer::start(200, "text/html", "<html>");
    let s = spec("http", &[("url", json!(server.url()))]);
    let err = snapshot("api", &s).unwrap_err();
    assert!(err.contains("non-JSON body (6 bytes)"), "{err}");
    server.set(500, "{}");
    let err = snapshot("api", &s).unwrap_err();
    assert!(err.contains("HTTP status 500"), "{err}");
    let bad = spec(
        "http",
        &[("url", json!(server.url())), ("body", json!("xml"))],
    );
    assert!(snapshot("api", &bad)
        .unwrap_err()
        .contains("\"json\" or \"digest\""));
}
