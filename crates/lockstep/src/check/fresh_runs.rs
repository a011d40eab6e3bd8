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
//! steps) runs once per run: the first worker to take its lock file runs it and writes the
//! trace; the others wait for the file. A worker that dies while holding a lock only makes the
//! others run the reference themselves, after [`STORE_PATIENCE_POLLS`] looks.
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
            let taken = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock_file);
            match taken {
                Ok(_) => {
                    let run = self.inner.run_reference(env, seed, steps, None);
                    match &run {
                        Ok(Some(r)) => {
                            if let Ok(json) = serde_json::to_vec(&r.trace) {
                                // Atomic: a reader sees the whole trace or none.
                                let _ = crate::atomic_file::write_atomic(&trace_file, &json);
                            }
                        }
                        // Another worker may try: an error is this run's to report.
                        _ => {
                            let _ = std::fs::remove_file(&lock_file);
                        }
                    }
                    return run;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
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

/// How often a worker looks for a reference another worker is running.
const STORE_POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// How many looks before it runs the reference itself (at least ten minutes of waiting).
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
        kept: Vec::new(),
        step_times: Vec::new(),
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
}
