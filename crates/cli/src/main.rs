//! The `lockstep` binary: parses arguments, calls the library, renders, and turns the outcome
//! into an exit code: 0 everything holds, 1 a check found a difference, 2 an error.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

// First: its macros (`outln!`, `out!`) are used by every module declared after it.
#[macro_use]
mod output;

mod child_runner;
mod cmd;
mod envs;
mod isolated;
mod json_input;
mod render;
mod shell;

/// Prove or disprove "fixed seed, same episode" for agent and RL environments.
#[derive(Parser)]
#[command(name = "lockstep", version, about)]
struct Cli {
    /// Largest input read from a file or standard input, in bytes.
    #[arg(long, global = true, value_name = "BYTES", default_value_t = json_input::DEFAULT_MAX_INPUT_BYTES)]
    max_input_bytes: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Audit environments end to end: reset contracts, replay checks, goldens; write a report.
    Check(cmd::check::Args),
    /// Print the SHA-256 fingerprint of a JSON document's canonical bytes.
    Fingerprint(cmd::fingerprint::Args),
    /// Print the canonical bytes of a JSON document.
    Canon(cmd::canon::Args),
    /// Field-level differences between two JSON documents (exit 0 equal, 1 differ, 2 error).
    Diff(cmd::diff::Args),
    /// Reset contracts.
    Contract(cmd::contract::Args),
    /// Reproduce the experiments of the specification.
    Experiment(cmd::experiment::Args),
    /// Run the replay checks on an environment.
    Replay(cmd::replay::Args),
    /// Print the episode digest of one rollout.
    Trace(cmd::trace::Args),
    /// Record, verify and update golden trajectory files.
    Golden(cmd::golden::Args),
    /// Play and benchmark the built-in network-defence environment.
    Range(cmd::range::Args),
    /// Work with report files.
    Report(cmd::report::Args),
    /// One trial or golden of `lockstep check`, run in this fresh process (internal).
    #[command(hide = true)]
    Worker(cmd::worker::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    json_input::set_max_input_bytes(cli.max_input_bytes);
    let result = match cli.command {
        Command::Check(a) => cmd::check::run(a),
        Command::Fingerprint(a) => cmd::fingerprint::run(a),
        Command::Canon(a) => cmd::canon::run(a),
        Command::Diff(a) => cmd::diff::run(a),
        Command::Contract(a) => cmd::contract::run(a),
        Command::Experiment(a) => cmd::experiment::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Trace(a) => cmd::trace::run(a),
        Command::Golden(a) => cmd::golden::run(a),
        Command::Range(a) => cmd::range::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Worker(a) => cmd::worker::run(a),
    };
    let result = result.and_then(|code| {
        output::flush()?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(err) => match err.downcast_ref::<output::OutputError>() {
            // A closed pipe ends quietly, as a program killed by SIGPIPE does.
            Some(output::OutputError::Closed) => ExitCode::from(141),
            _ => {
                eprintln!("error: {err:#}");
                ExitCode::from(2)
            }
        },
    }
}
