//! The `lockstep` binary: parses arguments, calls the library, renders, and turns the outcome
//! into an exit code: 0 everything holds, 1 a check found a difference, 2 an error.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod child_runner;
mod cmd;
mod envs;
mod json_input;
mod render;
mod shell;

/// Prove or disprove "fixed seed, same episode" for agent and RL environments.
#[derive(Parser)]
#[command(name = "lockstep", version, about)]
struct Cli {
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
    /// Read a contract's probed layers (databases, files, HTTP, a browser).
    Layers(cmd::layers::Args),
    /// The `webtask` env's HTTP server (started by the env itself).
    #[command(hide = true)]
    WebtaskServer(cmd::webtask_server::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
        Command::Layers(a) => cmd::layers::run(a),
        Command::WebtaskServer(a) => cmd::webtask_server::run(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
