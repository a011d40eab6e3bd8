//! The `lockstep` console script: the CLI itself (crates/cli's library target), run with the
//! GIL released. Its other-process check re-runs `python -m lockstep`, because inside the
//! package this process's executable is the interpreter; its `--ray` runs trials through
//! `lockstep.ray` (crate::cluster).

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the CLI on `args` (program name first); returns its exit code.
#[pyfunction]
pub fn cli_main(py: Python<'_>, args: Vec<OsString>, self_command: Vec<OsString>) -> u8 {
    py.detach(move || {
        lockstep_cli::set_self_command(self_command);
        crate::cluster::install();
        lockstep_cli::run(args)
    })
}

/// [`cli_main`] for the package's own calls (`lockstep.ray.check`): the exit code and, when it
/// is 2, the error, returned rather than printed.
#[pyfunction]
pub fn cli_run(
    py: Python<'_>,
    args: Vec<OsString>,
    self_command: Vec<OsString>,
) -> (u8, Option<String>) {
    py.detach(move || {
        lockstep_cli::set_self_command(self_command);
        crate::cluster::install();
        lockstep_cli::run_reporting(args)
    })
}
