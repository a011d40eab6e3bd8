//! The `lockstep` console script: the CLI itself (crates/cli's library target), run with the
//! GIL released. Its other-process check re-runs `python -m lockstep`, because inside the
//! package this process's executable is the interpreter.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the CLI on `args` (program name first); returns its exit code.
#[pyfunction]
pub fn cli_main(py: Python<'_>, args: Vec<OsString>, self_command: Vec<OsString>) -> u8 {
    py.detach(move || {
        lockstep_cli::set_self_command(self_command);
        lockstep_cli::run(args)
    })
}
