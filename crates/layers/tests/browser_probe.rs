//! The `browser` probe against a real headless Chromium (Debian's package; scripts/test
//! installs it). A missing Chromium fails these tests with the install command.
mod common;

use std::time::Duration;

use common::{changed, closed_port, snapshot, spec, TestServer};
use lockstep_layers::cdp::Cdp;
use lockstep_layers::chromium::Chromium;
use serde_json::json;

fn launch() -> (Chromium, Cdp) {
    let browser = Chromium::launch(Duration::from_secs(30)).unwrap_or_else(|e| panic!("{e}"));
    let cdp = Cdp::connect(&browser.endpoint(), Duration::from_secs(10)).unwrap();
    (browser, cdp)
}

fn cookie(name: &str, value: &str) -> serde_json::Value {
    json!({"name": name, "value": value, "domain": "127.0.0.1", "path": "/"})
}

#[test]
fn cookie_order_never_matters_and_a_change_is_located() {
    let (browser, mut cdp) = launch();
    let s = spec("browser", &[("cdp", json!(browser.endpoint()))]);
    let empty = snapshot("browser", &s).unwrap();
    assert_eq!(
        lockstep_canon::to_vec(&empty, lockstep_canon::Profile::Python).unwrap(),
        br#"{"cookies":{},"indexed_db":{},"local_storage":{},"pages":["about:blank"],"session_storage":{}}"#
    );
    cdp.call(
        "Storage.setCookies",
        json!({"cookies": [cookie("a", "1"), cookie("previous_run", "true")]}),
    )
    .unwrap();
    let first = snapshot("browser", &s).unwrap();
    cdp.call("Storage.clearCookies", json!({})).unwrap();
    cdp.call(
        "Storage.setCookies",
        json!({"cookies": [cookie("previous_run", "true"), cookie("a", "1")]}),
    )
    .unwrap();
    assert_eq!(snapshot("browser", &s).unwrap(), first);
    assert_eq!(
        first.pointer("/cookies/127.0.0.1/previous_run/value"),
        Some(&"true".into())
    );
    cdp.call(
        "Storage.setCookies",
        json!({"cookies": [cookie("previous_run", "false")]}),
    )
    .unwrap();
    assert_eq!(
        changed(&first, &snapshot("browser", &s).unwrap()),
        ["/cookies/127.0.0.1/previous_run/value"]
    );
}

#[test]
fn storage_is_read_per_origin_and_contexts_apart() {
    let (browser, mut cdp) = launch();
    let page = TestServer::start(200, "text/html", "<html><body>page</body></html>");
    let ctx = cdp.call("Target.createBrowserContext", json!({})).unwrap()["browserContextId"]
        .as_str()
        .unwrap()
        .to_string();
    let session = open_page(&mut cdp, &page.url(), Some(&ctx));
    cdp.call_in(
        Some(&session),
        "Runtime.evaluate",
        json!({"expression": "localStorage.setItem('theme', 'dark'); sessionStorage.setItem('step', '2'); document.cookie = 'seen=1; path=/'"}),
    )
    .unwrap();
    let origin = format!("http://127.0.0.1:{}", page.port);
    let only = spec(
        "browser",
        &[("cdp", json!(browser.endpoint())), ("context", json!(ctx))],
    );
    let s = snapshot("browser", &only).unwrap();
    let theme = format!("/local_storage/{origin}/theme").replace("~", "~0");
    assert_eq!(
        s.pointer(&theme.replacen(&origin, &origin.replace('/', "~1"), 1)),
        Some(&"dark".into()),
        "{s:?}"
    );
    let step = format!("/session_storage/{}/step", origin.replace('/', "~1"));
    assert_eq!(s.pointer(&step), Some(&"2".into()), "{s:?}");
    assert_eq!(
        s.pointer("/cookies/127.0.0.1/seen/value"),
        Some(&"1".into())
    );
    // The default context holds nothing of it.
    let default = spec("browser", &[("cdp", json!(browser.endpoint()))]);
    let all = snapshot("browser", &default).unwrap();
    assert_eq!(
        all.pointer("/cookies/127.0.0.1/seen/value"),
        Some(&"1".into()),
        "all contexts"
    );
    cdp.call(
        "Target.disposeBrowserContext",
        json!({"browserContextId": ctx}),
    )
    .unwrap();
    let after = snapshot("browser", &default).unwrap();
    assert!(after.pointer("/cookies/127.0.0.1").is_none(), "{after:?}");
}

/// Opens `url` in a new page (of `context`, else the default context) and waits until it has
/// loaded; the page's DevTools session. A freshly launched browser on a loaded machine can
/// take seconds to load a page: up to 3,000 looks 10 ms apart (counted, as the wall clock is
/// off limits).
fn open_page(cdp: &mut Cdp, url: &str, context: Option<&str>) -> String {
    let params = match context {
        Some(c) => json!({"url": url, "browserContextId": c}),
        None => json!({"url": url}),
    };
    let target = cdp.call("Target.createTarget", params).unwrap()["targetId"]
        .as_str()
        .unwrap()
        .to_string();
    let session = cdp
        .call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        )
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    for _ in 0..3000 {
        let v = cdp
            .call_in(Some(&session), "Runtime.evaluate", json!({"expression": "document.readyState === 'complete' && location.href", "returnByValue": true}))
            .unwrap();
        if v.pointer("/result/value").and_then(|v| v.as_str()) == Some(url) {
            return session;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{url} did not load");
}

/// Issue 30: a MiniWoB page is a `file://` page. Its storage is read (Chromium keeps one
/// `file://` origin), or named as not readable: never silently empty. IndexedDB is read as
/// its databases, stores and record counts; the open pages' URLs are part of the state.
#[test]
fn a_file_page_its_storage_indexed_db_and_url_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("task.html");
    std::fs::write(&html, "<html><body>task</body></html>").unwrap();
    let url = format!("file://{}", html.display());
    let (browser, mut cdp) = launch();
    let session = open_page(&mut cdp, &url, None);
    let script = "localStorage.setItem('done', '1'); new Promise(ok => { const r = indexedDB.open('app', 1); r.onupgradeneeded = () => r.result.createObjectStore('visits', {autoIncrement: true}); r.onsuccess = () => { const t = r.result.transaction('visits', 'readwrite'); t.objectStore('visits').add({n: 1}); t.objectStore('visits').add({n: 2}); t.oncomplete = () => ok('ok'); t.onerror = () => ok('error ' + t.error); }; r.onerror = () => ok('error ' + r.error); })";
    let done = cdp
        .call_in(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": script, "awaitPromise": true, "returnByValue": true}),
        )
        .unwrap();
    let s = snapshot(
        "browser",
        &spec("browser", &[("cdp", json!(browser.endpoint()))]),
    )
    .unwrap();
    // Sorted URLs of every open page (the launch's blank page too).
    assert_eq!(
        s.pointer("/pages"),
        Some(&lockstep_canon::Value::Array(vec![
            "about:blank".into(),
            url.clone().into()
        ])),
        "{s:?}"
    );
    match s.pointer("/not_readable/file:~1~1") {
        None => {
            assert_eq!(
                s.pointer("/local_storage/file:~1~1/done"),
                Some(&"1".into()),
                "{s:?}"
            );
            assert_eq!(done.pointer("/result/value"), Some(&json!("ok")), "{done}");
            let visits = s
                .pointer("/indexed_db/file:~1~1/app/visits")
                .unwrap_or_else(|| panic!("{s:?}"));
            assert_eq!(visits.pointer("/entries"), Some(&2i64.into()), "{s:?}");
        }
        Some(why) => {
            // A Chromium that will not name the file:// origin: the reason, never `{}`.
            assert!(
                why.as_str().unwrap().starts_with("DevTools cannot read"),
                "{why:?}"
            );
        }
    }
}

#[test]
fn failures_name_layer_probe_and_cause() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let err = snapshot("browser", &spec("browser", &[("cdp", json!(url))])).unwrap_err();
    assert!(
        err.starts_with("layer `browser` (probe browser): DevTools not answering"),
        "{err}"
    );
    let not_devtools = TestServer::start(200, "text/html", "<html>");
    let err = snapshot(
        "browser",
        &spec("browser", &[("cdp", json!(not_devtools.url()))]),
    )
    .unwrap_err();
    assert!(err.contains("/json/version is not JSON"), "{err}");
    let (browser, _cdp) = launch();
    let bad = spec(
        "browser",
        &[
            ("cdp", json!(browser.endpoint())),
            ("context", json!("NOPE")),
        ],
    );
    let err = snapshot("browser", &bad).unwrap_err();
    assert!(err.contains("Storage.getCookies"), "{err}");
}

#[test]
fn chromium_dies_with_its_guard() {
    let (browser, _cdp) = launch();
    let pid = browser.pid() as i32;
    drop(browser);
    // The group was sent SIGKILL; its last members may take a moment to be reaped.
    let mut alive = true;
    for _ in 0..500 {
        // SAFETY: signal 0 only asks whether the process group exists.
        alive = unsafe { libc::kill(-pid, 0) } == 0;
        if !alive {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !alive,
        "Chromium's process group {pid} outlived its guard by 5 s"
    );
}
