//! lockstep [`Array`]s as numpy arrays: one copy of the elements, dtype and shape kept.

use lockstep::env::{Array, ArrayData};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A fresh numpy array holding a copy of `a`'s elements, of its dtype and shape.
pub fn to_numpy<'py>(py: Python<'py>, a: &Array) -> PyResult<Bound<'py, PyAny>> {
    let flat = match a.data() {
        ArrayData::Bool(v) => PyArray1::from_iter(py, v.iter().map(|&b| b != 0)).into_any(),
        ArrayData::I8(v) => PyArray1::from_slice(py, v).into_any(),
        ArrayData::U8(v) => PyArray1::from_slice(py, v).into_any(),
        ArrayData::I32(v) => PyArray1::from_slice(py, v).into_any(),
        ArrayData::I64(v) => PyArray1::from_slice(py, v).into_any(),
        ArrayData::F32(v) => PyArray1::from_slice(py, v).into_any(),
        ArrayData::F64(v) => PyArray1::from_slice(py, v).into_any(),
    };
    if a.shape().len() == 1 {
        return Ok(flat);
    }
    // A reshape of a fresh contiguous array is a view: no second copy.
    flat.call_method1("reshape", (PyTuple::new(py, a.shape())?,))
}

/// The integers of one multi-discrete action: a numpy integer array, or any sequence of ints.
pub fn int_vector(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if let Ok(arr) = obj.cast::<PyArray1<i64>>() {
        return Ok(arr.readonly().as_slice()?.to_vec());
    }
    obj.extract::<Vec<i64>>()
}
