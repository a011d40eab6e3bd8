//! `lockstep layers snapshot CONTRACT [--json]`: reads every probed layer of a contract with
//! the probes of lockstep-layers and prints each layer's fingerprint, or with `--json` one
//! object keyed by layer (canonical JSON), ready for `lockstep diff`. Exit 0, or 2 when a
//! layer cannot be read (the message names the layer, the probe and the cause).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use lockstep::contract::Contract;
use lockstep::fingerprint::fingerprint;
use lockstep::probe::snapshot_layers;
use lockstep_canon::{Map, Value};

use super::diff::render;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// Snapshot a contract's probed layers: one fingerprint a layer, or the snapshots as JSON.
    Snapshot(SnapshotArgs),
}

#[derive(clap::Args)]
pub struct SnapshotArgs {
    /// The contract file (.toml or .json); probe paths are relative to it.
    pub contract: PathBuf,
    /// Print the snapshots as one JSON object keyed by layer.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Snapshot(a) => snapshot(a),
    }
}

fn snapshot(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let contract = Contract::load(&args.contract)?;
    if !contract.has_probed_layers() {
        bail!(
            "{}: contract {} has no probed layers (a layer with `probe = \"...\"`)",
            args.contract.display(),
            contract.name
        );
    }
    let snapshots = snapshot_layers(&contract, &lockstep_layers::probes())?;
    if args.json {
        let all: Map = snapshots.into_iter().collect();
        println!("{}", render(&Value::Object(all)));
        return Ok(ExitCode::SUCCESS);
    }
    let profile = contract.profile.profile();
    for (layer, snapshot) in &snapshots {
        let digest = fingerprint(snapshot, profile).map_err(|e| {
            anyhow::anyhow!(
                "layer `{layer}`: no canonical form in profile {}: {e}",
                contract.profile
            )
        })?;
        println!("{layer}: sha256:{digest}");
    }
    Ok(ExitCode::SUCCESS)
}
