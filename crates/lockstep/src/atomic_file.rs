//! Files lockstep writes (reports, goldens) appear whole or not at all.
//!
//! The bytes go to a temporary file in the target's own directory (same filesystem), are
//! flushed to disk, then renamed over the target: a crash or a full disk leaves the old file
//! intact, never a truncated one.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically, creating parent directories as needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    written_temp(path, bytes)?
        .persist(path)
        .map_err(|e| e.error)?;
    Ok(())
}

/// Like [`write_atomic`], but never replaces an existing file: when `path` exists (even if
/// it appeared after a caller checked), the error has kind
/// [`std::io::ErrorKind::AlreadyExists`] and the existing file is left untouched. For files
/// that must only ever be created, such as a newly recorded golden.
pub fn write_atomic_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    written_temp(path, bytes)?
        .persist_noclobber(path)
        .map_err(|e| e.error)?;
    Ok(())
}

/// A synced temporary file holding `bytes` in `path`'s directory (created as needed).
fn written_temp(path: &Path, bytes: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_creates_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/report.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let leftovers = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file is left behind");
    }

    #[test]
    fn new_file_write_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/golden.json");
        write_atomic_new(&path, b"first").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        let err = write_atomic_new(&path, b"second").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        let leftovers = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file is left behind");
    }
}
