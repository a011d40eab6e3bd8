//! The `lockstep` command line as a library, so the Python package's `lockstep` console
//! script runs this very CLI (crates/python links it). The binary's own source is the whole
//! library: nothing here but the entry points.

#[path = "main.rs"]
#[allow(dead_code)] // the binary's `main` is unused in the library
mod app;

/// The terminal text of a check report, for the Python package's `Report` (the same words).
pub use app::budget::header_line as budget_line;
/// The replay command of a failed trial, from its report alone (as `lockstep check` prints it).
pub use app::cmd::check::replay_from_report;
/// `--budget`'s duration syntax (`90s`, `2m`, `1h30m`), for the Python package's `budget=`.
pub use app::counts::duration as parse_duration;
pub use app::render::{group_text, summary_text};
pub use app::{run, run_reporting};
// The binary's modules name each other `crate::...`: the same paths here.
/// Trials on a cluster (`check --ray`): the Python package installs Ray's [`Cluster`].
pub use app::cluster::{set_connector, Answer, Cluster, ClusterOptions, ShippedFile, Task};
pub(crate) use app::{
    budget, child_runner, cluster, cmd, counts, envs, isolated, json_input, output, render, shell,
};

/// Sets the command that re-runs this CLI for the other-process check (program first), e.g.
/// `[python, -m, lockstep]` when the CLI runs inside Python; without it the CLI re-runs its
/// own executable.
pub fn set_self_command(argv: Vec<std::ffi::OsString>) {
    app::set_self_command(argv);
}
