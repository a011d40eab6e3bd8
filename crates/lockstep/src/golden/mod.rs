//! Golden trajectory files: a committed trace of one seed, so dynamics never drift silently.
//!
//! A golden file (JSON, format [`FORMAT`], documented in docs/golden.md) records the env id and
//! config, the seed, the step budget, the trace format and action-sampler versions, the episode
//! digest and every step's digests (per agent and key, rewards and flags as values), and a
//! changelog. [`verify`] re-runs the env and compares step by step: a failure names the first
//! divergent step and what diverged there. [`update`] re-records it and refuses to do so
//! without a reason, which it appends to the changelog with the old and new episode digests.
//!
//! The insta habit: a failing verify may leave the would-be file beside the golden as
//! `FILE.new` ([`write_pending`]), never when the `CI` environment variable is set.

mod consistency;
mod file;

use std::path::{Path, PathBuf};

use lockstep_canon::Value;

use crate::atomic_file::{write_atomic, write_atomic_new};
use crate::check::{first_divergence, Divergence, Site};
use crate::env::{EnvError, EnvFactory};
use crate::trace::{self, Digest, End, RolloutOptions, StepDigest, TraceError};

/// Version of the golden file format written: v1 plus a seal over the whole content.
pub const FORMAT: &str = "lockstep/golden/v2";

/// The largest golden file read (a million steps of a 4-agent env is about 1 GiB): the limit
/// is what makes a wrong path like /dev/zero an error instead of an exhausted memory.
pub const MAX_FILE_BYTES: u64 = 4 << 30;

/// The first format, still read (without a seal: edits outside the digests cannot be seen);
/// an update rewrites it as [`FORMAT`].
pub const FORMAT_V1: &str = "lockstep/golden/v1";

/// The reset contract an env was recorded under, when it has one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ContractRef {
    pub name: String,
    pub version: u32,
}

/// One deliberate change of a golden file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChangelogEntry {
    /// `YYYY-MM-DD`.
    pub date: String,
    pub reason: String,
    /// Episode digest before the change (`null` for the first recording).
    pub old_episode: Option<Digest>,
    pub new_episode: Digest,
}

/// A golden trajectory file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Golden {
    /// [`FORMAT`].
    pub format: String,
    /// The env id the golden was recorded with.
    pub env: String,
    /// The env's config (with the seed, what determines the episode).
    pub config: Value,
    pub seed: u64,
    /// Steps requested.
    pub steps: u64,
    /// [`trace::FORMAT`] of the digests.
    pub trace_format: String,
    /// [`trace::ACTION_SAMPLER`] that drove the rollout.
    pub action_sampler: String,
    #[serde(default)]
    pub contract: Option<ContractRef>,
    pub end: End,
    pub episode: Digest,
    pub step_digests: Vec<StepDigest>,
    pub changelog: Vec<ChangelogEntry>,
    /// The command line of an external env (`--cmd -- ARGV...`), absent for a built-in one:
    /// what verify runs again. `env` and `config` are then the child's handshake `env_id` and
    /// `config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
}

/// The prefix of [`Golden::env_name`] for an external env: `cmd:` and the JSON array of argv.
pub const CMD_PREFIX: &str = "cmd:";

impl Golden {
    /// The name a resolver makes the golden's env from: the env id, or for an external env
    /// [`CMD_PREFIX`] followed by the JSON array of its argv.
    pub fn env_name(&self) -> String {
        match &self.argv {
            Some(argv) => format!(
                "{CMD_PREFIX}{}",
                serde_json::to_string(argv).unwrap_or_default()
            ),
            None => self.env.clone(),
        }
    }
}

/// A golden operation could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GoldenError {
    /// The file could not be read or written. The cause is part of the message and is not
    /// exposed as `source()`: an error chain printer (anyhow's `{:#}`) would print it twice.
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// [`Golden::save_new`] found a file already there; it was left untouched.
    #[error("{path}: already exists (a golden file is changed by an update, never re-recorded)")]
    Exists { path: PathBuf },
    #[error("{path}: not a golden file: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: golden format {found:?} is neither {FORMAT:?} nor {FORMAT_V1:?}")]
    Format { path: PathBuf, found: String },
    /// The file's parts disagree with each other: it was edited or corrupted. Reported
    /// before any env runs, so the env is never blamed for an edit.
    #[error("{path}: the file is inconsistent at {at} ({pointer}): {message} (edited or corrupted; a golden changes only through `lockstep golden update {} --reason \"...\"`)", path.display())]
    Inconsistent {
        path: PathBuf,
        /// Step, agent and field in words.
        at: String,
        /// The JSON Pointer of the field.
        pointer: String,
        message: String,
    },
    #[error("could not make an env instance: {0}")]
    Make(EnvError),
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("an update needs a non-empty reason (it goes into the changelog)")]
    EmptyReason,
    #[error("date {0:?} is not a calendar date written YYYY-MM-DD")]
    Date(String),
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    pub passed: bool,
    /// The first divergence between the golden and the current run.
    pub divergence: Option<Divergence>,
    /// Differences that do not by themselves fail (env id, config) and caveats.
    pub notes: Vec<String>,
    /// The golden as the current run would record it (the old changelog kept): what a
    /// pending file holds.
    pub current: Golden,
}

/// Days in `month` (1-12) of `year` in the proleptic Gregorian calendar.
// `is_multiple_of` is newer (1.87) than the workspace's rust-version (1.85).
#[allow(clippy::manual_is_multiple_of)]
fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// Accepts a real calendar date written `YYYY-MM-DD` (no 2026-02-31).
fn check_date(date: &str) -> Result<(), GoldenError> {
    let b = date.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && digits(0..4)
        && digits(5..7)
        && digits(8..10)
        && {
            let year: u32 = date[0..4].parse().unwrap_or(0);
            let month: u32 = date[5..7].parse().unwrap_or(0);
            let day: u32 = date[8..10].parse().unwrap_or(0);
            (1..=12).contains(&month) && (1..=days_in_month(year, month)).contains(&day)
        };
    if ok {
        Ok(())
    } else {
        Err(GoldenError::Date(date.to_string()))
    }
}

/// Runs `factory`'s env for `seed` and `steps` on a fresh instance and returns the golden
/// it gives (with an empty changelog).
fn run(factory: &dyn EnvFactory, seed: u64, steps: u64) -> Result<Golden, GoldenError> {
    let mut env = factory.make().map_err(GoldenError::Make)?;
    let config = env.spec().config.clone();
    let contract = env.contract().map(|c| ContractRef {
        name: c.name,
        version: c.version,
    });
    let r = trace::rollout(env.as_mut(), seed, steps, &RolloutOptions::default())?;
    Ok(Golden {
        format: FORMAT.into(),
        env: r.trace.env,
        config,
        seed,
        steps,
        trace_format: trace::FORMAT.into(),
        action_sampler: trace::ACTION_SAMPLER.into(),
        contract,
        end: r.trace.end,
        episode: r.trace.episode,
        step_digests: r.trace.step_digests,
        changelog: Vec::new(),
        argv: None,
    })
}

/// Records a new golden, its changelog opened with a `recorded` entry dated `date`
/// (`YYYY-MM-DD`).
pub fn record(
    factory: &dyn EnvFactory,
    seed: u64,
    steps: u64,
    date: &str,
) -> Result<Golden, GoldenError> {
    check_date(date)?;
    let mut g = run(factory, seed, steps)?;
    g.changelog.push(ChangelogEntry {
        date: date.into(),
        reason: "recorded".into(),
        old_episode: None,
        new_episode: g.episode,
    });
    Ok(g)
}

/// Re-runs the golden's seed and steps and compares every step.
pub fn verify(factory: &dyn EnvFactory, golden: &Golden) -> Result<Verification, GoldenError> {
    let mut current = run(factory, golden.seed, golden.steps)?;
    current.changelog = golden.changelog.clone();
    current.argv = golden.argv.clone();
    let mut notes = Vec::new();
    // A contract change is worth knowing (the starting state's fields were revised) but is
    // not a divergence: the digests decide. Files recorded before contracts were kept say
    // nothing, so only a recorded contract is compared.
    if let Some(recorded) = &golden.contract {
        match &current.contract {
            Some(now) if now == recorded => {}
            Some(now) => notes.push(format!(
                "recorded under contract {:?} version {}, the env now declares {:?} version {}",
                recorded.name, recorded.version, now.name, now.version
            )),
            None => notes.push(format!(
                "recorded under contract {:?} version {}, the env now declares no contract",
                recorded.name, recorded.version
            )),
        }
    }
    // Another env, or the same env configured otherwise, is a failure whatever the digests
    // say: the golden pins the episode of that env and config.
    let mut same_env = true;
    if current.env != golden.env {
        same_env = false;
        notes.push(format!(
            "recorded with env {:?}, the env now reports {:?}",
            golden.env, current.env
        ));
    }
    let config = crate::diff::diff(&golden.config, &current.config);
    if !config.is_empty() {
        same_env = false;
        let pointers: Vec<&str> = config.changes.iter().map(|c| c.pointer.as_str()).collect();
        notes.push(format!("config differs at {}", pointers.join(", ")));
    }
    let comparable =
        golden.trace_format == trace::FORMAT && golden.action_sampler == trace::ACTION_SAMPLER;
    if !comparable {
        notes.push(format!(
            "recorded with trace format {:?} and action sampler {:?}; this lockstep has {:?} and {:?}: the digests are not comparable, re-record with an update",
            golden.trace_format, golden.action_sampler, trace::FORMAT, trace::ACTION_SAMPLER
        ));
    }
    let divergence = if comparable {
        first_divergence(&golden.step_digests, &current.step_digests).map(|mut d| {
            if matches!(
                d.site,
                Site::Obs { .. } | Site::Info { .. } | Site::Logs { .. }
            ) {
                d.note = Some(
                    "a golden file keeps digests, not contents: the recorded values are not available"
                        .into(),
                );
            }
            d
        })
    } else {
        None
    };
    // Equal digests with a different line count: the count is recorded beside the logs digest
    // and covered by no digest, so only an edit can make them disagree.
    let edited_counts: Vec<String> = if comparable && divergence.is_none() {
        golden
            .step_digests
            .iter()
            .zip(&current.step_digests)
            .filter(|(g, c)| g.log_lines != c.log_lines)
            .map(|(g, c)| {
                format!(
                    "the file is inconsistent at step {}, field log_lines: it records {} lines, but its logs digest is that of {} (edited or corrupted)",
                    g.step, g.log_lines, c.log_lines
                )
            })
            .take(1)
            .collect()
    } else {
        Vec::new()
    };
    if golden.format == FORMAT_V1 {
        notes.push(format!(
            "format {FORMAT_V1} has no seal: edits outside the digests (steps, config, changelog wording) cannot be seen; `lockstep golden update` rewrites it as {FORMAT}"
        ));
    }
    let passed = same_env
        && comparable
        && divergence.is_none()
        && edited_counts.is_empty()
        && golden.episode == current.episode;
    notes.extend(edited_counts);
    Ok(Verification {
        passed,
        divergence,
        notes,
        current,
    })
}

/// Re-records `golden` with the current env and appends a changelog entry. Refuses an empty
/// reason: a golden changes deliberately or not at all.
pub fn update(
    factory: &dyn EnvFactory,
    golden: &Golden,
    reason: &str,
    date: &str,
) -> Result<Golden, GoldenError> {
    if reason.trim().is_empty() {
        return Err(GoldenError::EmptyReason);
    }
    check_date(date)?;
    let mut g = run(factory, golden.seed, golden.steps)?;
    g.argv = golden.argv.clone();
    g.changelog = golden.changelog.clone();
    g.changelog.push(ChangelogEntry {
        date: date.into(),
        reason: reason.trim().into(),
        old_episode: Some(golden.episode),
        new_episode: g.episode,
    });
    Ok(g)
}

impl Golden {
    /// Reads and validates a golden file.
    pub fn load(path: &Path) -> Result<Golden, GoldenError> {
        let bytes = crate::atomic_file::read_limited(path, MAX_FILE_BYTES).map_err(|cause| {
            GoldenError::Io {
                path: path.into(),
                cause,
            }
        })?;
        Golden::from_slice(&bytes, path)
    }

    /// Parses, validates and checks the consistency of a golden file's bytes (docs/golden.md).
    pub fn from_slice(bytes: &[u8], path: &Path) -> Result<Golden, GoldenError> {
        let (golden, seal) = file::parse(bytes, path)?;
        consistency::check(&golden, path)?;
        file::check_seal(path, seal)?;
        Ok(golden)
    }

    /// The file's bytes: pretty JSON (one digest per line, so a diff of two versions reads
    /// well), fields in the struct's order, the seal last (format v2), a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        file::to_bytes(self)
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> Result<(), GoldenError> {
        write_atomic(path, &self.to_bytes()).map_err(|cause| GoldenError::Io {
            path: path.into(),
            cause,
        })
    }
}

impl Golden {
    /// Writes the file atomically only if `path` does not exist yet, even when another
    /// process creates it meanwhile: [`GoldenError::Exists`] then, and the file is untouched.
    pub fn save_new(&self, path: &Path) -> Result<(), GoldenError> {
        write_atomic_new(path, &self.to_bytes()).map_err(|cause| {
            if cause.kind() == std::io::ErrorKind::AlreadyExists {
                GoldenError::Exists { path: path.into() }
            } else {
                GoldenError::Io {
                    path: path.into(),
                    cause,
                }
            }
        })
    }
}

/// Where the pending file of `path` goes: `path` + `.new`.
pub fn pending_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".new");
    PathBuf::from(s)
}

/// Whether pending files may be written: never when the `CI` environment variable is set.
pub fn pending_allowed() -> bool {
    std::env::var_os("CI").is_none()
}

/// Writes `v.current` as the pending file of `path` unless [`pending_allowed`] says no;
/// returns where it went.
pub fn write_pending(path: &Path, v: &Verification) -> Result<Option<PathBuf>, GoldenError> {
    if !pending_allowed() {
        return Ok(None);
    }
    let pending = pending_path(path);
    v.current.save(&pending)?;
    Ok(Some(pending))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, Fault, FixtureFactory};

    #[test]
    fn record_verify_update_cycle() {
        let f = fixtures::factory("fixture").unwrap();
        let g = record(&f, 7, 40, "2026-11-30").unwrap();
        assert_eq!(g.step_digests.len(), 41);
        assert_eq!(g.changelog.len(), 1);
        let v = verify(&f, &g).unwrap();
        assert!(v.passed, "{v:?}");
        assert!(v.notes.is_empty());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.json");
        g.save(&path).unwrap();
        assert_eq!(Golden::load(&path).unwrap(), g);
        assert!(matches!(g.save_new(&path), Err(GoldenError::Exists { .. })));
        let fresh = dir.path().join("new.json");
        g.save_new(&fresh).unwrap();
        assert_eq!(Golden::load(&fresh).unwrap(), g);

        // Changed dynamics: caught at the step where they change, with both rewards.
        let drift = fixtures::factory("fixture:drift").unwrap();
        let v = verify(&drift, &g).unwrap();
        assert!(!v.passed);
        let d = v.divergence.unwrap();
        assert_eq!((d.step, d.agent(), d.key()), (20, Some("blue"), "reward"));
        let Site::Reward { left, right, .. } = &d.site else {
            panic!()
        };
        assert_ne!(left, right);
        assert_eq!(v.notes.len(), 2, "env id and config differ: {:?}", v.notes);

        assert!(matches!(
            update(&drift, &g, "  ", "2026-11-30"),
            Err(GoldenError::EmptyReason)
        ));
        let u = update(&drift, &g, "rewards doubled from step 20", "2026-12-01").unwrap();
        assert_eq!(u.changelog.len(), 2);
        let e = &u.changelog[1];
        assert_eq!((e.old_episode, e.new_episode), (Some(g.episode), u.episode));
        assert!(verify(&drift, &u).unwrap().passed);
    }

    #[test]
    fn the_env_contract_is_recorded_and_a_change_noted() {
        use crate::env::Env;
        use crate::experiment::{ResetFixtureEnv, ResetMode};
        let f = ("experiment".to_string(), || {
            Ok(Box::new(ResetFixtureEnv::new(ResetMode::Complete)) as Box<dyn Env>)
        });
        let v1 = Some(ContractRef {
            name: "seed-000-fixture".into(),
            version: 1,
        });
        let g = record(&f, 3, 4, "2026-11-30").unwrap();
        assert_eq!(g.contract, v1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.json");
        g.save(&path).unwrap();
        assert_eq!(Golden::load(&path).unwrap().contract, v1);
        let v = verify(&f, &g).unwrap();
        assert!(v.passed && v.notes.is_empty(), "{v:?}");

        // Recorded under another version: noted, not failed; an update records the current one.
        let mut old = g.clone();
        old.contract = Some(ContractRef {
            name: "seed-000-fixture".into(),
            version: 2,
        });
        let v = verify(&f, &old).unwrap();
        assert!(v.passed, "{v:?}");
        assert_eq!(v.notes.len(), 1, "{:?}", v.notes);
        assert!(v.notes[0].contains("version 2"), "{:?}", v.notes);
        assert!(v.notes[0].contains("version 1"), "{:?}", v.notes);
        assert_eq!(
            v.current.contract, v1,
            "a pending file holds the current contract"
        );
        let u = update(&f, &old, "contract v1 again", "2026-12-01").unwrap();
        assert_eq!(u.contract, v1);

        // An env without a contract records none.
        let plain = fixtures::factory("fixture").unwrap();
        assert_eq!(record(&plain, 1, 2, "2026-11-30").unwrap().contract, None);
    }

    #[test]
    fn fewer_steps_diverge_at_the_length() {
        let f = fixtures::factory("fixture").unwrap();
        let g = record(&f, 7, 30, "2026-11-30").unwrap();
        let short = FixtureFactory {
            fault: Fault::None,
            max_steps: 10,
        };
        let v = verify(&short, &g).unwrap();
        assert!(!v.passed);
        let d = v.divergence.unwrap();
        // Truncated at step 10 instead of running on.
        assert_eq!((d.step, d.key()), (10, "truncated"));
    }

    #[test]
    fn bad_files_and_dates_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        std::fs::write(&p, b"{\"format\": \"other/v9\"}").unwrap();
        assert!(matches!(Golden::load(&p), Err(GoldenError::Format { .. })));
        std::fs::write(&p, b"not json").unwrap();
        assert!(matches!(Golden::load(&p), Err(GoldenError::Parse { .. })));
        let f = fixtures::factory("fixture").unwrap();
        assert!(matches!(
            record(&f, 1, 2, "30/11/2026"),
            Err(GoldenError::Date(_))
        ));
        assert_eq!(pending_path(&p), dir.path().join("x.json.new"));
    }

    #[test]
    fn file_errors_state_their_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let err = Golden::load(dir.path()).unwrap_err();
        assert!(matches!(err, GoldenError::Io { .. }), "{err}");
        assert!(
            std::error::Error::source(&err).is_none(),
            "the cause is in the message, not in the chain"
        );
        let message = err.to_string();
        let GoldenError::Io { cause, .. } = &err else {
            unreachable!()
        };
        assert_eq!(message.matches(&cause.to_string()).count(), 1, "{message}");
        assert!(
            message.starts_with(&dir.path().display().to_string()),
            "{message}"
        );
    }

    #[test]
    fn dates_must_exist_in_the_calendar() {
        for good in [
            "2026-11-30",
            "2026-01-31",
            "2024-02-29",
            "2000-02-29",
            "2026-12-31",
        ] {
            assert!(check_date(good).is_ok(), "{good}");
        }
        for bad in [
            "2026-02-31",
            "2026-02-29",
            "1900-02-29",
            "2100-02-29",
            "2026-04-31",
            "2026-11-31",
            "2026-13-01",
            "2026-00-10",
            "2026-01-00",
            "2026-1-01",
            "2026/01/01",
        ] {
            assert!(
                matches!(check_date(bad), Err(GoldenError::Date(_))),
                "{bad}"
            );
        }
    }
}

#[cfg(test)]
mod edit_tests;
