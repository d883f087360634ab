//! The core's JSON Schema validator for Python: `codomyrmex_mcp._core.schema_violations`.
//!
//! Compatibility mode's `quality.validation.validate_tool_arguments` checks a value against
//! a tool's input schema outside any registration. It runs the same validator the registry
//! runs on every `tools/call` ([`codomyrmex_mcp::CompiledSchema`]), not a second one in
//! Python. Values cross the boundary as JSON text, as everywhere in this crate.

use codomyrmex_mcp::CompiledSchema;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::Value;

/// The violations of the schema `schema_json` by the instance `instance_json`, as the JSON
/// text of an array of `{pointer, rule, schema_path, message}` objects (`[]` when valid).
///
/// Raises `ValueError` if either text is not JSON, or if the schema does not compile.
#[pyfunction]
pub fn schema_violations(schema_json: &str, instance_json: &str) -> PyResult<String> {
    let schema: Value = serde_json::from_str(schema_json)
        .map_err(|e| PyValueError::new_err(format!("the schema is not JSON: {e}")))?;
    let instance: Value = serde_json::from_str(instance_json)
        .map_err(|e| PyValueError::new_err(format!("the instance is not JSON: {e}")))?;
    let compiled = CompiledSchema::compile(&schema)
        .map_err(|reason| PyValueError::new_err(format!("invalid JSON Schema: {reason}")))?;
    Ok(Value::Array(compiled.violations(&instance)).to_string())
}
