//! `lockstep diff A.json B.json [--json] [--contract FILE]`: field-level differences between
//! two JSON documents (docs/diff.md). Exit 0 equal, 1 different, 2 error.

use std::path::PathBuf;
use std::process::ExitCode;

use lockstep::audit::DiffRecord;
use lockstep::contract::Contract;
use lockstep_canon::{Profile, Value};

use crate::json_input::read_json;

#[derive(clap::Args)]
pub struct Args {
    /// The first document (the "before" side).
    pub a: PathBuf,
    /// The second document (the "after" side).
    pub b: PathBuf,
    /// Print one JSON object instead of lines (format in docs/diff.md).
    #[arg(long)]
    pub json: bool,
    /// A reset contract (TOML or JSON): list differing fields in its declaration order.
    #[arg(long, value_name = "FILE")]
    pub contract: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.a.as_os_str() == "-" && args.b.as_os_str() == "-" {
        anyhow::bail!("diff - -: standard input can be only one of the two documents");
    }
    let contract = args.contract.as_deref().map(Contract::load).transpose()?;
    let a = read_json(&args.a)?;
    let b = read_json(&args.b)?;
    let d = DiffRecord::between(&a, &b, contract.as_ref());
    if args.json {
        let mut v = d.to_value();
        if let Value::Object(m) = &mut v {
            m.insert("equal".into(), Value::Bool(d.is_empty()));
        }
        outln!("{}", render(&v));
    } else if d.is_empty() {
        outln!("no differences");
    } else {
        out!("{}", human(&d));
    }
    Ok(ExitCode::from(if d.is_empty() { 0 } else { 1 }))
}

/// The human rendering: `different fields: a, b` then one line per change.
pub fn human(d: &DiffRecord) -> String {
    let fields: Vec<String> = d
        .different_fields
        .iter()
        .map(|f| {
            if f.is_empty() {
                "(root)".to_string()
            } else {
                f.clone()
            }
        })
        .collect();
    let mut out = format!("different fields: {}\n", fields.join(", "));
    for c in &d.changes {
        let at = if c.pointer.is_empty() {
            "(root)"
        } else {
            &c.pointer
        };
        match (&c.before, &c.after) {
            (Some(b), Some(a)) => out.push_str(&format!(
                "{} {at}: {} -> {}\n",
                c.kind,
                render(b),
                render(a)
            )),
            (Some(v), None) | (None, Some(v)) => {
                out.push_str(&format!("{} {at}: {}\n", c.kind, render(v)))
            }
            (None, None) => out.push_str(&format!("{} {at}\n", c.kind)),
        }
    }
    out
}

/// Compact canonical JSON (the `python` profile, which writes every value).
pub fn render(v: &Value) -> String {
    let bytes =
        lockstep_canon::to_vec(v, Profile::Python).unwrap_or_else(|e| e.to_string().into_bytes());
    String::from_utf8_lossy(&bytes).into_owned()
}
