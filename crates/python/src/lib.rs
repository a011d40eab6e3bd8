//! `lockstep._native`: the PyO3 bindings of the Python package `lockstep`.
//!
//! Private by its leading underscore: the public API is the plain Python of
//! `python/lockstep/__init__.py`, with docstrings, over these functions and classes (typed in
//! `python/lockstep/_native.pyi`). The bindings convert and call; every rule lives in the Rust
//! crates (`lockstep`, `lockstep-canon`, `lockstep-range`), so Python gets the CLI's bytes.

use pyo3::prelude::*;

mod arrays;
mod canonical;
mod check;
mod cli;
mod cluster;
mod convert;
mod errors;
mod py_env;
mod range;

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(canonical::canonical, m)?)?;
    m.add_function(wrap_pyfunction!(canonical::fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(canonical::diff, m)?)?;
    m.add_class::<range::RangeCore>()?;
    m.add_class::<range::RangeBatchCore>()?;
    m.add_function(wrap_pyfunction!(range::range_catalogue, m)?)?;
    m.add_class::<check::NativeReport>()?;
    m.add_function(wrap_pyfunction!(check::check, m)?)?;
    m.add_function(wrap_pyfunction!(check::parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(check::trace, m)?)?;
    m.add_function(wrap_pyfunction!(check::golden_record, m)?)?;
    m.add_function(wrap_pyfunction!(check::golden_env, m)?)?;
    m.add_function(wrap_pyfunction!(check::golden_verify, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli_run, m)?)?;
    m.add_function(wrap_pyfunction!(check::report_from_json, m)?)?;
    Ok(())
}
