//! The `files` probe: a directory tree as `relative path -> entry`.
//!
//! ```toml
//! [[layers]]
//! name = "client"
//! probe = "files"
//! path = "cache"          # a directory, relative to the contract file
//! ignore = ["*.tmp"]      # optional globs: `*` and `?` within a name, `**` across `/`
//! ```
//!
//! Every file, directory and symlink under `path` (not `path` itself) is one entry keyed by its
//! `/`-separated relative path, so creation order never matters. A file records `size`,
//! `mode` (permission bits, octal) and `sha256`; a small file (up to [`INLINE_MAX`] bytes)
//! also its content, as `json` when its name ends in `.json` and it parses, else as `text` when
//! it is UTF-8, so that a diff points inside it (`/client/choice.json/json/side`).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use lockstep::probe::{Probe, ProbeSpec};
use lockstep_canon::{Map, Value};
use sha2::{Digest, Sha256};

/// Files up to this size carry their content in the snapshot.
pub const INLINE_MAX: u64 = 64 * 1024;

/// Reads a directory tree.
pub struct FilesProbe;

impl Probe for FilesProbe {
    fn name(&self) -> &'static str {
        "files"
    }

    fn snapshot(&self, spec: &ProbeSpec) -> Result<Value, String> {
        spec.allow_only(&["path", "ignore"])?;
        let root = spec.required_path("path")?;
        let ignore = spec.strings("ignore")?.unwrap_or_default();
        snapshot_dir(&root, &ignore)
    }
}

/// The snapshot of the tree under `root`, leaving out paths matching `ignore`.
pub fn snapshot_dir(root: &Path, ignore: &[String]) -> Result<Value, String> {
    let meta = fs::symlink_metadata(root)
        .map_err(|e| format!("directory missing: {}: {e}", root.display()))?;
    if !meta.is_dir() {
        return Err(format!("not a directory: {}", root.display()));
    }
    let mut out = Map::new();
    walk(root, "", ignore, &mut out)?;
    Ok(Value::Object(out))
}

fn walk(dir: &Path, prefix: &str, ignore: &[String], out: &mut Map) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let name = entry
            .file_name()
            .into_string()
            .map_err(|n| format!("{}: a file name is not UTF-8: {n:?}", dir.display()))?;
        let rel = format!("{prefix}{name}");
        if ignore.iter().any(|g| ignored(g, &rel, &name)) {
            continue;
        }
        let path = entry.path();
        let meta = fs::symlink_metadata(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mode = Value::String(format!("{:04o}", meta.permissions().mode() & 0o7777));
        let mut m = Map::new();
        if meta.is_dir() {
            m.insert("type".into(), Value::from("dir"));
            m.insert("mode".into(), mode);
            out.insert(rel.clone(), Value::Object(m));
            walk(&path, &format!("{rel}/"), ignore, out)?;
            continue;
        }
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path)
                .map_err(|e| format!("cannot read link {}: {e}", path.display()))?;
            m.insert("type".into(), Value::from("symlink"));
            m.insert(
                "target".into(),
                Value::String(target.to_string_lossy().into_owned()),
            );
        } else if meta.is_file() {
            let bytes =
                fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            m.insert("type".into(), Value::from("file"));
            m.insert("mode".into(), mode);
            m.insert("size".into(), Value::from(bytes.len() as u64));
            m.insert(
                "sha256".into(),
                Value::String(hex::encode(Sha256::digest(&bytes))),
            );
            if bytes.len() as u64 <= INLINE_MAX {
                if let Some(v) = name
                    .ends_with(".json")
                    .then(|| lockstep_canon::parse(&bytes).ok())
                    .flatten()
                {
                    m.insert("json".into(), v);
                } else if let Ok(text) = String::from_utf8(bytes) {
                    m.insert("text".into(), Value::String(text));
                }
            }
        } else {
            m.insert("type".into(), Value::from("other"));
            m.insert("mode".into(), mode);
        }
        out.insert(rel, Value::Object(m));
    }
    Ok(())
}

/// A glob with `/` matches the relative path, one without matches the name alone.
fn ignored(glob: &str, rel: &str, name: &str) -> bool {
    let subject = if glob.contains('/') { rel } else { name };
    matches(glob.as_bytes(), subject.as_bytes())
}

/// `*` any run within a name, `**` any run across `/`, `?` one character but `/`.
fn matches(glob: &[u8], s: &[u8]) -> bool {
    match glob {
        [] => s.is_empty(),
        [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| matches(rest, &s[i..])),
        [b'*', rest @ ..] => (0..=s.len())
            .take_while(|&i| i == 0 || s[i - 1] != b'/')
            .any(|i| matches(rest, &s[i..])),
        [b'?', rest @ ..] => !s.is_empty() && s[0] != b'/' && matches(rest, &s[1..]),
        [c, rest @ ..] => !s.is_empty() && s[0] == *c && matches(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(matches(b"*.tmp", b"a.tmp"));
        assert!(!matches(b"*.tmp", b"a.tmpx"));
        assert!(!matches(b"*.tmp", b"d/a.tmp"));
        assert!(matches(b"**/a.tmp", b"d/e/a.tmp"));
        assert!(matches(b"d/?.json", b"d/x.json"));
        assert!(!matches(b"d/?.json", b"d/xy.json"));
        assert!(ignored("*.tmp", "d/a.tmp", "a.tmp"));
        assert!(!ignored("d/*.tmp", "e/a.tmp", "a.tmp"));
    }
}
