//! `lockstep report merge`: join shard reports into the report one run would have written.

use std::path::PathBuf;
use std::process::ExitCode;

use lockstep::report::{merge, Report};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: ReportCommand,
}

#[derive(clap::Subcommand)]
enum ReportCommand {
    /// Merge shard reports (`lockstep check --shard I/N`) into one report.
    Merge {
        /// The shard reports (report.json files), one per shard, in any order.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Directory to write report.json and report.html into.
        #[arg(long, default_value = "lockstep-report")]
        out: PathBuf,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        ReportCommand::Merge { reports, out } => {
            let mut parsed = Vec::with_capacity(reports.len());
            for path in &reports {
                let name = path.display().to_string();
                let bytes = crate::json_input::read_bytes(path)?;
                parsed.push((name.clone(), Report::from_json(&bytes, &name)?));
            }
            let merged = merge(parsed)?;
            let replay = super::check::replay_from_report(&merged);
            super::check::write_report(&merged, &out, &replay)?;
            outln!(
                "merged {} shard reports into {}: {}",
                reports.len(),
                out.join("report.json").display(),
                if merged.passed {
                    "all checks pass"
                } else {
                    "some checks fail"
                }
            );
            Ok(ExitCode::from(if merged.passed { 0 } else { 1 }))
        }
    }
}
