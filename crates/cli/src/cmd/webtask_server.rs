//! `lockstep webtask-server --db PATH` (hidden): the `webtask` env's HTTP server, run by the
//! env as a child process of its own (lockstep_webtask::server).

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The task's SQLite database.
    #[arg(long)]
    db: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    lockstep_webtask::server::serve(&args.db)
        .map_err(|e| anyhow::anyhow!("webtask server: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
