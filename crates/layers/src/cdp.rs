//! A small, blocking client of the Chrome DevTools protocol over one WebSocket: send a
//! command, wait for its answer, skip events. Enough for the browser probe (which only asks)
//! and for an environment that drives a page.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::{json, Value as Json};
use tungstenite::{Message, WebSocket};

/// A connection to a browser's DevTools endpoint (the browser target).
pub struct Cdp {
    socket: WebSocket<TcpStream>,
    next_id: u64,
    timeout: Duration,
    endpoint: String,
}

impl std::fmt::Debug for Cdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cdp")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

impl Cdp {
    /// Connects to the DevTools HTTP endpoint `http://HOST:PORT`: asks `/json/version` for the
    /// browser's WebSocket URL, then opens it. Every command must be answered within
    /// `timeout`.
    pub fn connect(endpoint: &str, timeout: Duration) -> Result<Cdp, String> {
        let base = endpoint.trim_end_matches('/');
        let version = format!("{base}/json/version");
        let (status, body) = crate::http::get(&version, timeout)
            .map_err(|e| format!("DevTools not answering at {endpoint}: {e}"))?;
        if status != 200 {
            return Err(format!(
                "DevTools not answering at {endpoint}: GET /json/version gave HTTP {status}"
            ));
        }
        let info: Json = serde_json::from_slice(&body).map_err(|e| {
            format!("DevTools at {endpoint}: /json/version is not JSON ({e}); is this a DevTools endpoint?")
        })?;
        let ws = info
            .get("webSocketDebuggerUrl")
            .and_then(Json::as_str)
            .ok_or_else(|| {
                format!("DevTools at {endpoint}: /json/version has no webSocketDebuggerUrl")
            })?;
        Cdp::connect_ws(ws, endpoint, timeout)
    }

    fn connect_ws(ws: &str, endpoint: &str, timeout: Duration) -> Result<Cdp, String> {
        let fail = |e: String| format!("DevTools at {endpoint}: cannot open {ws}: {e}");
        let host = ws
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .ok_or_else(|| fail("not a ws:// URL".into()))?;
        let addr = host
            .to_socket_addrs()
            .map_err(|e| fail(e.to_string()))?
            .next()
            .ok_or_else(|| fail("no address".into()))?;
        let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| fail(e.to_string()))?;
        stream
            .set_read_timeout(Some(timeout))
            .and_then(|_| stream.set_write_timeout(Some(timeout)))
            .map_err(|e| fail(e.to_string()))?;
        let (socket, _) = tungstenite::client(ws, stream).map_err(|e| fail(e.to_string()))?;
        Ok(Cdp {
            socket,
            next_id: 1,
            timeout,
            endpoint: endpoint.to_owned(),
        })
    }

    /// The HTTP endpoint this client was connected through.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Runs a browser-level command and returns its `result`.
    pub fn call(&mut self, method: &str, params: Json) -> Result<Json, String> {
        self.call_in(None, method, params)
    }

    /// Runs a command in a target's session (from `Target.attachToTarget` with `flatten`).
    pub fn call_in(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Json,
    ) -> Result<Json, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = Json::from(s);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .map_err(|e| format!("DevTools at {}: sending {method}: {e}", self.endpoint))?;
        let deadline = crate::process::monotonic_now() + self.timeout;
        loop {
            if crate::process::monotonic_now() > deadline {
                return Err(self.late(method));
            }
            match self.socket.read() {
                Ok(Message::Text(text)) => {
                    let v: Json = serde_json::from_str(text.as_str()).map_err(|e| {
                        format!("DevTools at {}: a message is not JSON: {e}", self.endpoint)
                    })?;
                    if v.get("id").and_then(Json::as_u64) != Some(id) {
                        continue; // an event, or the answer to an abandoned command
                    }
                    if let Some(err) = v.get("error") {
                        let text = err.get("message").and_then(Json::as_str).unwrap_or("error");
                        return Err(format!("DevTools {method}: {text}"));
                    }
                    return Ok(v.get("result").cloned().unwrap_or(Json::Null));
                }
                Ok(Message::Close(_)) => {
                    return Err(format!(
                        "DevTools at {} closed the connection during {method}",
                        self.endpoint
                    ))
                }
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(self.late(method))
                }
                Err(e) => {
                    return Err(format!(
                        "DevTools at {}: during {method}: {e}",
                        self.endpoint
                    ))
                }
            }
        }
    }

    fn late(&self, method: &str) -> String {
        format!(
            "DevTools at {} did not answer {method} within {:.1} s",
            self.endpoint,
            self.timeout.as_secs_f64()
        )
    }
}
