//! Helpers shared by the probe tests: a one-route HTTP server and layer specs.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use lockstep::probe::{ProbeSet, ProbeSpec};
use lockstep_canon::Value;

/// A loopback HTTP server answering every request with the current `(status, type, body)`.
pub struct TestServer {
    pub port: u16,
    pub reply: Arc<Mutex<(u16, String, String)>>,
}

impl TestServer {
    pub fn start(status: u16, kind: &str, body: &str) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let reply = Arc::new(Mutex::new((status, kind.to_string(), body.to_string())));
        let shared = Arc::clone(&reply);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                let (status, kind, body) = shared.lock().unwrap().clone();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        TestServer { port, reply }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn set(&self, status: u16, body: &str) {
        let mut r = self.reply.lock().unwrap();
        r.0 = status;
        r.2 = body.to_string();
    }
}

/// A port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

pub fn spec(probe: &str, settings: &[(&str, serde_json::Value)]) -> ProbeSpec {
    ProbeSpec::new(
        probe,
        settings.iter().map(|(k, v)| (k.to_string(), v.clone())),
    )
}

pub fn snapshot(layer: &str, spec: &ProbeSpec) -> Result<Value, String> {
    let probes: ProbeSet = lockstep_layers::probes();
    probes.snapshot(layer, spec).map_err(|e| e.to_string())
}

/// The JSON Pointers at which two snapshots differ.
pub fn changed(a: &Value, b: &Value) -> Vec<String> {
    lockstep::diff::diff(a, b)
        .changes
        .into_iter()
        .map(|c| c.pointer)
        .collect()
}
