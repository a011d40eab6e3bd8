//! The `browser` probe: a Chromium's cookies (all origins) and its localStorage and
//! sessionStorage per origin, read over the DevTools protocol.
//!
//! ```toml
//! [[layers]]
//! name = "browser"
//! probe = "browser"
//! cdp = "http://127.0.0.1:9222"     # the DevTools endpoint (--remote-debugging-port)
//! context = "..."                     # optional: one browser context id; default every context
//! ```
//!
//! Snapshot:
//! `{"cookies": {DOMAIN: {NAME: {"value", "path", "secure", "http_only", "same_site", "session"}}},
//!   "local_storage": {ORIGIN: {KEY: VALUE}}, "session_storage": {ORIGIN: {KEY: VALUE}}}`.
//! A cookie's expiry instant is left out: it is wall-clock time, different in every run, while
//! `session` says whether it has one. Storage is read for the origins of the open pages
//! (`http`/`https` only); an origin with no items is left out, so an empty browser snapshots as
//! three empty objects. The probe attaches to pages only to read: it never navigates, evaluates
//! script or changes storage.

use std::time::Duration;

use lockstep::probe::{Probe, ProbeSpec};
use lockstep_canon::{Map, Value};
use serde_json::{json, Value as Json};

use crate::cdp::Cdp;

/// Reads a browser over DevTools.
pub struct BrowserProbe;

impl Probe for BrowserProbe {
    fn name(&self) -> &'static str {
        "browser"
    }

    fn snapshot(&self, spec: &ProbeSpec) -> Result<Value, String> {
        spec.allow_only(&["cdp", "context"])?;
        let endpoint = spec.required_string("cdp")?;
        let mut cdp = Cdp::connect(endpoint, Duration::from_secs(10))?;
        snapshot_browser(&mut cdp, spec.string("context")?)
    }
}

/// The snapshot of the browser behind `cdp`: one context, or every context.
pub fn snapshot_browser(cdp: &mut Cdp, context: Option<&str>) -> Result<Value, String> {
    let contexts: Vec<Option<String>> = match context {
        Some(c) => vec![Some(c.to_owned())],
        None => {
            let listed = cdp.call("Target.getBrowserContexts", json!({}))?;
            let mut all = vec![None];
            all.extend(
                listed
                    .get("browserContextIds")
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Json::as_str)
                    .map(|s| Some(s.to_owned())),
            );
            all
        }
    };
    let mut cookies = Map::new();
    for ctx in &contexts {
        let params = match ctx {
            Some(c) => json!({"browserContextId": c}),
            None => json!({}),
        };
        let got = cdp.call("Storage.getCookies", params)?;
        for c in got
            .get("cookies")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            add_cookie(&mut cookies, c)?;
        }
    }

    let mut local = Map::new();
    let mut session = Map::new();
    let mut indexed = Map::new();
    let mut unreadable = Map::new();
    let mut pages = Vec::new();
    let targets = cdp.call("Target.getTargets", json!({}))?;
    for t in targets
        .get("targetInfos")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        if t.get("type").and_then(Json::as_str) != Some("page") {
            continue;
        }
        let target_ctx = t.get("browserContextId").and_then(Json::as_str);
        if let Some(c) = context {
            if target_ctx != Some(c) {
                continue;
            }
        }
        // A new page reads "" until its first navigation commits: it is the blank page.
        let url = match t.get("url").and_then(Json::as_str).unwrap_or_default() {
            "" => "about:blank",
            u => u,
        };
        pages.push(Value::String(url.to_owned()));
        let Some(origin) = origin_of(url) else {
            continue;
        };
        let id = t.get("targetId").and_then(Json::as_str).unwrap_or_default();
        // A page that closes while it is read (a reset closing the last episode's tabs) is
        // not part of the state: it is left out, pages and storage alike. Any other failure
        // is an error.
        let read = read_target(cdp, id, &origin, [&mut local, &mut session, &mut indexed]);
        match read {
            Err(_) if !still_open(cdp, id)? => {
                pages.pop();
            }
            // A file:// page's storage belongs to an origin DevTools may refuse to name: say
            // so, never report it as empty.
            Err(e) if origin == FILE_ORIGIN => {
                unreadable.insert(
                    origin.clone(),
                    Value::String(format!("DevTools cannot read this origin's storage ({e})")),
                );
            }
            other => other?,
        }
    }
    pages.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    let mut out = Map::new();
    out.insert("cookies".into(), Value::Object(cookies));
    out.insert("local_storage".into(), Value::Object(local));
    out.insert("session_storage".into(), Value::Object(session));
    out.insert("indexed_db".into(), Value::Object(indexed));
    out.insert("pages".into(), Value::Array(pages));
    if !unreadable.is_empty() {
        out.insert("not_readable".into(), Value::Object(unreadable));
    }
    Ok(Value::Object(out))
}

/// Attaches to the page `id`, reads it ([`read_page`]) and detaches.
fn read_target(cdp: &mut Cdp, id: &str, origin: &str, into: [&mut Map; 3]) -> Result<(), String> {
    let attached = cdp.call(
        "Target.attachToTarget",
        json!({"targetId": id, "flatten": true}),
    )?;
    let sid = attached
        .get("sessionId")
        .and_then(Json::as_str)
        .ok_or("DevTools Target.attachToTarget gave no sessionId")?
        .to_owned();
    let read = read_page(cdp, &sid, origin, into);
    let detached = cdp.call("Target.detachFromTarget", json!({"sessionId": sid}));
    read?;
    detached.map(|_| ())
}

/// Whether the target `id` is still open.
fn still_open(cdp: &mut Cdp, id: &str) -> Result<bool, String> {
    let targets = cdp.call("Target.getTargets", json!({}))?;
    Ok(targets
        .get("targetInfos")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .any(|t| t.get("targetId").and_then(Json::as_str) == Some(id)))
}

/// The origin every `file://` page shares in Chromium's storage.
const FILE_ORIGIN: &str = "file://";

/// One page's localStorage, sessionStorage and IndexedDB into `[local, session, indexed]`,
/// through the DevTools session `sid` attached to it.
fn read_page(
    cdp: &mut Cdp,
    sid: &str,
    origin: &str,
    [local, session, indexed]: [&mut Map; 3],
) -> Result<(), String> {
    for (is_local, into) in [(true, &mut *local), (false, &mut *session)] {
        let items = cdp.call_in(
            Some(sid),
            "DOMStorage.getDOMStorageItems",
            json!({"storageId": {"securityOrigin": origin, "isLocalStorage": is_local}}),
        )?;
        let mut m = Map::new();
        for pair in items
            .get("entries")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(k), Some(v)) = (
                pair.get(0).and_then(Json::as_str),
                pair.get(1).and_then(Json::as_str),
            ) else {
                return Err(
                    "DevTools DOMStorage.getDOMStorageItems: an entry is not [key, value]".into(),
                );
            };
            m.insert(k.to_owned(), Value::String(v.to_owned()));
        }
        if m.is_empty() {
            continue;
        }
        let kind = if is_local {
            "localStorage"
        } else {
            "sessionStorage"
        };
        match into.get(origin) {
            Some(Value::Object(prev)) if *prev != m => {
                return Err(format!(
                    "two pages of {origin} hold different {kind}; open one page per origin to snapshot it"
                ))
            }
            _ => {
                into.insert(origin.to_owned(), Value::Object(m));
            }
        }
    }
    let dbs = indexed_db(cdp, sid, origin).map_err(|e| format!("IndexedDB: {e}"))?;
    if !dbs.is_empty() {
        indexed.insert(origin.to_owned(), Value::Object(dbs));
    }
    Ok(())
}

/// An origin's IndexedDB: `{DATABASE: {STORE: {"entries": N, "key_generator": K}}}`. The
/// records themselves are not read (DevTools gives them as remote objects); their count per
/// store and the key generator catch what a reset leaves behind.
fn indexed_db(cdp: &mut Cdp, sid: &str, origin: &str) -> Result<Map, String> {
    cdp.call_in(Some(sid), "IndexedDB.enable", json!({}))?;
    let names = cdp.call_in(
        Some(sid),
        "IndexedDB.requestDatabaseNames",
        json!({"securityOrigin": origin}),
    )?;
    let mut out = Map::new();
    for name in names
        .get("databaseNames")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
    {
        let db = cdp.call_in(
            Some(sid),
            "IndexedDB.requestDatabase",
            json!({"securityOrigin": origin, "databaseName": name}),
        )?;
        let mut stores = Map::new();
        for store in db
            .pointer("/databaseWithObjectStores/objectStores")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            let Some(store_name) = store.get("name").and_then(Json::as_str) else {
                continue;
            };
            let meta = cdp.call_in(
                Some(sid),
                "IndexedDB.getMetadata",
                json!({"securityOrigin": origin, "databaseName": name, "objectStoreName": store_name}),
            )?;
            let number = |k: &str| {
                meta.get(k).and_then(Json::as_f64).map_or(Value::Null, |n| {
                    Value::Number(lockstep_canon::Number::Int(n as i64))
                })
            };
            let mut m = Map::new();
            m.insert("entries".into(), number("entriesCount"));
            m.insert("key_generator".into(), number("keyGeneratorValue"));
            stores.insert(store_name.to_owned(), Value::Object(m));
        }
        out.insert(name.to_owned(), Value::Object(stores));
    }
    Ok(out)
}

fn add_cookie(cookies: &mut Map, c: &Json) -> Result<(), String> {
    let text = |k: &str| {
        c.get(k)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let flag = |k: &str| Value::Bool(c.get(k).and_then(Json::as_bool).unwrap_or(false));
    let domain = text("domain");
    let name = text("name");
    let path = text("path");
    let mut entry = Map::new();
    entry.insert("value".into(), Value::String(text("value")));
    entry.insert("path".into(), Value::String(path.clone()));
    entry.insert("secure".into(), flag("secure"));
    entry.insert("http_only".into(), flag("httpOnly"));
    entry.insert("session".into(), flag("session"));
    if let Some(s) = c.get("sameSite").and_then(Json::as_str) {
        entry.insert("same_site".into(), Value::String(s.to_owned()));
    }
    let Value::Object(jar) = cookies
        .entry(domain.clone())
        .or_insert_with(|| Value::Object(Map::new()))
    else {
        unreachable!("domains hold objects")
    };
    // A name is unique per (domain, path); the usual path `/` keeps the bare name.
    let key = if path == "/" || path.is_empty() {
        name.clone()
    } else {
        format!("{name} (path {path})")
    };
    if jar.contains_key(&key) {
        return Err(format!(
            "cookie `{name}` of {domain} (path {path}) is set in two browser contexts; name a `context`"
        ));
    }
    jar.insert(key, Value::Object(entry));
    Ok(())
}

/// `scheme://host[:port]` of an http(s) URL, `file://` for a file; `None` for other schemes
/// (about:, data:, chrome:), whose pages hold no storage of their own.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme == "file" {
        return Some(FILE_ORIGIN.to_owned());
    }
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next()?;
    Some(format!("{scheme}://{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert_eq!(
            origin_of("http://127.0.0.1:8080/a?b").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(origin_of("about:blank"), None);
        assert_eq!(
            origin_of("file:///srv/miniwob/click-test.html").as_deref(),
            Some("file://")
        );
        assert_eq!(origin_of("chrome://newtab/"), None);
    }
}
