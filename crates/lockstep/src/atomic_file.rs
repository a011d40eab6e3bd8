//! Files lockstep writes (reports, goldens) appear whole or not at all.
//!
//! The bytes go to a temporary file in the target's own directory (same filesystem), are
//! flushed to disk, then renamed over the target: a crash or a full disk leaves the old file
//! intact, never a truncated one. What a user set up around the file is kept:
//! - the mode of the file replaced (a new file gets 0644 less the umask, as `>` would give,
//!   not the 0600 of a temporary file);
//! - a symbolic link: the write goes to the file it points to, the link stays a link;
//! - temporaries are named `.NAME.lockstep-tmp-XXXXXX`, so they are recognisable (and ignored
//!   by the project's .gitignore); one left by a killed writer more than an hour ago is
//!   removed by the next write of the same file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Reads the file at `path`, refusing one larger than `limit` bytes (an error of kind
/// `InvalidData` naming the limit). Files lockstep reads back (goldens, reports) go through
/// this, so that a wrong path such as /dev/zero cannot fill the memory.
pub fn read_limited(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the limit of {limit} bytes"),
        ));
    }
    Ok(bytes)
}

/// Temporaries older than this are a killed writer's leftovers.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// Writes `bytes` to `path` atomically, creating parent directories as needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = resolve_links(path)?;
    written_temp(&target, bytes)?
        .persist(&target)
        .map_err(|e| e.error)?;
    Ok(())
}

/// Like [`write_atomic`], but never replaces an existing file: when `path` exists (even if
/// it appeared after a caller checked), the error has kind
/// [`std::io::ErrorKind::AlreadyExists`] and the existing file is left untouched. For files
/// that must only ever be created, such as a newly recorded golden.
pub fn write_atomic_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if path.symlink_metadata().is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{} exists", path.display()),
        ));
    }
    written_temp(path, bytes)?
        .persist_noclobber(path)
        .map_err(|e| e.error)?;
    Ok(())
}

/// The file a write of `path` must replace: `path` itself, or the end of its chain of links.
fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(std::io::Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

/// A synced temporary file holding `bytes` in `path`'s directory (created as needed), with
/// the mode the file at `path` will have.
fn written_temp(path: &Path, bytes: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.lockstep-tmp-");
    remove_stale(dir, &prefix);
    let mut tmp = tempfile::Builder::new().prefix(&prefix).tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    set_mode(tmp.as_file(), path)?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

#[cfg(unix)]
fn set_mode(file: &std::fs::File, target: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = match std::fs::metadata(target) {
        Ok(m) => m.permissions().mode() & 0o7777,
        Err(_) => 0o666 & !umask(),
    };
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &std::fs::File, _target: &Path) -> std::io::Result<()> {
    Ok(())
}

/// The process's umask, read without changing it (`umask(2)` can only be read by setting it,
/// which would race with other threads creating files); 022 where it cannot be read.
#[cfg(unix)]
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// Removes temporaries of the same target older than [`STALE_AFTER`]; best effort.
fn remove_stale(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
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

    /// Issue 9: files were created 0600, and an update turned a 0644 golden into 0600.
    #[cfg(unix)]
    #[test]
    fn issue9_modes_are_kept_and_new_files_follow_the_umask() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.json");
        write_atomic(&path, b"one").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o666 & !umask());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(mode(&path), 0o640);
        let fresh = dir.path().join("new.json");
        write_atomic_new(&fresh, b"x").unwrap();
        assert_eq!(mode(&fresh), 0o666 & !umask());
    }

    /// Issue 9: updating a golden through a symlink replaced the link with a plain file.
    #[cfg(unix)]
    #[test]
    fn issue9_writes_go_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert!(matches!(
            write_atomic_new(&link, b"x").map_err(|e| e.kind()),
            Err(std::io::ErrorKind::AlreadyExists)
        ));
    }

    /// Issue 9: a kill during a write left a `.tmpXXXXXX` beside the golden, which `git add`
    /// picked up. Temporaries are named after their target and stale ones removed.
    #[test]
    fn issue9_stale_temporaries_are_recognisable_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.json");
        let stale = dir.path().join(".g.json.lockstep-tmp-abc123");
        std::fs::write(&stale, b"half").unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        std::fs::File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let fresh = dir.path().join(".g.json.lockstep-tmp-def456");
        std::fs::write(&fresh, b"another writer's").unwrap();
        write_atomic(&path, b"whole").unwrap();
        assert!(!stale.exists(), "a stale temporary is removed");
        assert!(fresh.exists(), "a recent one may be another writer's: kept");
    }
}
