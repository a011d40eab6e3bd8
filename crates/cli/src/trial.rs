//! One trial of `lockstep check`: the reset-contract audit and the replay checks of one
//! (env, seed), turned into report records. An error stops only the part it hit (the audit, or
//! one check): the other parts still run, and what was gathered stays in the report.

use std::path::Path;

use lockstep::audit::{audit_trial, inferred_contract, TrialRecord};
use lockstep::check::{run_check, CheckConfig, CheckKind, CheckOutcome as ReplayOutcome};
use lockstep::env::EnvFactory;
use lockstep::golden::Golden;
use lockstep::report::{AuditRecord, CheckOutcome, GoldenOutcome, Timeline, Trial};
use lockstep_canon::Value;

use crate::cmd::check::TrialContext;
use crate::envs::EnvSource;

/// Runs the audit and the chosen replay checks of `env_id` for `seed`.
pub fn run_trial(env_id: &str, source: &EnvSource, seed: u64, ctx: &TrialContext) -> Trial {
    let factory = source.factory();
    let mut trial = Trial {
        env: env_id.to_string(),
        seed,
        audit: None,
        checks: Vec::new(),
        error: None,
    };
    let mut errors = Vec::new();
    match audit(factory, seed, ctx.steps) {
        Ok(record) => trial.audit = Some(record),
        Err(e) => errors.push(format!("reset-contract audit: {e:#}")),
    }
    let runner = source.runner();
    let cfg = CheckConfig::new(seed, ctx.steps);
    for name in ctx.checks {
        let outcome = name
            .parse::<CheckKind>()
            .map_err(|e| e.to_string())
            .and_then(|kind| {
                run_check(kind, factory, &cfg, Some(runner)).map_err(|e| e.to_string())
            });
        match outcome {
            Ok(outcome) => trial.checks.push(check_record(name, &outcome)),
            Err(e) => errors.push(format!("{name} check: {e}")),
        }
    }
    if !errors.is_empty() {
        trial.error = Some(errors.join("; "));
    }
    trial
}

fn audit(factory: &dyn EnvFactory, seed: u64, steps: u64) -> anyhow::Result<AuditRecord> {
    let mut env = factory.make()?;
    let contract = match env.contract() {
        Some(c) => c,
        None => inferred_contract(factory, seed)?,
    };
    let record = audit_trial(env.as_mut(), &contract, seed, steps, &mut |_| Ok(()));
    let closed = env.close();
    let record = record?;
    closed?;
    Ok(audit_record(&record))
}

fn audit_record(r: &TrialRecord) -> AuditRecord {
    let (different_fields, changes) = match &r.diff {
        Some(d) => (
            d.different_fields.clone(),
            d.changes.iter().map(|c| json(&c.to_value())).collect(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    let mut missing = r.initial_conformance.missing.clone();
    let mut unexpected = r.initial_conformance.unexpected.clone();
    for p in &r.repeat_conformance.missing {
        if !missing.contains(p) {
            missing.push(p.clone());
        }
    }
    for p in &r.repeat_conformance.unexpected {
        if !unexpected.contains(p) {
            unexpected.push(p.clone());
        }
    }
    AuditRecord {
        conforms: r.conforms,
        initial_fingerprint: Some(r.initial_fingerprint.clone()),
        repeat_fingerprint: Some(r.repeat_fingerprint.clone()),
        different_fields,
        changes,
        missing,
        unexpected,
        success: Some(r.success),
        detail: json(&r.to_value()),
    }
}

fn check_record(name: &str, o: &ReplayOutcome) -> CheckOutcome {
    CheckOutcome {
        check: name.to_string(),
        passed: o.passed,
        summary: o.summary.clone(),
        divergence: o.divergence.as_ref().map(|d| json(&d.to_value())),
        timeline: o.timeline.as_ref().map(|(left, right)| Timeline {
            left_label: o.left.clone(),
            right_label: o.right.clone(),
            left: left.iter().map(|d| d.to_hex()).collect(),
            right: right.iter().map(|d| d.to_hex()).collect(),
            first_divergent_step: o.divergence.as_ref().map(|d| d.step),
        }),
    }
}

/// Verifies one golden file against the env it names. The flag is true when the file could not
/// be verified at all (unreadable, unknown env, env error), as opposed to verified and drifted.
pub fn verify_golden(path: &Path) -> (GoldenOutcome, bool) {
    let file = path.display().to_string();
    let mut outcome = GoldenOutcome {
        file: file.clone(),
        env: None,
        seed: None,
        passed: false,
        summary: String::new(),
        divergence: None,
    };
    let golden = match Golden::load(path) {
        Ok(g) => g,
        Err(e) => {
            outcome.summary = e.to_string();
            return (outcome, true);
        }
    };
    outcome.env = Some(golden.env.clone());
    outcome.seed = Some(golden.seed);
    let factory = match crate::envs::resolve(&golden.env) {
        Ok(f) => f,
        Err(e) => {
            outcome.summary = format!("{e:#}");
            return (outcome, true);
        }
    };
    let v = match lockstep::golden::verify(factory.as_ref(), &golden) {
        Ok(v) => v,
        Err(e) => {
            outcome.summary = e.to_string();
            return (outcome, true);
        }
    };
    outcome.passed = v.passed;
    outcome.divergence = v.divergence.as_ref().map(|d| json(&d.to_value()));
    let next = format!("to accept the current run: lockstep golden update {file} --reason \"...\"");
    outcome.summary = match (&v.divergence, v.passed) {
        (_, true) => format!("episode {} reproduced", golden.episode.short()),
        (Some(d), false) => format!("drifted at step {}; {next}", d.step),
        (None, false) => format!("not reproduced ({}); {next}", v.notes.join("; ")),
    };
    (outcome, false)
}

/// The report carries plain JSON; NaN (never in our own records) would become null.
fn json(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}
