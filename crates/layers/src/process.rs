//! Child processes that never outlive their owner: each runs in a process group of its own
//! (so its children, such as Chromium's renderers, go with it), is killed with its group when
//! the guard drops, and is killed by the kernel when the thread that started it dies, even if
//! the owning process is killed (`PR_SET_PDEATHSIG`).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// A running child process, killed with its process group on drop.
#[derive(Debug)]
pub struct ChildGuard {
    child: Child,
    what: String,
}

impl ChildGuard {
    /// Starts `command` in a new process group, to die with the calling thread.
    pub fn spawn(mut command: Command, what: &str) -> Result<ChildGuard, String> {
        command.process_group(0);
        // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        Ok(ChildGuard {
            child,
            what: what.to_owned(),
        })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// `Some(status text)` when the process has already ended.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!("{} exited ({status})", self.what)),
            Ok(None) => None,
            Err(e) => Some(format!("{}: {e}", self.what)),
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: signals our own process group; a group already gone is ESRCH, ignored.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// The monotonic clock, read only to bound how long this crate waits for a process or a
/// DevTools answer: an elapsed time never reaches a snapshot, a trace or a report (errors name
/// the configured timeout).
#[allow(clippy::disallowed_methods)]
pub fn monotonic_now() -> std::time::Instant {
    std::time::Instant::now()
}
