//! `lockstep contract check CONTRACT STATE.json [--json]`: does a state conform to a reset
//! contract, and if so, its fingerprint (docs/contract.md). The contract's probed layers are
//! read (lockstep-layers) and placed in the state first. Exit 0 conforms, 1 does not, 2 error
//! (a layer that cannot be read among them).

use std::path::PathBuf;
use std::process::ExitCode;

use lockstep::contract::Contract;
use lockstep_canon::{Map, Value};

use super::diff::render;
use crate::json_input::read_json;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// Check a state against a contract: missing and unexpected fields, then its fingerprint.
    Check(CheckArgs),
}

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The contract file (.toml or .json).
    pub contract: PathBuf,
    /// The state, a JSON document.
    pub state: PathBuf,
    /// Print one JSON object instead of lines (format in docs/contract.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Check(a) => check(a),
    }
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let contract = Contract::load(&args.contract)?;
    // Probed layers are read now and placed in the state under their names.
    let state = lockstep::probe::probe_state(
        &contract,
        &lockstep_layers::probes(),
        read_json(&args.state)?,
    )?;
    let conformance = contract.check(&state);
    // The fingerprint only means something for a conforming state.
    let fingerprint = if conformance.conforms() {
        Some(contract.fingerprint(&state).map_err(|e| {
            anyhow::anyhow!(
                "{}: no canonical form in profile {}: {e}",
                args.state.display(),
                contract.profile
            )
        })?)
    } else {
        None
    };
    let name = format!("{} version {}", contract.name, contract.version);
    if args.json {
        let mut m = match conformance.to_value() {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let mut c = Map::new();
        c.insert("name".into(), Value::String(contract.name.clone()));
        c.insert("version".into(), Value::from(contract.version));
        c.insert("profile".into(), Value::from(contract.profile.as_str()));
        m.insert("contract".into(), Value::Object(c));
        m.insert(
            "fingerprint".into(),
            match &fingerprint {
                Some(f) => lockstep_canon::to_value(f)?,
                None => Value::Null,
            },
        );
        outln!("{}", render(&Value::Object(m)));
    } else if let Some(f) = &fingerprint {
        outln!(
            "conforms: {} matches contract {name} ({} fields)",
            args.state.display(),
            contract.fields().count()
        );
        outln!(
            "fingerprint: {}:{} (contract {}, version {}, profile {})",
            f.algorithm,
            f.digest,
            contract.name,
            contract.version,
            f.profile
        );
    } else {
        outln!(
            "does not conform: {} against contract {name}",
            args.state.display()
        );
        for p in &conformance.missing {
            let field = p
                .strip_prefix('/')
                .unwrap_or(p)
                .replace("~1", "/")
                .replace("~0", "~");
            match contract.layer_of(&field) {
                Some(layer) => outln!("missing {p} (layer {layer})"),
                None => outln!("missing {p}"),
            }
        }
        for p in &conformance.unexpected {
            if p.is_empty() {
                outln!("unexpected (root): the state is not a JSON object");
            } else {
                outln!("unexpected {p}");
            }
        }
    }
    Ok(ExitCode::from(if conformance.conforms() { 0 } else { 1 }))
}
