//! The `files` probe on real directories.
mod common;

use common::{changed, snapshot, spec};
use serde_json::json;

fn dir_spec(dir: &std::path::Path) -> lockstep::probe::ProbeSpec {
    spec(
        "files",
        &[
            ("path", json!(dir.display().to_string())),
            ("ignore", json!(["*.tmp"])),
        ],
    )
}

#[test]
fn creation_order_never_matters() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (dir, order) in [
        (&a, ["x.txt", "choice.json"]),
        (&b, ["choice.json", "x.txt"]),
    ] {
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for name in order {
            let body = if name.ends_with(".json") {
                "{\"side\": \"left\"}"
            } else {
                "hello"
            };
            std::fs::write(dir.path().join(name), body).unwrap();
        }
        std::fs::write(dir.path().join("sub/scratch.tmp"), "ignored").unwrap();
    }
    let sa = snapshot("client", &dir_spec(a.path())).unwrap();
    let sb = snapshot("client", &dir_spec(b.path())).unwrap();
    assert_eq!(sa, sb);
    assert_eq!(sa.pointer("/choice.json/json/side"), Some(&"left".into()));
    assert_eq!(sa.pointer("/x.txt/text"), Some(&"hello".into()));
    assert_eq!(sa.pointer("/sub/type"), Some(&"dir".into()));
    assert!(sa.get("sub/scratch.tmp").is_none(), "ignored: {sa:?}");
}

#[test]
fn a_change_is_located_inside_the_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("choice.json"), "{\"side\": \"left\"}").unwrap();
    let before = snapshot("client", &dir_spec(d.path())).unwrap();
    std::fs::write(d.path().join("choice.json"), "{\"side\": \"rite\"}").unwrap();
    let after = snapshot("client", &dir_spec(d.path())).unwrap();
    assert_eq!(
        changed(&before, &after),
        ["/choice.json/json/side", "/choice.json/sha256"]
    );
}

#[test]
fn failures_name_layer_probe_and_cause() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope");
    let err = snapshot("client", &dir_spec(&missing)).unwrap_err();
    assert!(
        err.starts_with("layer `client` (probe files): directory missing"),
        "{err}"
    );
    std::fs::write(d.path().join("f"), "x").unwrap();
    let err = snapshot("client", &dir_spec(&d.path().join("f"))).unwrap_err();
    assert!(err.contains("not a directory"), "{err}");
    let err = snapshot("client", &spec("files", &[])).unwrap_err();
    assert!(err.contains("setting `path` is missing"), "{err}");
    let err = snapshot(
        "client",
        &spec("files", &[("path", json!(".")), ("ignroe", json!([]))]),
    )
    .unwrap_err();
    assert!(err.contains("unknown setting `ignroe`"), "{err}");
}
