//! The parallel check's threads in a forked child, for an env of the caller's own process
//! (`lockstep.check` in Python): an env that crashes on threads (a segfault in a thread-bound
//! browser client) must end the fork, never the caller. The fork sends its rollouts back on a
//! pipe as JSON; a fork that dies is the check's verdict, with its signal.
//!
//! Unix only: without `fork` the factory offers no [`ThreadIsolation`] and the threads run
//! here.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};

use serde::{Deserialize, Serialize};

use super::CheckError;
use crate::trace::{Recorded, Trace, TransitionRecord};

/// Forks the process the env lives in. The env's runtime does it (CPython's `os.fork`, which
/// keeps the interpreter usable in the child).
pub trait ThreadIsolation: Sync {
    /// `fork(2)` as the env's runtime does it: 0 in the child, the child's pid in the parent.
    fn fork(&self) -> Result<i32, String>;
}

/// A [`Recorded`] on the pipe: the transitions as their records (arrays in base64).
#[derive(Serialize, Deserialize)]
struct RecordedWire {
    trace: Trace,
    captured: Option<TransitionRecord>,
    kept: Vec<TransitionRecord>,
    step_times_us: Vec<u64>,
}

/// What the fork sends: its rollouts, or why the scenario could not run.
#[derive(Serialize, Deserialize)]
enum Answer {
    Runs(Vec<RecordedWire>),
    OnThreads {
        worker: usize,
        seed: u64,
        at: String,
        error: String,
    },
    Failed(String),
}

fn to_wire(r: &Recorded) -> Result<RecordedWire, String> {
    let record = |t| TransitionRecord::from_transition(t).map_err(|e| e.to_string());
    Ok(RecordedWire {
        trace: r.trace.clone(),
        captured: r.captured.as_ref().map(record).transpose()?,
        kept: r.kept.iter().map(record).collect::<Result<_, _>>()?,
        step_times_us: crate::trace::micros(&r.step_times),
    })
}

fn from_wire(w: RecordedWire) -> Result<Recorded, String> {
    let transition = |t: TransitionRecord| t.to_transition().map_err(|e| e.to_string());
    Ok(Recorded {
        trace: w.trace,
        captured: w.captured.map(transition).transpose()?,
        kept: w
            .kept
            .into_iter()
            .map(transition)
            .collect::<Result<_, _>>()?,
        step_times: crate::trace::from_micros(&w.step_times_us),
        checked: Default::default(),
    })
}

fn answer(result: Result<Vec<Recorded>, CheckError>) -> Answer {
    match result {
        Ok(runs) => match runs.iter().map(to_wire).collect() {
            Ok(wire) => Answer::Runs(wire),
            Err(e) => Answer::Failed(format!("the fork's rollouts have no record: {e}")),
        },
        Err(CheckError::OnThreads {
            worker,
            seed,
            at,
            error,
        }) => Answer::OnThreads {
            worker,
            seed,
            at,
            error,
        },
        Err(other) => Answer::Failed(other.to_string()),
    }
}

/// Runs `scenario` in a child forked with `isolation` and returns what it returned there. A
/// child that dies before answering is [`CheckError::ThreadsCrashed`] with its wait status.
pub(super) fn in_fork(
    isolation: &dyn ThreadIsolation,
    scenario: &dyn Fn() -> Result<Vec<Recorded>, CheckError>,
) -> Result<Vec<Recorded>, CheckError> {
    let failed = |what: String| CheckError::Runner(format!("parallel threads in a fork: {what}"));
    let mut fds = [0; 2];
    // SAFETY: pipe(2) writes two descriptors into the array it is given, which has room.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(failed(std::io::Error::last_os_error().to_string()));
    }
    // SAFETY: both descriptors were just opened by pipe2 and are owned here alone.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let pid = isolation.fork().map_err(failed)?;
    if pid == 0 {
        drop(read_end);
        let text = serde_json::to_vec(&answer(scenario())).unwrap_or_default();
        let _ = std::fs::File::from(write_end).write_all(&text);
        // SAFETY: _exit ends the fork at once: no destructor or atexit handler of the
        // caller's process (its interpreter's finalisation) runs twice.
        unsafe { libc::_exit(0) }
    }
    drop(write_end);
    let mut text = Vec::new();
    let read = std::fs::File::from(read_end).read_to_end(&mut text);
    let mut status = 0;
    // SAFETY: waitpid on the child forked above, with a valid pointer for its status.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(failed(format!("waiting for pid {pid}: {e}")));
        }
    }
    if libc::WIFSIGNALED(status) || text.is_empty() {
        return Err(CheckError::ThreadsCrashed {
            status: wait_status(status),
        });
    }
    read.map_err(|e| failed(e.to_string()))?;
    let answer: Answer =
        serde_json::from_slice(&text).map_err(|e| failed(format!("its answer: {e}")))?;
    match answer {
        Answer::Runs(runs) => runs
            .into_iter()
            .map(from_wire)
            .collect::<Result<_, _>>()
            .map_err(failed),
        Answer::OnThreads {
            worker,
            seed,
            at,
            error,
        } => Err(CheckError::OnThreads {
            worker,
            seed,
            at,
            error,
        }),
        Answer::Failed(e) => Err(failed(e)),
    }
}

/// `killed by signal 11 (SIGSEGV)`, `exited with status 3`.
fn wait_status(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: strsignal returns a pointer to a static or thread-local string (or null).
        let name = unsafe { libc::strsignal(signal) };
        let name = if name.is_null() {
            String::new()
        } else {
            // SAFETY: a non-null strsignal result is a NUL-terminated C string.
            let text = unsafe { std::ffi::CStr::from_ptr(name) };
            format!(", {}", text.to_string_lossy())
        };
        format!("killed by signal {signal}{}{name}", abbreviation(signal))
    } else {
        format!(
            "exited with status {} before answering",
            libc::WEXITSTATUS(status)
        )
    }
}

fn abbreviation(signal: i32) -> &'static str {
    match signal {
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGBUS => " (SIGBUS)",
        libc::SIGFPE => " (SIGFPE)",
        libc::SIGILL => " (SIGILL)",
        libc::SIGKILL => " (SIGKILL)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain fork(2): the test process has no runtime to keep usable in the child.
    struct PlainFork;

    impl ThreadIsolation for PlainFork {
        fn fork(&self) -> Result<i32, String> {
            // SAFETY: the child only runs the scenario below, writes to a pipe and _exits.
            Ok(unsafe { libc::fork() })
        }
    }

    #[test]
    fn a_crash_in_the_fork_is_its_signal_and_this_process_lives_on() {
        let crashed = in_fork(&PlainFork, &|| {
            // Ends the fork with SIGABRT, as a crashing env would (a raised SIGSEGV would meet
            // the std's stack-overflow handler; the Python fixture segfaults for real).
            std::process::abort()
        })
        .unwrap_err();
        match crashed {
            CheckError::ThreadsCrashed { status } => {
                assert!(
                    status.starts_with("killed by signal 6 (SIGABRT)"),
                    "{status}"
                )
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn the_fork_answers_its_errors_and_rollouts() {
        let on_threads = in_fork(&PlainFork, &|| {
            Err(CheckError::OnThreads {
                worker: 2,
                seed: 7,
                at: "failed at its reset".into(),
                error: "RuntimeError: no running event loop".into(),
            })
        })
        .unwrap_err();
        assert_eq!(
            on_threads.to_string(),
            "parallel: worker 2 (seed 7) failed at its reset: RuntimeError: no running event loop"
        );
        let runs = in_fork(&PlainFork, &|| Ok(Vec::new())).unwrap();
        assert!(runs.is_empty());
    }

    /// A rollout made in the fork comes back as it was made: its trace, its captured step and
    /// its kept transitions (the localisation reads them).
    #[test]
    fn rollouts_cross_the_pipe_unchanged() {
        use crate::env::EnvFactory;
        use crate::trace::{rollout, KeepFirst, RolloutOptions};
        let factory = crate::fixtures::factory("fixture").unwrap();
        let opts = RolloutOptions {
            capture: Some(3),
            keep_first: KeepFirst::CHECKS,
            ..RolloutOptions::default()
        };
        let run = || -> Result<Vec<Recorded>, CheckError> {
            let mut env = factory.make().unwrap();
            Ok(vec![rollout(env.as_mut(), 5, 20, &opts).unwrap()])
        };
        let here = run().unwrap().remove(0);
        let there = in_fork(&PlainFork, &run).unwrap().remove(0);
        assert_eq!(there.trace, here.trace);
        assert_eq!(there.captured, here.captured);
        assert!(here.captured.is_some() && !here.kept.is_empty());
        assert_eq!(there.kept, here.kept);
    }
}
