//! Build script: with the Python bindings, the target interpreter's version and kind as
//! `cfg`s (`Py_3_14`, `PyPy`, `Py_GIL_DISABLED`, ...), which `rust/py_dict_versions.rs` reads.

fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
