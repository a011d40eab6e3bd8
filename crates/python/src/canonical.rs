//! `canonical`, `fingerprint` and `diff`: the CLI's `canon`, `fingerprint` and `diff` on Python
//! values (converted by [`crate::convert`], so the bytes are the CLI's for the same JSON).

use lockstep::audit::DiffRecord;
use lockstep_canon::{Profile, Value};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::{to_py, to_value};
use crate::errors::{error, Kind};

fn profile(name: &str) -> PyResult<Profile> {
    name.parse::<Profile>().map_err(|e| error(Kind::Config, e))
}

fn canonical_bytes(py: Python<'_>, value: Value, profile: Profile) -> PyResult<Vec<u8>> {
    py.detach(move || lockstep_canon::to_vec(&value, profile))
        .map_err(|e| error(Kind::Canonical, format!("{}: {e}", profile.name())))
}

/// The canonical bytes of `obj` in `profile` (`python`, `python-strict` or `jcs`).
#[pyfunction]
#[pyo3(signature = (obj, profile = "python"))]
pub fn canonical<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    profile: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let p = self::profile(profile)?;
    let bytes = canonical_bytes(py, to_value(obj)?, p)?;
    Ok(PyBytes::new(py, &bytes))
}

/// The SHA-256 of `obj`'s canonical bytes in `profile`, as 64 lowercase hex digits.
#[pyfunction]
#[pyo3(signature = (obj, profile = "python"))]
pub fn fingerprint(py: Python<'_>, obj: &Bound<'_, PyAny>, profile: &str) -> PyResult<String> {
    let p = self::profile(profile)?;
    let value = to_value(obj)?;
    py.detach(move || lockstep::fingerprint::fingerprint(&value, p))
        .map_err(|e| error(Kind::Canonical, format!("{}: {e}", p.name())))
}

/// The field-level differences of `a` -> `b`: `{"different_fields": [...], "changes":
/// [{"pointer", "kind", "before"?, "after"?}, ...]}` (the CLI's `diff --json` without `equal`).
#[pyfunction]
pub fn diff<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (a, b) = (to_value(a)?, to_value(b)?);
    let record = py.detach(move || DiffRecord::between(&a, &b, None).to_value());
    to_py(py, &record)
}
