//! Child processes that never outlive their owner: each runs in a process group of its own
//! (so its children, such as Chromium's renderers, go with it), is killed with its group when
//! the guard drops, and is killed by the kernel when the owning process dies, however it dies
//! (`PR_SET_PDEATHSIG`).
//!
//! The kernel ties `PR_SET_PDEATHSIG` to the *thread* that forked the child, not the process.
//! So every child is forked by one spawner thread that lives as long as the process: a child
//! made from a short-lived worker thread must not be killed when that worker ends.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::{mpsc, Mutex};

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

static SPAWNER: Mutex<Option<mpsc::Sender<SpawnRequest>>> = Mutex::new(None);

/// Spawns `command` from the process-long spawner thread (started on first use).
fn spawn_from_spawner(command: Command) -> std::io::Result<Child> {
    let requests = {
        let mut slot = SPAWNER.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_ref() {
            Some(tx) => tx.clone(),
            None => {
                let (tx, rx) = mpsc::channel::<SpawnRequest>();
                std::thread::Builder::new()
                    .name("lockstep-spawner".into())
                    .spawn(move || {
                        // Ends only with the process: the sender lives in a static.
                        for (mut command, reply) in rx {
                            let _ = reply.send(command.spawn());
                        }
                    })?;
                *slot = Some(tx.clone());
                tx
            }
        }
    };
    let (reply, answer) = mpsc::channel();
    let gone = || std::io::Error::other("the spawner thread is gone");
    requests.send((command, reply)).map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())?
}

/// A running child process, killed with its process group on drop.
#[derive(Debug)]
pub struct ChildGuard {
    child: Child,
    what: String,
}

impl ChildGuard {
    /// Starts `command` in a new process group, to die with this process.
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
        let child = spawn_from_spawner(command).map_err(|e| format!("cannot start {what}: {e}"))?;
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
