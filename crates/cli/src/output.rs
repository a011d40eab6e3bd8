//! Standard output that never panics. `println!` panics when stdout is closed or full
//! (`lockstep trace --json | head -c 10`, `> /dev/full`); every command prints through
//! [`outln!`] and [`out!`] instead, which return an [`OutputError`]: `main` ends quietly on a
//! closed pipe (exit 141, as a program killed by SIGPIPE, so a pipeline never reads it as
//! success) and reports any other write error with exit 2.

use std::fmt;
use std::io::{self, Write};

/// Writing to standard output failed.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The reader went away (a closed pipe): nothing to report, nobody to report it to.
    #[error("standard output was closed")]
    Closed,
    #[error("cannot write to standard output: {0}")]
    Failed(io::Error),
}

impl From<io::Error> for OutputError {
    fn from(e: io::Error) -> OutputError {
        if e.kind() == io::ErrorKind::BrokenPipe {
            OutputError::Closed
        } else {
            OutputError::Failed(e)
        }
    }
}

/// Writes formatted text (and a newline when asked) to stdout.
pub fn write(args: fmt::Arguments<'_>, newline: bool) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    if newline {
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes raw bytes to stdout.
pub fn write_bytes(bytes: &[u8]) -> Result<(), OutputError> {
    io::stdout().lock().write_all(bytes)?;
    Ok(())
}

/// Writes `text` as it is.
pub fn print(text: &str) -> Result<(), OutputError> {
    write_bytes(text.as_bytes())
}

/// Flushes stdout: the last buffered bytes can fail too (`/dev/full`).
pub fn flush() -> Result<(), OutputError> {
    io::stdout().lock().flush()?;
    Ok(())
}

/// `println!` that returns the error to the caller (with `?`) instead of panicking.
#[macro_export]
macro_rules! outln {
    () => { $crate::output::write(format_args!(""), true)? };
    ($($arg:tt)*) => { $crate::output::write(format_args!($($arg)*), true)? };
}

/// `print!` that returns the error to the caller (with `?`) instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write(format_args!($($arg)*), false)? };
}
