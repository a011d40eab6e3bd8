//! The fresh-process reference runs of one trial, started once and shared by its checks.
//!
//! The interleaved and parallel-workers checks compare each instance with its seed alone in a
//! fresh process (a cache filled by the first reset of a process must not hide in the
//! reference), and the leftover check compares with its seed in a pristine one: the same runs
//! of the same seeds. Each costs an interpreter's start for an external env, so each
//! (seed, steps) runs once per trial, and [`FreshRuns::prefetch`] starts them on threads of
//! their own while the in-process checks run. A reference is a fresh process, so when it runs
//! cannot change what it gives; a deterministic env's verdicts do not depend on this sharing.
//!
//! Trials of one run (each in a worker process of its own) ask for the same references:
//! seed S+1's is the reference of trial S and of trial S+1. With a store directory
//! ([`FreshRuns::with_store`], made by `lockstep check` for its workers), each (env, seed,
//! steps) runs once per run: the first worker to lock its lock file runs it and writes the
//! trace; the others wait for the file. A worker that dies while holding the lock releases it
//! as it dies (see [`StoreLock`]), and the next worker runs the reference.
//!
//! The same holds for the continuation check's fresh process: its first episode is the seed's
//! rollout in a fresh process with a string-hash salt of its own, which is what the
//! other-process check compares with, so that check takes it from there (when both checks
//! run and reset options are the default).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use super::{CheckConfig, CheckKind, ProcessRunner};
use crate::trace::{Recorded, RolloutOptions};

type Slot = Arc<OnceLock<Result<Option<Recorded>, String>>>;

/// The continuation check's fresh process, when the trial runs that check.
struct Continued {
    seed: u64,
    steps: u64,
    plan: Vec<RolloutOptions>,
    runs: OnceLock<Result<Option<Vec<Recorded>>, String>>,
}

/// A [`ProcessRunner`] that runs each reference (`run_reference` without a capture) once and
/// hands out copies; everything else goes to the runner it wraps.
pub struct FreshRuns<'a> {
    inner: &'a dyn ProcessRunner,
    store: Option<PathBuf>,
    references: Mutex<BTreeMap<(String, u64, u64), Slot>>,
    continued: OnceLock<Continued>,
}

impl<'a> FreshRuns<'a> {
    pub fn new(inner: &'a dyn ProcessRunner) -> FreshRuns<'a> {
        FreshRuns {
            inner,
            store: None,
            references: Mutex::new(BTreeMap::new()),
            continued: OnceLock::new(),
        }
    }

    /// Shares the references with every other `FreshRuns` of the same `store` directory.
    pub fn with_store(inner: &'a dyn ProcessRunner, store: Option<PathBuf>) -> FreshRuns<'a> {
        FreshRuns {
            store,
            ..FreshRuns::new(inner)
        }
    }

    /// The reference from the store, run here when no one else runs it.
    fn stored_or_run(&self, env: &str, seed: u64, steps: u64) -> Result<Option<Recorded>, String> {
        let Some(dir) = &self.store else {
            return self.inner.run_reference(env, seed, steps, None);
        };
        let key = store_key(env, seed, steps);
        let (trace_file, lock_file) = (
            dir.join(format!("{key}.json")),
            dir.join(format!("{key}.lock")),
        );
        // Patience counted in polls, not read from a clock (nothing here may depend on one).
        let mut polls = 0u32;
        loop {
            if let Some(recorded) = read_stored(&trace_file) {
                return Ok(Some(recorded));
            }
            match StoreLock::try_take(&lock_file) {
                Ok(Some(_held)) => {
                    // The holder before us may have finished between our look and our lock.
                    if let Some(recorded) = read_stored(&trace_file) {
                        return Ok(Some(recorded));
                    }
                    let run = self.inner.run_reference(env, seed, steps, None);
                    if let Ok(Some(r)) = &run {
                        if let Ok(json) = serde_json::to_vec(&r.trace) {
                            // Atomic: a reader sees the whole trace or none.
                            let _ = crate::atomic_file::write_atomic(&trace_file, &json);
                        }
                    }
                    // An error is this run's to report; the lock goes with `_held`, and the
                    // next worker to take it runs the reference itself.
                    return run;
                }
                Ok(None) => {
                    if polls >= STORE_PATIENCE_POLLS {
                        return self.inner.run_reference(env, seed, steps, None);
                    }
                    polls += 1;
                    std::thread::sleep(STORE_POLL);
                }
                Err(_) => return self.inner.run_reference(env, seed, steps, None),
            }
        }
    }

    fn slot(&self, env: &str, seed: u64, steps: u64) -> Slot {
        let mut map = self
            .references
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(map.entry((env.to_string(), seed, steps)).or_default())
    }

    /// Starts the references the checks `kinds` will ask for, each on a thread of `scope`; a
    /// check that asks before one finished waits for it. An error is kept and reported by
    /// the check that needs the run.
    pub fn prefetch<'scope>(
        &'scope self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        env: &str,
        kinds: &[CheckKind],
        cfg: &CheckConfig,
    ) {
        if !self.inner.runs_elsewhere() {
            return;
        }
        for seed in reference_seeds(kinds, cfg) {
            let env = env.to_string();
            let steps = cfg.steps;
            scope.spawn(move || {
                let _ = self.run_reference(&env, seed, steps, None);
            });
        }
        if kinds.contains(&CheckKind::Continuation) && cfg.reset_options.is_null() {
            let continued = self.continued.get_or_init(|| Continued {
                seed: cfg.seed,
                steps: cfg.steps,
                plan: cfg.continuation_plan(None),
                runs: OnceLock::new(),
            });
            let env = env.to_string();
            scope.spawn(move || {
                continued.runs.get_or_init(|| {
                    self.inner
                        .run_continued(&env, continued.seed, continued.steps, &continued.plan)
                });
            });
        }
    }

    /// The continuation check's fresh process for `seed` and `steps`, when prefetched.
    fn continued_runs(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
    ) -> Option<&Result<Option<Vec<Recorded>>, String>> {
        let c = self
            .continued
            .get()
            .filter(|c| (c.seed, c.steps) == (seed, steps))?;
        Some(
            c.runs
                .get_or_init(|| self.inner.run_continued(env, seed, steps, &c.plan)),
        )
    }
}

/// An exclusive `flock(2)` on a reference's lock file. The kernel drops it when its holder
/// ends, however it ends: a worker killed while running a reference (a lost Ray task, a
/// timeout) leaves the reference to the next worker at once, not after the patience of
/// [`STORE_PATIENCE_POLLS`]. The file itself stays, so no waiter can remove a lock another
/// waiter has just taken.
struct StoreLock {
    _held: std::fs::File,
}

impl StoreLock {
    /// The lock, `None` while another process holds it.
    fn try_take(path: &std::path::Path) -> std::io::Result<Option<StoreLock>> {
        use std::os::fd::AsRawFd as _;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if taken == 0 {
            return Ok(Some(StoreLock { _held: file }));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(e)
        }
    }
}

/// How often a worker looks for a reference another worker is running.
const STORE_POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// How many looks before it runs the reference itself (at least ten minutes of waiting): the
/// holder is alive (a dead one's lock is gone), so this only bounds a reference that hangs.
pub const STORE_PATIENCE_POLLS: u32 = 30_000;

/// The store's file name of a reference: a digest of what determines it.
fn store_key(env: &str, seed: u64, steps: u64) -> String {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    h.update(env.as_bytes());
    h.update([0]);
    h.update(seed.to_le_bytes());
    h.update(steps.to_le_bytes());
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A stored reference: its trace (the kept transitions stay with the worker that ran it; a
/// divergence in them is explained by a re-run).
fn read_stored(path: &std::path::Path) -> Option<Recorded> {
    let bytes = std::fs::read(path).ok()?;
    let trace = serde_json::from_slice(&bytes).ok()?;
    Some(Recorded {
        trace,
        captured: None,
        kept: Default::default(),
        step_times: Vec::new(),
        checked: Default::default(),
    })
}

/// The seeds whose fresh-process references the checks `kinds` compare with.
pub fn reference_seeds(kinds: &[CheckKind], cfg: &CheckConfig) -> Vec<u64> {
    let n = kinds
        .iter()
        .map(|k| match k {
            CheckKind::Interleaved => cfg.interleaved,
            CheckKind::ParallelWorkers => cfg.workers,
            CheckKind::Leftover => 1,
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    (0..n).map(|i| cfg.seed_at(i)).collect()
}

impl ProcessRunner for FreshRuns<'_> {
    fn runs_elsewhere(&self) -> bool {
        self.inner.runs_elsewhere()
    }

    fn varies_hash_seed(&self) -> bool {
        self.inner.varies_hash_seed()
    }

    fn run(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String> {
        if capture.is_none() {
            if let Some(Ok(Some(episodes))) = self.continued_runs(env, seed, steps) {
                return Ok(episodes[0].clone());
            }
        }
        self.inner.run(env, seed, steps, capture)
    }

    fn run_reference(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Option<Recorded>, String> {
        if capture.is_some() {
            return self.inner.run_reference(env, seed, steps, capture);
        }
        self.slot(env, seed, steps)
            .get_or_init(|| self.stored_or_run(env, seed, steps))
            .clone()
    }

    fn run_after(
        &self,
        env: &str,
        earlier: u64,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Option<Recorded>, String> {
        self.inner.run_after(env, earlier, seed, steps, capture)
    }

    fn run_continued(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        episodes: &[RolloutOptions],
    ) -> Result<Option<Vec<Recorded>>, String> {
        if episodes.iter().all(|e| e.capture.is_none()) {
            if let Some(runs) = self.continued_runs(env, seed, steps) {
                return runs.clone();
            }
        }
        self.inner.run_continued(env, seed, steps, episodes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Counts the runs it is asked for.
    struct Counting(AtomicU64);

    impl ProcessRunner for Counting {
        fn run(&self, env: &str, seed: u64, _: u64, _: Option<u64>) -> Result<Recorded, String> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Err(format!("{env} {seed}: counted"))
        }
    }

    #[test]
    fn each_reference_runs_once_and_captures_run_again() {
        let counting = Counting(AtomicU64::new(0));
        let runs = FreshRuns::new(&counting);
        let cfg = CheckConfig::new(5, 10);
        std::thread::scope(|s| {
            runs.prefetch(
                s,
                "e",
                &[CheckKind::Interleaved, CheckKind::ParallelWorkers],
                &cfg,
            );
            for _ in 0..3 {
                let again = runs.run_reference("e", 6, 10, None);
                assert!(matches!(again, Err(ref e) if e == "e 6: counted"));
            }
        });
        assert_eq!(
            counting.0.load(Ordering::Relaxed),
            4,
            "seeds 5..=8, once each"
        );
        let _ = runs.run_reference("e", 6, 10, Some(2));
        assert_eq!(
            counting.0.load(Ordering::Relaxed),
            5,
            "a capture is a new run"
        );
    }

    #[test]
    fn a_store_lock_is_exclusive_and_released_with_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.lock");
        let held = StoreLock::try_take(&path).unwrap();
        assert!(held.is_some());
        assert!(
            StoreLock::try_take(&path).unwrap().is_none(),
            "held elsewhere"
        );
        drop(held);
        assert!(StoreLock::try_take(&path).unwrap().is_some(), "released");
    }

    #[test]
    fn a_lock_file_left_by_a_dead_worker_does_not_stall_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let key = store_key("e", 6, 10);
        // What a killed worker leaves: the file, with no lock on it.
        std::fs::write(dir.path().join(format!("{key}.lock")), b"").unwrap();
        let store = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let counting = Counting(AtomicU64::new(0));
            let runs = FreshRuns::with_store(&counting, Some(store));
            let got = runs.run_reference("e", 6, 10, None);
            let _ = tx.send((got, counting.0.load(Ordering::Relaxed)));
        });
        // The old lock-by-existence waited STORE_PATIENCE_POLLS (ten minutes) here.
        let (got, ran) = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the reference ran without waiting for a dead holder");
        assert!(matches!(got, Err(ref e) if e == "e 6: counted"));
        assert_eq!(ran, 1);
    }
}
