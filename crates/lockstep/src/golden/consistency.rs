//! A golden file's own consistency, checked before any env runs: a file whose parts do not
//! agree with each other was edited or corrupted, and verifying it against the env would blame
//! the env for the edit (a reward changed by hand passed verification, a deleted step was
//! reported as the env "diverging at step 5").
//!
//! The rules, in the order they are checked (the first broken one is reported):
//! 1. steps are numbered 0, 1, ..., n-1, at least one (the reset), at most `steps + 1`;
//! 2. every agent's digest is the digest of its parts (observation digests, reward, flags,
//!    info digest), every step's digest that of its agents and logs, and the episode digest the
//!    chain of the step digests;
//! 3. `end` agrees with the last step: `done` exactly when every agent of the last step is
//!    terminated or truncated, `steps_exhausted` exactly when `steps + 1` transitions were
//!    recorded without that; no earlier step is done (the rollout would have stopped there);
//! 4. the changelog is not empty, starts with the recording (`old_episode` null), each entry's
//!    `old_episode` is the previous entry's `new_episode`, the last `new_episode` is the
//!    file's episode, dates are calendar dates and reasons are not empty.
//!
//! Rule 2 applies to trace format v1 digests, the only ones this lockstep computes; a file of
//! another trace format is reported as not comparable by verification instead.

use std::path::Path;

use super::{check_date, Golden, GoldenError};
use crate::trace::{self, agent_digest_of, chain, step_digest_of, Digest, End};

/// Checks every rule of the module doc; the first broken one is the error.
pub(super) fn check(g: &Golden, path: &Path) -> Result<(), GoldenError> {
    let broken = |at: String, pointer: String, message: String| GoldenError::Inconsistent {
        path: path.into(),
        at,
        pointer,
        message,
    };
    let n = g.step_digests.len();
    if n == 0 {
        return Err(broken(
            "step_digests".into(),
            "/step_digests".into(),
            "no step recorded (a rollout records at least its reset, step 0)".into(),
        ));
    }
    for (i, s) in g.step_digests.iter().enumerate() {
        if s.step != i as u64 {
            let what = if s.step > i as u64 {
                format!(
                    "entry {i} is step {}: step {i} is missing (removed?)",
                    s.step
                )
            } else {
                format!(
                    "entry {i} is step {}: steps out of order or repeated",
                    s.step
                )
            };
            return Err(broken(
                format!("step {i}, field step"),
                format!("/step_digests/{i}/step"),
                what,
            ));
        }
    }
    if n as u64 > g.steps.saturating_add(1) {
        return Err(broken(
            "field steps".into(),
            "/steps".into(),
            format!(
                "{n} transitions recorded, more than the reset and {} steps",
                g.steps
            ),
        ));
    }
    if g.trace_format == trace::FORMAT {
        let mut episode = Digest::ZERO;
        for (i, s) in g.step_digests.iter().enumerate() {
            for (name, a) in &s.agents {
                let computed = agent_digest_of(name, a);
                if computed != a.digest {
                    return Err(broken(
                        format!("step {i}, agent {name:?}"),
                        format!("/step_digests/{i}/agents/{}", pointer_token(name)),
                        format!(
                            "its digest {} is not the digest of its observations, reward, flags and info ({}): one of them, or the digest, was changed",
                            a.digest.short(),
                            computed.short()
                        ),
                    ));
                }
            }
            let computed = step_digest_of(s);
            if computed != s.digest {
                return Err(broken(
                    format!("step {i}, field digest"),
                    format!("/step_digests/{i}/digest"),
                    format!(
                        "the step digest {} is not the digest of its agents and logs ({}): an agent was added or removed, or a digest changed",
                        s.digest.short(),
                        computed.short()
                    ),
                ));
            }
            episode = chain(&episode, &s.digest);
        }
        if episode != g.episode {
            return Err(broken(
                "field episode".into(),
                "/episode".into(),
                format!(
                    "the episode digest {} is not the chain of the step digests ({})",
                    g.episode.short(),
                    episode.short()
                ),
            ));
        }
    }
    let done = |i: usize| {
        let s = &g.step_digests[i];
        s.agents.values().all(|a| a.terminated || a.truncated)
    };
    if let Some(i) = (0..n - 1).find(|&i| done(i)) {
        return Err(broken(
            format!("step {i}"),
            format!("/step_digests/{i}"),
            format!("every agent is done at step {i}, yet steps follow it"),
        ));
    }
    let last_done = done(n - 1);
    let end_ok = match g.end {
        End::Done => last_done,
        End::StepsExhausted => !last_done && n as u64 == g.steps.saturating_add(1),
    };
    if !end_ok {
        return Err(broken(
            "field end".into(),
            "/end".into(),
            format!(
                "end {:?} does not fit the last step ({n} transitions of at most {}, every agent done: {last_done})",
                g.end,
                g.steps.saturating_add(1)
            ),
        ));
    }
    let Some(last) = g.changelog.last() else {
        return Err(broken(
            "changelog".into(),
            "/changelog".into(),
            "the changelog is empty (a golden is recorded with an entry and changed only with one)"
                .into(),
        ));
    };
    let mut previous: Option<Digest> = None;
    for (i, e) in g.changelog.iter().enumerate() {
        let at = |field: &str| {
            (
                format!("changelog entry {i}, field {field}"),
                format!("/changelog/{i}/{field}"),
            )
        };
        if e.old_episode != previous {
            let (a, p) = at("old_episode");
            let want = previous.map_or("null (the recording)".to_string(), |d| d.short());
            return Err(broken(
                a,
                p,
                format!("should be {want}, the episode the entry before left"),
            ));
        }
        if check_date(&e.date).is_err() {
            let (a, p) = at("date");
            return Err(broken(
                a,
                p,
                format!("{:?} is not a calendar date YYYY-MM-DD", e.date),
            ));
        }
        if e.reason.trim().is_empty() {
            let (a, p) = at("reason");
            return Err(broken(a, p, "the reason is empty".into()));
        }
        previous = Some(e.new_episode);
    }
    if last.new_episode != g.episode {
        let i = g.changelog.len() - 1;
        return Err(broken(
            format!("changelog entry {i}, field new_episode"),
            format!("/changelog/{i}/new_episode"),
            format!(
                "the last change left episode {}, but the file's episode is {}",
                last.new_episode.short(),
                g.episode.short()
            ),
        ));
    }
    Ok(())
}

fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
