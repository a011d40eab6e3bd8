//! The `lockstep` command line: parses arguments, calls the library, renders, and turns the
//! outcome into an exit code: 0 everything holds, 1 a check found a difference, 2 an error.
//! The binary (main.rs) and the Python package's `lockstep` console script (crates/python
//! links this crate) both call [`run`], so they are the same CLI; the items exported below
//! are the rest of what the package uses.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

// First: its macros (`outln!`, `out!`) are used by every module declared after it.
#[macro_use]
pub(crate) mod output;

pub(crate) mod budget;
pub(crate) mod child_runner;
// What a cluster reads of a task, and the connector, are used by the Python package's Ray
// (exported below); the binary has no cluster to hand tasks to.
pub(crate) mod cluster;
pub(crate) mod cmd;
pub(crate) mod counts;
pub(crate) mod envs;
pub(crate) mod isolated;
pub(crate) mod json_input;
#[cfg(target_os = "linux")]
pub(crate) mod large_pages;
pub(crate) mod render;
pub(crate) mod shell;

/// Large buffers in 2 MiB pages (`large_pages.rs`): the binary and the Python package's
/// extension both link this crate, so both have them.
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: large_pages::LargePages = large_pages::LargePages;

/// The terminal text of a check report, for the Python package's `Report` (the same words).
pub use budget::header_line as budget_line;
/// Sets the command that re-runs this CLI for the other-process check (program first), e.g.
/// `[python, -m, lockstep]` when the CLI runs inside Python; without it the CLI re-runs its
/// own executable.
pub use child_runner::set_self_command;
/// Trials on a cluster (`check --ray`): the Python package installs Ray's [`Cluster`].
pub use cluster::{set_connector, Answer, Cluster, ClusterOptions, ShippedFile, Task};
/// The replay command of a failed trial, from its report alone (as `lockstep check` prints it).
pub use cmd::check::replay_from_report;
/// `--budget`'s duration syntax (`90s`, `2m`, `1h30m`), for the Python package's `budget=`.
pub use counts::duration as parse_duration;
pub use render::{group_text, summary_text};

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

/// Each command's arguments are built only for the command that runs (`defer`): building all
/// of them took 0.27 ms of every run, 2-3% of a fingerprint of a few MB.
#[derive(Subcommand)]
#[command(defer = true)]
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
    /// Read a contract's probed layers (databases, files, HTTP, a browser).
    Layers(cmd::layers::Args),
    /// The `webtask` env's HTTP server (started by the env itself).
    #[command(hide = true)]
    WebtaskServer(cmd::webtask_server::Args),
}

/// Parses `args` (the program name first) and runs the command; returns the exit code. The
/// binary's `main`, and the entry of the Python package's `lockstep` console script, so both
/// are the same CLI.
pub fn run(args: impl IntoIterator<Item = std::ffi::OsString>) -> u8 {
    let (code, error) = run_reporting(args);
    if let Some(error) = error {
        eprintln!("error: {error}");
    }
    code
}

/// [`run`], with the error that made it exit 2 returned rather than printed (the Python
/// package raises it); usage errors are printed by clap, as always.
pub fn run_reporting(args: impl IntoIterator<Item = std::ffi::OsString>) -> (u8, Option<String>) {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors: clap knows which exit code each deserves.
            // They go to stdout through `output`, so a closed pipe (`--help | head`) ends
            // quietly with 141, as every command's output does.
            if !e.use_stderr() {
                let written =
                    output::print(&e.render().ansi().to_string()).and_then(|()| output::flush());
                if let Err(output::OutputError::Closed) = written {
                    return (141, None);
                }
                return (u8::try_from(e.exit_code()).unwrap_or(2), None);
            }
            let _ = e.print();
            return (u8::try_from(e.exit_code()).unwrap_or(2), None);
        }
    };
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
        Command::Layers(a) => cmd::layers::run(a),
        Command::WebtaskServer(a) => cmd::webtask_server::run(a),
    };
    let result = result.and_then(|code| {
        output::flush()?;
        Ok(code)
    });
    match result {
        Ok(code) => (exit_code_number(code), None),
        Err(err) => match err.downcast_ref::<output::OutputError>() {
            // A closed pipe ends quietly, as a program killed by SIGPIPE does.
            Some(output::OutputError::Closed) => (141, None),
            _ => (2, Some(format!("{err:#}"))),
        },
    }
}

/// The number of an [`ExitCode`] (std has no stable getter; every code here is made from a
/// `u8`).
fn exit_code_number(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .unwrap_or(1)
}
