//! One child shared by the env instances it hosts: requests in turn, or several in flight.
//!
//! Over `lockstep/1`, and `lockstep/2` without threads, a request holds the connection from
//! its send to its answer. When the child runs its instances on threads (`"threads": true`,
//! docs/protocol.md), [`in_flight`] lets requests to different instances overlap: each
//! answer is matched to its request by id.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use lockstep::env::EnvError;
use lockstep_canon::Value;

use crate::child::{monotonic_now, Child, Fault, Stop, EXIT_POLL};
use crate::message;
use crate::process_env::excerpt;

/// One child and what every env instance in it shares: the pipes, the request ids, the fault
/// that ended it, and (when several requests may be in flight) the answers read for others.
pub(crate) struct Conn {
    pub(crate) child: Child,
    /// Id of the last request sent (replies echo it).
    pub(crate) request_id: u64,
    /// The fault that killed the child, repeated to every instance.
    pub(crate) dead: Option<EnvError>,
    /// Requests to different instances may be in flight at once (`"threads": true`).
    pub(crate) concurrent: bool,
    /// Ids sent and not answered yet (concurrent mode).
    pub(crate) pending: BTreeSet<u64>,
    /// Answers read by one waiting thread for another's request, by id (concurrent mode).
    pub(crate) arrived: BTreeMap<u64, Value>,
}

impl Conn {
    pub(crate) fn new(child: Child) -> Conn {
        Conn {
            child,
            request_id: 0,
            dead: None,
            concurrent: false,
            pending: BTreeSet::new(),
            arrived: BTreeMap::new(),
        }
    }

    pub(crate) fn next_id(&mut self) -> u64 {
        self.request_id += 1;
        self.request_id
    }
}

/// A child shared by its instances: the connection and the signal that an answer arrived,
/// stdout was given back, or the child died.
pub(crate) struct Link {
    pub(crate) conn: Mutex<Conn>,
    pub(crate) wake: Condvar,
}

impl Link {
    pub(crate) fn new(conn: Conn) -> Link {
        Link {
            conn: Mutex::new(conn),
            wake: Condvar::new(),
        }
    }
}

pub(crate) type Shared = Arc<Link>;

pub(crate) fn lock(link: &Link) -> MutexGuard<'_, Conn> {
    link.conn
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The connection with no request in flight: what a request outside any instance (`create`,
/// `fork`, `end_fork`) needs, as it is answered in turn.
pub(crate) fn quiet(link: &Link) -> MutexGuard<'_, Conn> {
    let mut conn = lock(link);
    while !conn.pending.is_empty() && conn.dead.is_none() {
        conn = link
            .wake
            .wait(conn)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
    conn
}

/// One request while others to the same child may be in flight (`"threads": true`): sends
/// it, then waits for the answer with its id. Whichever waiting thread holds stdout reads the
/// next line without the lock (so others can send meanwhile) and files an answer to another
/// request under its id for that thread; the others wait to be woken. A line answering no
/// request in flight, a line that is not JSON, the child's exit, a long line and the timeout
/// are faults as in [`Child::recv`]: the error text (`Some`) for the caller to kill the child
/// with, or `None` when another thread already did.
pub(crate) fn in_flight<'a>(
    link: &'a Link,
    mut conn: MutexGuard<'a, Conn>,
    line: &[u8],
    id: u64,
    timeout: Duration,
) -> Result<Value, (MutexGuard<'a, Conn>, Option<String>)> {
    if let Err(fault) = conn.child.send_pipelined(line) {
        return Err((conn, Some(fault.to_string())));
    }
    conn.pending.insert(id);
    // No deadline when `timeout` is too large to add to the clock: wait without end.
    let deadline = monotonic_now().checked_add(timeout);
    loop {
        if let Some(value) = conn.arrived.remove(&id) {
            conn.pending.remove(&id);
            link.wake.notify_all();
            return Ok(value);
        }
        if conn.dead.is_some() {
            conn.pending.remove(&id);
            return Err((conn, None));
        }
        let left = deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(monotonic_now())
        });
        if left.is_zero() {
            conn.pending.remove(&id);
            return Err((conn, Some(Fault::TimedOut(timeout).to_string())));
        }
        let Some(mut reader) = conn.child.take_reader() else {
            conn = link
                .wake
                .wait_timeout(conn, left.min(EXIT_POLL))
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
            continue;
        };
        drop(conn);
        let got = reader.next_line(left.min(EXIT_POLL)).map(|l| {
            message::parse_line(l)
                .map_err(|e| format!("the answer is not JSON ({e}): {}", excerpt(l)))
        });
        conn = lock(link);
        conn.child.put_reader(reader);
        link.wake.notify_all();
        if conn.dead.is_some() {
            // Another thread ended the child while this one read: its fault is the one.
            conn.pending.remove(&id);
            return Err((conn, None));
        }
        let fault = match got {
            Ok(Ok(value)) => match answered_id(&value) {
                Some(k) if k == id => {
                    conn.pending.remove(&id);
                    return Ok(value);
                }
                Some(k) if conn.pending.contains(&k) && !conn.arrived.contains_key(&k) => {
                    conn.arrived.insert(k, value);
                    continue;
                }
                _ => format!(
                    "the answer breaks the protocol: {}",
                    message::check_id(&value, id).err().map_or_else(
                        || "a second answer to one request".to_string(),
                        |e| e.to_string()
                    )
                ),
            },
            Ok(Err(not_json)) => not_json,
            Err(Stop::TimedOut) => match conn.child.exit_fault() {
                Some(fault) => fault.to_string(),
                None => continue,
            },
            Err(stop) => conn.child.stop_fault(stop, timeout).to_string(),
        };
        conn.pending.remove(&id);
        return Err((conn, Some(fault)));
    }
}

/// The id an answer echoes, if it is a non-negative integer.
fn answered_id(value: &Value) -> Option<u64> {
    match value.get("id") {
        Some(Value::Number(lockstep_canon::Number::Int(i))) if *i >= 0 => Some(*i as u64),
        _ => None,
    }
}
