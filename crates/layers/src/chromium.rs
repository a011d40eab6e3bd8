//! A headless Chromium (Debian's package) with a fresh, empty profile, its DevTools endpoint
//! on a loopback port Chromium picks itself (`--remote-debugging-port=0`, read back from the
//! profile's `DevToolsActivePort`: no race for a free port). The process and its children are
//! killed when the [`Chromium`] drops, or when this process dies
//! ([`crate::process`]).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::process::ChildGuard;

/// The command that installs the browser, for error messages.
pub const INSTALL_HINT: &str =
    "install Debian's package as root: `apt-get install chromium` (or set LOCKSTEP_CHROMIUM to a Chromium binary)";

/// A running headless Chromium.
#[derive(Debug)]
pub struct Chromium {
    // Field order: the process dies before its profile directory is removed.
    process: ChildGuard,
    port: u16,
    _profile: tempfile::TempDir,
}

/// The Chromium binary: `$LOCKSTEP_CHROMIUM`, else `/usr/bin/chromium`, else `chromium` on
/// the `PATH`.
pub fn binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("LOCKSTEP_CHROMIUM") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "LOCKSTEP_CHROMIUM={} is not a file; Chromium is needed: {INSTALL_HINT}",
                p.display()
            ))
        };
    }
    let debian = PathBuf::from("/usr/bin/chromium");
    if debian.is_file() {
        return Ok(debian);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("Chromium is not installed: {INSTALL_HINT}"))
}

impl Chromium {
    /// Starts Chromium and waits (up to `timeout`) for its DevTools endpoint.
    pub fn launch(timeout: Duration) -> Result<Chromium, String> {
        let bin = binary()?;
        let profile = tempfile::Builder::new()
            .prefix("lockstep-chromium-")
            .tempdir()
            .map_err(|e| format!("cannot create a Chromium profile directory: {e}"))?;
        let log = std::fs::File::create(profile.path().join("stderr.log"))
            .map_err(|e| format!("cannot create Chromium's log: {e}"))?;
        let mut command = Command::new(&bin);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!(
                "--user-data-dir={}",
                profile.path().join("profile").display()
            ))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let mut process = ChildGuard::spawn(command, &format!("Chromium ({})", bin.display()))?;
        let port_file = profile.path().join("profile").join("DevToolsActivePort");
        let started = crate::process::monotonic_now();
        loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                if let Some(port) = text
                    .lines()
                    .next()
                    .and_then(|l| l.trim().parse::<u16>().ok())
                {
                    return Ok(Chromium {
                        process,
                        port,
                        _profile: profile,
                    });
                }
            }
            if let Some(exit) = process.exited() {
                let log =
                    std::fs::read_to_string(profile.path().join("stderr.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(5).collect();
                return Err(format!(
                    "{exit} before opening DevTools; last lines of its stderr: {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ));
            }
            if started.elapsed() > timeout {
                return Err(format!(
                    "Chromium did not open DevTools within {:.0} s",
                    timeout.as_secs_f64()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `http://127.0.0.1:PORT`, the endpoint [`crate::cdp::Cdp::connect`] and the browser
    /// probe's `cdp` setting take.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The browser's process id (its process group's id too).
    pub fn pid(&self) -> u32 {
        self.process.id()
    }
}
