//! `lockstep experiment reset-contract [--json FILE]`: the seed-000 experiment. Prints the
//! seed's three lines; writes its `RESULTS` object (canonical JSON, `python` profile) to FILE.
//! Exit 0 when the recorded outcome is reproduced, 1 when it is not.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use lockstep::atomic_file::write_atomic;
use lockstep::experiment::reset_contract_experiment;
use lockstep_canon::Profile;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// A fixed seed is not a reset contract: complete vs partial reset of a three-layer fixture.
    ResetContract(ResetContractArgs),
}

#[derive(clap::Args)]
pub struct ResetContractArgs {
    /// Write the full RESULTS object (every repeat record) to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::ResetContract(a) => reset_contract(a),
    }
}

fn reset_contract(args: ResetContractArgs) -> anyhow::Result<ExitCode> {
    let results = reset_contract_experiment();
    for line in results.summary_lines() {
        outln!("{line}");
    }
    if let Some(path) = &args.json {
        let mut bytes = lockstep_canon::to_vec(&results.to_value(), Profile::Python)
            .context("results have no canonical form")?;
        bytes.push(b'\n');
        write_atomic(path, &bytes).with_context(|| format!("{}: cannot write", path.display()))?;
    }
    if results.matches_recorded_outcome() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("the outcome differs from the one recorded in the seed document");
        Ok(ExitCode::from(1))
    }
}
