//! The process's tokio runtime and the one way Rust code calls into Python.
//!
//! Python runs only on the runtime's blocking pool, holding the GIL for the call alone: the
//! runtime's workers (and with them `ping`, other calls and the transports) never wait for
//! Python code.

use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The shared multi-thread runtime, built on first use.
pub(crate) fn runtime() -> PyResult<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .thread_name("codomyrmex-mcp")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the tokio runtime: {e}")))
}

/// Runs `f` with the GIL on a blocking thread and returns its text, or a description of the
/// Python exception it raised.
pub(crate) async fn with_python<F>(f: F) -> Result<String, String>
where
    F: FnOnce(Python<'_>) -> PyResult<String> + Send + 'static,
{
    let joined = tokio::task::spawn_blocking(move || {
        Python::attach(|py| f(py).map_err(|e| describe(py, &e)))
    })
    .await;
    joined.unwrap_or_else(|_| Err("the Python call did not complete".to_owned()))
}

/// `TypeName: message` of a Python exception.
pub(crate) fn describe(py: Python<'_>, error: &PyErr) -> String {
    let name = error
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    let message = error
        .value(py)
        .str()
        .map(|s| s.to_string())
        .unwrap_or_default();
    if message.is_empty() {
        name
    } else {
        format!("{name}: {message}")
    }
}
