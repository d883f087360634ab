//! The exceptions `_core` raises of its own (added to the module in `lib.rs`): in a module of
//! their own, so that the classes raising them (`registry.rs`) do not import the crate root.

pyo3::create_exception!(
    _core,
    MCPRegistrationError,
    pyo3::exceptions::PyValueError,
    "A tool registration was refused (an invalid name or schema, or a conflicting definition); the registry is unchanged."
);

pyo3::create_exception!(
    _core,
    InputRequired,
    pyo3::exceptions::PyBaseException,
    "Raised by Context.elicit in the 2026-07-28 era: the tool must end; it runs again with the answer. A BaseException, so that `except Exception` in a tool does not swallow it."
);

pyo3::create_exception!(
    _core,
    ClientRequestFailed,
    pyo3::exceptions::PyRuntimeError,
    "A request to the client failed: it lacks the capability, refused, or the call was cancelled."
);
