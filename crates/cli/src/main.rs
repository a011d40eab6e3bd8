//! The `lockstep` binary: the library's CLI (lib.rs) with the process's arguments.
//!
//! Why so thin: the Python package's console script runs the same CLI through the library,
//! and a binary that compiled the CLI's sources again (as it once did) cost a second build of
//! the whole crate: 47 s of a core in a fresh `cargo test --workspace --release`, now 1.4 s.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(lockstep_cli::run(std::env::args_os()))
}
