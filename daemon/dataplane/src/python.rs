//! The Python face of the data path (`netcfgd._dataplane`).

use pyo3::prelude::*;

#[pymodule]
fn _dataplane(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
