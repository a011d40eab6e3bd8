//! What an env touched outside its process (docs/contract.md, "Effects"): recorded by the
//! adapter whether or not a check fails, and warned about unless the reset contract names the
//! layer. The seed document's lesson is that the layers that matter must be identified before
//! they can be reset; this is the env identifying them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::display_path;
use crate::contract::Contract;

/// One kind of effect at one site of the env's code, with how often.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effect {
    /// `make`, `reset` or `step`.
    pub phase: String,
    /// `file_read`, `file_write`, `file_delete`, `file_rename`, `directory_create`, `sqlite`,
    /// `socket`, `http`, `subprocess`.
    pub kind: String,
    /// What was touched, as people read it: `~/.cache/walker/layout.json`,
    /// `http://127.0.0.1:8080`, `git status`.
    pub target: String,
    /// The absolute path of a file or database: for the contract's layers and `contract
    /// infer`, never written to a report (a private home's path changes with every run).
    #[serde(default, skip_serializing)]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(default = "super::one")]
    pub count: u64,
    /// The layer the env names that this effect belongs to (a browser it launched at a
    /// reset, that browser's profile directory, requests to its DevTools endpoint): read by
    /// lockstep after every reset, so never a warning and never a proposed layer. Set by the
    /// adapter, which knows where the env's layers are (docs/protocol.md, "Effects").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
}

impl Effect {
    /// The verb of the warning: `wrote`, `connected to`, ...
    fn verb(&self) -> &'static str {
        match self.kind.as_str() {
            "file_read" => "read",
            "file_write" => "wrote",
            "file_delete" => "deleted",
            "file_rename" => "renamed",
            "directory_create" => "created the directory",
            "sqlite" => "opened the SQLite database",
            "socket" => "connected to",
            "http" => "made an HTTP request to",
            "subprocess" => "ran",
            _ => "touched",
        }
    }

    /// Whether the effect leaves state behind that a later reset could find. Reads do not:
    /// they are listed (a file read may be a cache another run wrote) but not warned about;
    /// nor does anything done to a device that keeps nothing (`/dev/null`, a terminal), which
    /// a browser or a subprocess's plumbing opens at every launch. `/dev/shm` keeps files.
    pub fn leaves_state(&self) -> bool {
        self.kind != "file_read" && !keeps_nothing(self.path.as_deref().unwrap_or(&self.target))
    }

    /// `envs/grid.py:42 in reset`, when the site is known.
    pub fn site(&self, cwd: Option<&Path>) -> Option<String> {
        let file = display_path(self.file.as_deref()?, cwd);
        let mut s = match self.line {
            Some(l) => format!("{file}:{l}"),
            None => file,
        };
        if let Some(f) = &self.function {
            s.push_str(" in ");
            s.push_str(f);
        }
        Some(s)
    }

    /// `the env wrote ~/.cache/foo/level.json during reset (envs/grid.py:42 in reset)`.
    pub fn sentence(&self, cwd: Option<&Path>) -> String {
        let during = match self.phase.as_str() {
            "make" => "while it was made".to_string(),
            p => format!("during {p}"),
        };
        let target = if matches!(self.kind.as_str(), "http" | "socket") {
            loopback_port_hidden(&self.target)
        } else {
            self.target.clone()
        };
        let mut s = format!("the env {} {target} {during}", self.verb());
        if self.count > 1 {
            s.push_str(&format!(" ({} times)", self.count));
        }
        if let Some(site) = self.site(cwd) {
            s.push_str(&format!(" ({site})"));
        }
        s
    }
}

/// Devices whose writes no later open can see.
fn keeps_nothing(path: &str) -> bool {
    const DEVICES: [&str; 7] = [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/tty",
        "/dev/ptmx",
    ];
    DEVICES.contains(&path)
        || ["/dev/fd/", "/dev/pts/", "/dev/std", "/proc/self/fd/"]
            .iter()
            .any(|p| path.starts_with(p))
}

/// The paths a contract's probed layers read (a `files` directory, a `sqlite` file), resolved.
fn probed_paths(contract: &Contract) -> Vec<PathBuf> {
    contract
        .layers
        .iter()
        .filter_map(|l| l.probe.as_ref())
        .filter(|p| p.probe == "files" || p.probe == "sqlite")
        .filter_map(|p| {
            let path = p.settings.get("path")?.as_str()?;
            Some(p.base_dir.join(path))
        })
        .collect()
}

/// Whether a layer of `contract` names what `e` touched: a probed file or directory holding
/// its path, an `http`/`postgres` probe of its endpoint.
fn named_by(contract: &Contract, e: &Effect) -> bool {
    if let Some(path) = &e.path {
        let path = Path::new(path);
        if probed_paths(contract)
            .iter()
            .any(|p| path.starts_with(p) || p == path)
        {
            return true;
        }
    }
    contract
        .layers
        .iter()
        .filter_map(|l| l.probe.as_ref())
        .filter_map(|p| p.settings.get("url")?.as_str())
        .any(|url| !e.target.is_empty() && url.contains(e.target.trim_start_matches("http://")))
}

impl Effect {
    /// The effect as a report keeps it, the same bytes in every run: the env's file as the
    /// report shows files (relative to the working directory), and a loopback endpoint's port
    /// (a server the env starts on a free port) as `<port>`.
    pub fn for_report(mut self, cwd: Option<&Path>) -> Effect {
        if let Some(f) = &self.file {
            self.file = Some(display_path(f, cwd));
        }
        if matches!(self.kind.as_str(), "http" | "socket") {
            self.target = loopback_port_hidden(&self.target);
        }
        self
    }
}

/// `http://127.0.0.1:37853/x` -> `http://127.0.0.1:<port>/x`; other endpoints unchanged.
pub(crate) fn loopback_port_hidden(target: &str) -> String {
    let (scheme, rest) = match target.find("://") {
        Some(i) => (&target[..i + 3], &target[i + 3..]),
        None => ("", target),
    };
    let host_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(host_end);
    let Some(colon) = authority.rfind(':') else {
        return target.to_string();
    };
    let host = authority[..colon]
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = host == "localhost" || host.starts_with("127.") || host == "::1";
    if !loopback || !authority[colon + 1..].chars().all(|c| c.is_ascii_digit()) {
        return target.to_string();
    }
    format!("{scheme}{}:<port>{path}", &authority[..colon])
}

/// The warnings of a trial: every effect that leaves state behind and that no layer of
/// `contract` or of the env names, one line each.
pub fn effect_warnings(effects: &[Effect], contract: Option<&Contract>) -> Vec<String> {
    let cwd = std::env::current_dir().ok();
    effects
        .iter()
        .filter(|e| e.leaves_state() && e.layer.is_none())
        .filter(|e| !contract.is_some_and(|c| named_by(c, e)))
        .map(|e| {
            format!(
                "{}: state outside the process that the reset contract does not name",
                e.sentence(cwd.as_deref())
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(kind: &str, target: &str) -> Effect {
        Effect {
            phase: "reset".into(),
            kind: kind.into(),
            target: target.into(),
            path: Some(target.into()),
            file: None,
            line: None,
            function: None,
            count: 1,
            layer: None,
        }
    }

    #[test]
    fn an_effect_of_a_layer_the_env_names_is_no_warning() {
        let launch = "/usr/bin/chromium --remote-debugging-port=<port> --user-data-dir=<profile>";
        let mut named = vec![
            effect("subprocess", launch),
            effect("directory_create", "<profile>"),
            effect("http", "http://127.0.0.1:<port>"),
        ];
        for e in &mut named {
            e.layer = Some("browser".into());
        }
        assert!(effect_warnings(&named, None).is_empty());
        let unnamed = effect("subprocess", launch);
        let warned = effect_warnings(std::slice::from_ref(&unnamed), None);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0].starts_with("the env ran /usr/bin/chromium"),
            "{warned:?}"
        );
    }

    #[test]
    fn a_device_that_keeps_nothing_is_no_state_and_shared_memory_is() {
        assert!(!effect("file_write", "/dev/null").leaves_state());
        assert!(!effect("file_write", "/dev/pts/3").leaves_state());
        assert!(!effect("file_read", "/home/u/.cache/x").leaves_state());
        assert!(effect("file_write", "/dev/shm/arena").leaves_state());
        assert!(effect("file_write", "/home/u/.cache/x").leaves_state());
        assert!(effect("file_write", "/dev/nullish").leaves_state());
    }

    #[test]
    fn a_loopback_port_is_hidden_and_other_endpoints_kept() {
        assert_eq!(
            loopback_port_hidden("http://127.0.0.1:37853"),
            "http://127.0.0.1:<port>"
        );
        assert_eq!(
            loopback_port_hidden("http://localhost:8080/state"),
            "http://localhost:<port>/state"
        );
        assert_eq!(loopback_port_hidden("[::1]:9"), "[::1]:<port>");
        assert_eq!(
            loopback_port_hidden("http://example.org:8080"),
            "http://example.org:8080"
        );
        assert_eq!(loopback_port_hidden("10.0.0.1:5432"), "10.0.0.1:5432");
    }
}
