//! Private, fresh home, temp, XDG and working directories for every process lockstep starts.
//!
//! An env that caches its first generated level under `~/.cache/` gives every later process
//! that level: a verdict would then depend on what the last run left on the machine (two runs
//! of one command, two answers). So every external env's child, every `lockstep trace` child
//! of the other-process check and every `lockstep worker` gets directories of its own, made
//! empty at its start and removed when it ends:
//!
//! - `HOME`, `TMPDIR` (and `TMP`, `TEMP`), `XDG_CONFIG_HOME`, `XDG_CACHE_HOME`,
//!   `XDG_DATA_HOME`, `XDG_STATE_HOME`, `XDG_RUNTIME_DIR` point into one temporary directory;
//! - the working directory is an empty directory there too (for an env's child; a worker
//!   keeps the caller's, where the user's relative paths mean what they typed);
//! - what must keep working does: `PYTHONUSERBASE` keeps the user's packages (Python derives it
//!   from `HOME`), `PYTHONPATH` entries become absolute, the caller's working directory goes
//!   first on `PYTHONPATH` (where `python -m` found the user's modules), and a relative program
//!   or argument naming an existing file or directory is made absolute.
//!
//! A run that needs the real ones opts out (`lockstep check --shared-dirs`); the leftover check
//! then does not apply.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variables pointed into the private directory: (variable, subdirectory).
pub const VARIABLES: [(&str, &str); 9] = [
    ("HOME", "home"),
    ("TMPDIR", "tmp"),
    ("TMP", "tmp"),
    ("TEMP", "tmp"),
    ("XDG_CONFIG_HOME", "home/.config"),
    ("XDG_CACHE_HOME", "home/.cache"),
    ("XDG_DATA_HOME", "home/.local/share"),
    ("XDG_STATE_HOME", "home/.local/state"),
    ("XDG_RUNTIME_DIR", "run"),
];

/// One set of private directories, removed when dropped (after the processes using it ended:
/// their owner drops it last).
#[derive(Debug)]
pub struct PrivateDirs {
    root: tempfile::TempDir,
}

impl PrivateDirs {
    /// Fresh, empty directories under this process's temp directory.
    pub fn new() -> io::Result<PrivateDirs> {
        let root = tempfile::Builder::new()
            .prefix("lockstep-dirs-")
            .tempdir()?;
        for (_, sub) in VARIABLES {
            std::fs::create_dir_all(root.path().join(sub))?;
        }
        std::fs::create_dir_all(root.path().join("work"))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            // The runtime directory must be the user's alone (the XDG base directory spec).
            std::fs::set_permissions(
                root.path().join("run"),
                std::fs::Permissions::from_mode(0o700),
            )?;
        }
        Ok(PrivateDirs { root })
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The empty working directory of an env's child.
    pub fn work_dir(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// The variables a child gets, in [`VARIABLES`] order, then `PYTHONUSERBASE` and
    /// `PYTHONPATH` as the module doc says (`caller_dir`: the caller's working directory).
    pub fn vars(&self, caller_dir: &Path) -> Vec<(String, OsString)> {
        let mut vars: Vec<(String, OsString)> = VARIABLES
            .iter()
            .map(|(k, sub)| (k.to_string(), self.root.path().join(sub).into_os_string()))
            .collect();
        if std::env::var_os("PYTHONUSERBASE").is_none() {
            if let Some(home) = std::env::var_os("HOME") {
                let base = Path::new(&home).join(".local");
                vars.push(("PYTHONUSERBASE".into(), base.into_os_string()));
            }
        }
        vars.push(("PYTHONPATH".into(), python_path(caller_dir)));
        vars
    }

    /// Points `cmd` at these directories: the variables, and the empty working directory when
    /// `own_work_dir` (an env's child), with relative paths in its command line made absolute.
    pub fn apply(&self, cmd: &mut Command, own_work_dir: bool) {
        let caller_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        cmd.envs(self.vars(&caller_dir));
        if own_work_dir {
            cmd.current_dir(self.work_dir());
        }
    }
}

/// `PYTHONPATH` for a child whose working directory moved: the caller's directory first, then
/// the caller's entries, each made absolute.
fn python_path(caller_dir: &Path) -> OsString {
    python_path_from(std::env::var_os("PYTHONPATH").as_deref(), caller_dir)
}

/// `value` (a `PYTHONPATH` given to a child) for a child whose working directory moved: the
/// caller's directory first, then the entries of `value`, each made absolute.
pub fn python_path_from(value: Option<&OsStr>, caller_dir: &Path) -> OsString {
    let mut entries = vec![caller_dir.to_path_buf()];
    if let Some(old) = value {
        entries.extend(
            std::env::split_paths(&old)
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| caller_dir.join(p)),
        );
    }
    std::env::join_paths(entries).unwrap_or_else(|_| caller_dir.as_os_str().to_owned())
}

/// `arg` made absolute against `caller_dir` when it is a relative path to something that
/// exists there (a script, a config file, the program `./env.sh`); anything else unchanged.
pub fn absolute_arg(arg: &str, caller_dir: &Path) -> String {
    let path = Path::new(arg);
    if arg.starts_with('-') || path.is_absolute() || !caller_dir.join(path).exists() {
        return arg.to_string();
    }
    // A bare word that is also a program on PATH (`python`) stays a word unless it names a
    // file here with a path separator.
    if !arg.contains('/') && Path::new(arg).components().count() == 1 && is_program(arg) {
        return arg.to_string();
    }
    caller_dir.join(path).to_string_lossy().into_owned()
}

fn is_program(word: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| dir.join(OsStr::new(word)).is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_points_into_fresh_empty_directories() {
        let a = PrivateDirs::new().unwrap();
        let b = PrivateDirs::new().unwrap();
        assert_ne!(a.root(), b.root());
        let vars = a.vars(Path::new("/somewhere"));
        for (name, _) in VARIABLES {
            let (_, v) = vars.iter().find(|(k, _)| k == name).unwrap();
            let p = Path::new(v);
            assert!(p.starts_with(a.root()) && p.is_dir(), "{name}: {p:?}");
            let empty = std::fs::read_dir(p).unwrap().count() == 0;
            assert_eq!(empty, name != "HOME", "{name}");
        }
        let (_, pp) = vars.iter().find(|(k, _)| k == "PYTHONPATH").unwrap();
        assert!(std::env::split_paths(pp).next() == Some(PathBuf::from("/somewhere")));
        let root = a.root().to_path_buf();
        drop(a);
        assert!(!root.exists(), "removed when dropped");
    }

    #[test]
    fn relative_paths_that_exist_become_absolute() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("env.py"), "").unwrap();
        let abs = dir.path().join("env.py").to_string_lossy().into_owned();
        assert_eq!(absolute_arg("env.py", dir.path()), abs);
        assert_eq!(
            absolute_arg("./env.py", dir.path()),
            dir.path().join("./env.py").to_string_lossy()
        );
        assert_eq!(absolute_arg("CartPole-v1", dir.path()), "CartPole-v1");
        assert_eq!(absolute_arg("--kwargs", dir.path()), "--kwargs");
        assert_eq!(absolute_arg("/bin/sh", dir.path()), "/bin/sh");
    }
}
