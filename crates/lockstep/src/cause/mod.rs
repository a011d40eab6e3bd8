//! The cause of a divergence, not only its symptom: the line of the env's own code that read a
//! nondeterministic source.
//!
//! A failed check says where two runs part (step, agent, key, element). For an env with a
//! source tracer (every Python env served by the adapter, and `lockstep.check` in process),
//! [`explain`] re-runs the failing check's scenario up to the divergent step with the tracer on,
//! and turns what it recorded ([`SourceRead`]s) into a [`Cause`]: the sites in call order with
//! counts, the one most likely to explain this check first, in words. The tracer is switched on
//! only for that re-run, so a check that passes costs nothing more.
//!
//! The other half, [`Effect`]s, is recorded always: what the env's process touched outside
//! itself (files written, databases opened, connections), reported as a warning even when every
//! check passes, because a layer must be named before a reset contract can cover it.

pub(crate) mod effects;
mod traced;

pub use effects::{effect_warnings, Effect};
pub use traced::Traced;

use serde::{Deserialize, Serialize};

use crate::check::{run_check, CheckConfig, CheckKind, CheckOutcome, ProcessRunner};
use crate::env::EnvFactory;

/// One read of a nondeterministic source, as the tracer reports it (docs/replay.md, "Causes").
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SourceRead {
    /// The instance's episode (0: its first reset).
    pub episode: u64,
    /// 0 for the reset, k for the k-th step of the episode.
    pub step: u64,
    /// `shared_rng`, `unseeded_rng`, `unseeded_space`, `clock`, `process_identity`, `entropy`,
    /// `directory_order`, `outside_world`, `shared_state`.
    pub kind: String,
    /// What was read: `random.random()`, `time.time()`, `FirstSeedWins._levels`.
    pub source: String,
    /// The library function the env's code called, when it is not the source itself.
    #[serde(default)]
    pub via: Option<String>,
    /// The source in words: `the process-global RNG, which every instance in the process shares`.
    #[serde(default)]
    pub what: String,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<u64>,
    #[serde(default)]
    pub function: Option<String>,
    #[serde(default = "one")]
    pub count: u64,
    /// Shared state only: its value before and after the call that changed it.
    #[serde(default)]
    pub before: Option<serde_json::Value>,
    #[serde(default)]
    pub after: Option<serde_json::Value>,
}

fn one() -> u64 {
    1
}

/// One call site of one source, over the whole traced re-run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSite {
    pub kind: String,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    pub what: String,
    /// `FILE:LINE` of the env's code (relative to the working directory when under it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// Where it was first read: `reset`, `step 3`, `episode 2 step 1`.
    pub first: String,
    /// Reads in all.
    pub count: u64,
    /// Whether it was read in the divergent step itself.
    pub at_divergence: bool,
    /// Shared state: how it changed, `{} -> {"layout": 684}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
}

/// Why a check failed, as far as the tracer saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// One sentence: the most likely cause, or that none was seen and what was traced.
    pub headline: String,
    /// Every site, the headline's first, then in call order.
    pub sources: Vec<SourceSite>,
    /// What the re-run traced, in words.
    pub traced: String,
}

impl SourceSite {
    /// `envs/grid.py:42 in step: random.random(), the process-global RNG, ...`.
    pub fn sentence(&self) -> String {
        let mut s = String::new();
        if let Some(site) = &self.site {
            s.push_str(site);
            if let Some(f) = &self.function {
                s.push_str(" in ");
                s.push_str(f);
            }
            s.push_str(": ");
        }
        s.push_str(&self.source);
        if let Some(via) = &self.via {
            s.push_str(" (through ");
            s.push_str(via);
            s.push(')');
        }
        if let Some(change) = &self.change {
            s.push_str(": ");
            s.push_str(change);
        }
        if !self.what.is_empty() {
            s.push_str(", ");
            s.push_str(&self.what);
        }
        s
    }

    /// The sentence with where and how often: `... (3 reads, first at step 1)`.
    pub fn line(&self) -> String {
        let (one, many) = match self.kind.as_str() {
            // Not a read: a finding about the process.
            "hash_order" => return self.sentence(),
            "shared_state" => ("1 call changed it", "calls changed it"),
            "outside_world" => ("once", "times"),
            _ => ("1 read", "reads"),
        };
        let count = if self.count == 1 {
            one.to_string()
        } else {
            format!("{} {many}", self.count)
        };
        format!("{} ({count}, first at {})", self.sentence(), self.first)
    }
}

impl Cause {
    /// The lines people read (the terminal and report.html): the most likely site with its
    /// counts, then up to `shown` more, then how many more report.json lists.
    pub fn lines(&self, shown: usize) -> Vec<String> {
        let mut lines = match self.sources.first() {
            Some(first) => vec![format!("cause: {}", first.line())],
            None => vec![self.headline.clone()],
        };
        for s in self.sources.iter().skip(1).take(shown) {
            lines.push(format!("also: {}", s.line()));
        }
        if self.sources.len() > shown + 1 {
            lines.push(format!(
                "+{} more sources read (checks[].cause in the JSON report)",
                self.sources.len() - shown - 1
            ));
        }
        lines
    }
}

/// How likely a kind of source explains a failure of `check`: lower first. Sources shared by
/// instances explain the multi-instance checks; the pid, entropy and the hash seed explain a
/// fresh process; the outside world explains what one process leaves for the next.
fn rank(check: CheckKind, kind: &str) -> u8 {
    use CheckKind::*;
    let order: &[&str] = match check {
        Interleaved | ParallelWorkers | ForkedWorkers | Vector => &[
            "shared_rng",
            "shared_state",
            "unseeded_space",
            "outside_world",
        ],
        OtherProcess => &[
            "hash_order",
            "process_identity",
            "entropy",
            "unseeded_rng",
            "unseeded_space",
            "clock",
            "directory_order",
        ],
        Leftover => &["outside_world", "directory_order"],
        Continuation => &[
            "clock",
            "process_identity",
            "entropy",
            "unseeded_rng",
            "shared_rng",
            "unseeded_space",
        ],
        SameSeed | OtherSeed => &[
            "shared_state",
            "clock",
            "entropy",
            "unseeded_rng",
            "unseeded_space",
            "shared_rng",
            "outside_world",
            "process_identity",
        ],
    };
    order
        .iter()
        .position(|k| *k == kind)
        .map_or(order.len() as u8, |p| p as u8)
}

fn first_label(episode: u64, step: u64) -> String {
    match (episode, step) {
        (0, 0) => "reset".into(),
        (0, k) => format!("step {k}"),
        (e, 0) => format!("episode {} reset", e + 1),
        (e, k) => format!("episode {} step {k}", e + 1),
    }
}

/// A file as the report shows it: relative to `cwd` when under it, from the package on when
/// in a `site-packages` directory, else whole.
pub fn display_path(path: &str, cwd: Option<&std::path::Path>) -> String {
    if let Some(rest) = cwd
        .and_then(|c| std::path::Path::new(path).strip_prefix(c).ok())
        .filter(|r| !r.as_os_str().is_empty())
    {
        return rest.display().to_string();
    }
    if let Some(i) = path.rfind("/site-packages/") {
        return path[i + 1..].to_string();
    }
    path.to_string()
}

/// The reads of a re-run grouped by site, the most likely cause of a `check` failure first (a
/// read in the divergent step before an earlier one, then call order).
pub fn sites(check: CheckKind, reads: &[SourceRead], divergent_step: u64) -> Vec<SourceSite> {
    let cwd = std::env::current_dir().ok();
    let mut out: Vec<SourceSite> = Vec::new();
    let mut first_at: Vec<(u64, u64)> = Vec::new();
    for r in reads {
        let site = r.file.as_ref().map(|f| match r.line {
            Some(l) => format!("{}:{l}", display_path(f, cwd.as_deref())),
            None => display_path(f, cwd.as_deref()),
        });
        let change = match (&r.before, &r.after) {
            (Some(b), Some(a)) => Some(format!(
                "{} -> {}",
                crate::words::value_words(b),
                crate::words::value_words(a)
            )),
            _ => None,
        };
        let at = r.step == divergent_step;
        let same = out.iter().position(|s| {
            s.kind == r.kind && s.source == r.source && s.via == r.via && s.site == site
        });
        match same {
            Some(i) => {
                let s = &mut out[i];
                s.count += r.count;
                s.at_divergence |= at;
                if (r.episode, r.step) < first_at[i] {
                    first_at[i] = (r.episode, r.step);
                    s.first = first_label(r.episode, r.step);
                }
                if s.change.is_none() {
                    s.change = change;
                }
            }
            None => {
                first_at.push((r.episode, r.step));
                out.push(SourceSite {
                    kind: r.kind.clone(),
                    source: r.source.clone(),
                    via: r.via.clone(),
                    what: r.what.clone(),
                    site,
                    function: r.function.clone(),
                    first: first_label(r.episode, r.step),
                    count: r.count,
                    at_divergence: at,
                    change,
                });
            }
        }
    }
    // A stable sort: call order is kept within a rank.
    out.sort_by_key(|s| (rank(check, &s.kind), !s.at_divergence));
    out
}

/// The cause of `outcome`, a failure of `check` on envs made by `factory` with `cfg`: the
/// scenario re-run to the divergent step with every instance traced. `None` when the outcome
/// has no divergence to explain or the env has no tracer. `factory` should host its instances
/// apart from the ones that failed (a fresh session), so that a cache the first reset of a
/// process fills is seen filling.
pub fn explain(
    check: CheckKind,
    factory: &dyn EnvFactory,
    cfg: &CheckConfig,
    outcome: &CheckOutcome,
) -> Option<Cause> {
    let d = outcome.divergence.as_ref()?;
    if outcome.passed || !outcome.applicable {
        return None;
    }
    // An env without a tracer (a built-in one) is not played again for nothing.
    let mut probe = factory.make().ok()?;
    let traces = probe.trace_sources(true).unwrap_or(false);
    let _ = probe.close();
    drop(probe);
    if !traces {
        return None;
    }
    let mut cfg = cfg.clone();
    if check != CheckKind::Continuation {
        cfg.steps = d.step.clamp(1, cfg.steps.max(1));
    }
    // The same-seed scenario up to the rollout that differed: a traced rollout of a large
    // Python env (highway-env) takes seconds, and ten of them were most of a replay's time.
    if check == CheckKind::SameSeed {
        if let Some(n) = crate::check::rollouts_through(&outcome.right) {
            cfg.rollouts = n.clamp(2, cfg.rollouts.max(2));
        }
    }
    let traced = Traced::new(factory);
    // The scenarios with several instances (or several episodes) of one process are played
    // again; the others (a fresh process, a vector twin, a fork) by one traced rollout.
    let replayed = matches!(
        check,
        CheckKind::SameSeed
            | CheckKind::Interleaved
            | CheckKind::ParallelWorkers
            | CheckKind::Continuation
    );
    let error = if replayed {
        run_check(check, &traced, &cfg, None)
            .err()
            .map(|e| e.to_string())
    } else {
        traced.solo(cfg.seed, cfg.steps).err()
    };
    let outcome = traced.finish();
    if !outcome.supported {
        return None;
    }
    let sources = sites(check, &outcome.reads, d.step);
    let instances = match outcome.instances {
        1 => "1 instance".to_string(),
        n => format!("{n} instances"),
    };
    let what = if replayed {
        format!("the {} scenario", check.name())
    } else {
        format!("seed {}", cfg.seed)
    };
    let mut traced_words = format!(
        "{what} re-run to step {} with the source tracer on ({instances})",
        cfg.steps
    );
    if let Some(e) = error {
        traced_words.push_str(&format!("; the re-run stopped: {e}"));
    }
    let headline = match sources.first() {
        Some(s) => format!("cause: {}", s.sentence()),
        None => format!(
            "cause not seen: no read of a shared RNG, an unseeded generator, a clock, the pid, entropy, directory order, the outside world or shared state by the env's code in {traced_words} (the tracer does not see C extensions' own RNGs or threads the env starts)"
        ),
    };
    Some(Cause {
        headline,
        sources,
        traced: traced_words,
    })
}

/// Why `outcome`, a check of `check` on the envs of `factory`, failed, as `lockstep check` and
/// `lockstep replay` both say it: for an env with a source tracer, its scenario re-run with
/// the tracer on in a fresh session of `factory` (a cache the first reset of a process fills
/// is seen filling, [`explain`]); for a fresh process that replays only with this process's
/// string-hash salt, the hash order. `None` for a pass, or an env with no tracer and no
/// hash-seed finding.
pub fn of_failure(
    check: CheckKind,
    factory: &dyn EnvFactory,
    runner: &dyn ProcessRunner,
    cfg: &CheckConfig,
    outcome: &CheckOutcome,
) -> Option<Cause> {
    if outcome.passed || !outcome.applicable || outcome.divergence.is_none() {
        return None;
    }
    let session = factory.session();
    let factory = session.as_deref().unwrap_or(factory);
    let cause = explain(check, factory, cfg, outcome);
    let by_hash = check == CheckKind::OtherProcess
        && runner.varies_hash_seed()
        && runner
            .run_reference(&factory.id(), cfg.seed, cfg.steps, None)
            .ok()
            .flatten()
            .is_some_and(|r| r.trace.episode == outcome.episode);
    if by_hash {
        return Some(with_first(cause, hash_order_site()));
    }
    cause
}

/// The cause of a fresh process replaying only with this process's `PYTHONHASHSEED`: when a
/// fresh process with the same hash seed gives this process's episode, the string-hash order
/// (iteration over a set or dict of strings) is what the other process changed.
pub fn hash_order_site() -> SourceSite {
    SourceSite {
        kind: "hash_order".into(),
        source: "PYTHONHASHSEED".into(),
        via: None,
        what: "string-hash order: a fresh process with this process's PYTHONHASHSEED replays the episode, one with another does not (iteration over a set, or a dict keyed by strings' hashes)".into(),
        site: None,
        function: None,
        first: "reset".into(),
        count: 1,
        at_divergence: true,
        change: None,
    }
}

/// Puts `site` first in `cause` (or makes a cause of it alone).
pub fn with_first(cause: Option<Cause>, site: SourceSite) -> Cause {
    let mut cause = cause.unwrap_or_else(|| Cause {
        headline: String::new(),
        sources: Vec::new(),
        traced: "a fresh process with this process's PYTHONHASHSEED".into(),
    });
    cause.headline = format!("cause: {}", site.sentence());
    cause.sources.insert(0, site);
    cause
}

#[cfg(test)]
mod tests;
