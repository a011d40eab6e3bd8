//! Errors cross into Python as the exception classes of `lockstep._errors` (plain Python, so a
//! class can also be a `ValueError` or `RuntimeError` and existing `except` clauses keep
//! working). Rust code names the class; the message is the library's own.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The exception classes of `lockstep._errors`.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A value has no canonical form (`CanonicalError`).
    Canonical,
    /// An environment failed (`EnvError`).
    Env,
    /// Bad arguments: unknown names, out-of-range numbers (`ConfigError`).
    Config,
    /// A golden file could not be read or recorded (`GoldenError`).
    Golden,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::Canonical => "CanonicalError",
            Kind::Env => "EnvError",
            Kind::Config => "ConfigError",
            Kind::Golden => "GoldenError",
        }
    }
}

/// A Python exception of class `kind` with `message`.
pub fn error(kind: Kind, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| {
        let class = py
            .import("lockstep._errors")
            .and_then(|m| m.getattr(kind.class()));
        match class {
            Ok(class) => match PyTuple::new(py, [message.as_str()]).and_then(|a| class.call1(a)) {
                Ok(exc) => PyErr::from_value(exc),
                Err(e) => e,
            },
            // The package is broken (an extension module without its Python half).
            Err(e) => e,
        }
    })
}
