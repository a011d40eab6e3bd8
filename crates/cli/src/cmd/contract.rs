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
    /// Propose a contract for an external env: its state's fields, and a probed layer for
    /// every directory it wrote, database file it opened and endpoint it connected to, each
    /// with where it was seen (docs/contract.md, "Inferring a contract").
    Infer(InferArgs),
}

#[derive(clap::Args)]
pub struct InferArgs {
    /// Trials to watch (seeds 0..N), each on a fresh process: a reset, the steps, a reset.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub seeds: u64,
    /// Steps per trial.
    #[arg(long, default_value_t = 20, value_parser = crate::counts::steps, allow_negative_numbers = true)]
    pub steps: u64,
    /// Write the proposal here (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub external: crate::envs::ExternalEnvArgs,
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
        Command::Infer(a) => infer(a),
    }
}

fn infer(args: InferArgs) -> anyhow::Result<ExitCode> {
    if args.external.contract.is_some() {
        anyhow::bail!("contract infer proposes a contract: it takes no --contract");
    }
    let argv = args
        .external
        .command()?
        .ok_or_else(|| anyhow::anyhow!("name the env with --cmd -- ARGV..."))?;
    let mut factory = args.external.factory_of(argv.to_vec())?;
    // Each child records what it touches (the adapter installs its audit hook only when asked).
    factory
        .options
        .env
        .push((lockstep_protocol::EFFECTS_VAR.to_string(), "1".to_string()));
    let seeds: Vec<u64> = (0..args.seeds).collect();
    let (env_id, fields, effects) =
        lockstep::proposal::observe(&factory, &seeds, args.steps).map_err(anyhow::Error::msg)?;
    let how = format!(
        "{} seed{} of {} steps, each in a fresh process, of `{}`",
        seeds.len(),
        if seeds.len() == 1 { "" } else { "s" },
        args.steps,
        lockstep_protocol::display_argv(&args.external.argv)
    );
    let text = lockstep::proposal::propose(&lockstep::proposal::Observed {
        env_id: &env_id,
        fields,
        effects: &effects,
        how,
        shared_dirs: args.external.shared_dirs,
    });
    // What is written must load: a proposal `check --contract` refuses helps no one.
    Contract::from_toml_str(&text, "the proposed contract")
        .map_err(|e| anyhow::anyhow!("internal error: the proposed contract does not load: {e}"))?;
    match &args.out {
        Some(path) => {
            lockstep::atomic_file::write_atomic(path, text.as_bytes())
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            eprintln!(
                "wrote {} ({} effects seen; check it with `lockstep check --contract {} --cmd -- ...`)",
                path.display(),
                effects.len(),
                path.display()
            );
        }
        None => out!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
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
