//! `lockstep._native`: the PyO3 bindings of the Python package `lockstep`.
//!
//! Private by its leading underscore: the public API is the plain Python of
//! `python/lockstep/__init__.py`, with docstrings, over these functions and classes (typed in
//! `python/lockstep/_native.pyi`). The bindings convert and call; every rule lives in the Rust
//! crates (`lockstep`, `lockstep-canon`, `lockstep-range`), so Python gets the CLI's bytes.

use pyo3::prelude::*;

mod canonical;
mod convert;
mod errors;

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(canonical::canonical, m)?)?;
    m.add_function(wrap_pyfunction!(canonical::fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(canonical::diff, m)?)?;
    Ok(())
}
