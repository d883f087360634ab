//! What `#[mcp_tool]` and `#[mcp_tools]` build on: discovery, explicit registration, stateful
//! methods, error conversions, and the hidden items the generated code calls.

use std::convert::Infallible;
use std::sync::Arc;

use serde_json::{Map, json};

use crate::prompts::McpPromptRegistry;
use crate::registry::{McpRegistrationError, McpToolRegistry, ToolRegistration};
use crate::resources::{McpResourceRegistry, ResourceError, ResourceRegistrationError};
use crate::schema::McpErrorDetail;

/// A type whose methods are tools. `#[mcp_tools]` implements it; register the methods with
/// [`McpToolRegistry::register_methods`].
///
/// Examples: the `codomyrmex-mcp` crate's docs, *Tools, prompts and resources from
/// functions* (they use its macros, and this crate's tests build without that crate).
pub trait McpTools: Send + Sync + 'static {
    /// The registrations of the type's tools, each holding a clone of `state`.
    fn tool_registrations(state: &Arc<Self>) -> Vec<ToolRegistration>
    where
        Self: Sized;
}

impl McpToolRegistry {
    /// A registry holding every `#[mcp_tool]` function linked into the program.
    ///
    /// This is the counterpart of the Python module's discovery: a tool defined anywhere in the
    /// program, in any crate, is found without being named. Methods (`#[mcp_tools]`) are not
    /// discovered, since they need a value; add them with [`register_methods`].
    ///
    /// Fails, returning no registry, if two tools share a name with different definitions.
    ///
    /// Examples: the `codomyrmex-mcp` crate's docs, *Tools, prompts and resources from
    /// functions* (they use its macros, and this crate's tests build without that crate).
    ///
    /// [`register_methods`]: McpToolRegistry::register_methods
    pub fn discovered() -> Result<Self, McpRegistrationError> {
        let registry = Self::new();
        for entry in inventory::iter::<__private::ToolEntry> {
            registry.register_tool((entry.build)())?;
        }
        Ok(registry)
    }

    /// Registers one `#[mcp_tool]` function, given by name: `registry.register_fn(add)`.
    ///
    /// Fails with [`McpRegistrationError::InvalidName`] if `tool` is not an `#[mcp_tool]`
    /// function, and like [`register_tool`](Self::register_tool) otherwise.
    pub fn register_fn<F: 'static>(&self, tool: F) -> Result<(), McpRegistrationError> {
        match ToolRegistration::of(tool) {
            Some(registration) => self.register_tool(registration),
            None => Err(McpRegistrationError::InvalidName {
                name: std::any::type_name::<F>().to_owned(),
                reason: "it is not an #[mcp_tool] function, so it has no tool definition".into(),
            }),
        }
    }

    /// Registers every `#[mcp_tool]` method of an `#[mcp_tools]` impl block, calling them on
    /// `state`.
    ///
    /// Stops at the first tool the registry refuses; the tools registered before it stay. As
    /// with any registration, registering an identical definition again changes nothing: a
    /// second value of the same type does not replace the first (unregister the tools first, or
    /// use another registry).
    pub fn register_methods<T: McpTools>(&self, state: Arc<T>) -> Result<(), McpRegistrationError> {
        for registration in T::tool_registrations(&state) {
            self.register_tool(registration)?;
        }
        Ok(())
    }
}

impl ToolRegistration {
    /// The registration of an `#[mcp_tool]` function, or `None` if `tool` is not one. Use it
    /// to adjust a tool (its settings, say) before registering it.
    pub fn of<F: 'static>(tool: F) -> Option<Self> {
        let wanted = __private::type_id_of(&tool);
        inventory::iter::<__private::ToolEntry>
            .into_iter()
            .find(|entry| (entry.type_id)() == wanted)
            .map(|entry| (entry.build)())
    }
}

// ---------------------------------------------------------------------------------------------
// `#[mcp_prompt]` and `#[mcp_resource]`: discovery and explicit registration.
// ---------------------------------------------------------------------------------------------

/// Why an `#[mcp_prompt]` or `#[mcp_resource]` function could not be registered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FnRegistrationError {
    /// The function has no `#[mcp_prompt]` / `#[mcp_resource]` attribute.
    #[error("{function} is not an #[{attribute}] function")]
    NotAnnotated {
        /// The function's type name.
        function: String,
        /// `mcp_prompt` or `mcp_resource`.
        attribute: &'static str,
    },
    /// A prompt with this name is already registered.
    #[error("prompt {0:?} is already registered")]
    DuplicatePrompt(String),
    /// The resource registry refused the resource.
    #[error(transparent)]
    Resource(#[from] ResourceRegistrationError),
}

impl McpPromptRegistry {
    /// A registry holding every `#[mcp_prompt]` function linked into the program.
    ///
    /// Examples: the `codomyrmex-mcp` crate's docs, *Tools, prompts and resources from
    /// functions* (they use its macros, and this crate's tests build without that crate).
    pub fn discovered() -> Result<Self, FnRegistrationError> {
        let registry = Self::new();
        for entry in inventory::iter::<__private::PromptEntry> {
            registry.register_prompt((entry.build)())?;
        }
        Ok(registry)
    }

    /// Registers one `#[mcp_prompt]` function, given by name: `registry.register_prompt_fn(f)`.
    pub fn register_prompt_fn<F: 'static>(&self, prompt: F) -> Result<(), FnRegistrationError> {
        let wanted = __private::type_id_of(&prompt);
        match inventory::iter::<__private::PromptEntry>
            .into_iter()
            .find(|entry| (entry.type_id)() == wanted)
        {
            Some(entry) => self.register_prompt((entry.build)()),
            None => Err(FnRegistrationError::NotAnnotated {
                function: std::any::type_name::<F>().to_owned(),
                attribute: "mcp_prompt",
            }),
        }
    }

    fn register_prompt(
        &self,
        registration: __private::PromptRegistration,
    ) -> Result<(), FnRegistrationError> {
        let name = registration.definition.name.clone();
        let handler = registration.handler;
        if self.add(registration.definition, move |request| handler.get(request)) {
            Ok(())
        } else {
            Err(FnRegistrationError::DuplicatePrompt(name))
        }
    }
}

impl McpResourceRegistry {
    /// A registry holding every `#[mcp_resource]` function linked into the program.
    ///
    /// Examples: the `codomyrmex-mcp` crate's docs, *Tools, prompts and resources from
    /// functions* (they use its macros, and this crate's tests build without that crate).
    pub fn discovered() -> Result<Self, FnRegistrationError> {
        let registry = Self::new();
        for entry in inventory::iter::<__private::ResourceEntry> {
            registry.register_resource((entry.build)())?;
        }
        Ok(registry)
    }

    /// Registers one `#[mcp_resource]` function, given by name:
    /// `registry.register_resource_fn(f)`.
    pub fn register_resource_fn<F: 'static>(&self, resource: F) -> Result<(), FnRegistrationError> {
        let wanted = __private::type_id_of(&resource);
        match inventory::iter::<__private::ResourceEntry>
            .into_iter()
            .find(|entry| (entry.type_id)() == wanted)
        {
            Some(entry) => self.register_resource((entry.build)()),
            None => Err(FnRegistrationError::NotAnnotated {
                function: std::any::type_name::<F>().to_owned(),
                attribute: "mcp_resource",
            }),
        }
    }

    fn register_resource(
        &self,
        registration: __private::ResourceRegistration,
    ) -> Result<(), FnRegistrationError> {
        let reader = registration.reader;
        let read = move |request| reader.read(request);
        match registration.kind {
            __private::ResourceKind::Static(definition) => self.add(definition, read)?,
            __private::ResourceKind::Template(definition) => {
                self.add_template(definition, read, std::collections::BTreeMap::new())?;
            }
        }
        Ok(())
    }
}

impl From<String> for ResourceError {
    /// A [`ResourceError::Failed`] with the string as its message.
    fn from(message: String) -> Self {
        ResourceError::Failed(message)
    }
}

impl From<&str> for ResourceError {
    /// A [`ResourceError::Failed`] with the string as its message.
    fn from(message: &str) -> Self {
        ResourceError::Failed(message.to_owned())
    }
}

// ---------------------------------------------------------------------------------------------
// Error conversions: what a tool's `Err` may be.
// ---------------------------------------------------------------------------------------------

/// The `error_type` for errors that carry no better name.
const GENERIC_ERROR: &str = "ToolError";

impl From<std::io::Error> for McpErrorDetail {
    /// Named after the Python exception the seed would raise: `FileNotFoundError`,
    /// `PermissionError`, `FileExistsError`, `TimeoutError`, ..., else `OSError`. The OS error
    /// number, when there is one, is in `error_details.errno`.
    fn from(error: std::io::Error) -> Self {
        io_error_detail(&error, error.to_string())
    }
}

fn io_error_detail(error: &std::io::Error, message: String) -> McpErrorDetail {
    use std::io::ErrorKind as K;
    let error_type = match error.kind() {
        K::NotFound => "FileNotFoundError",
        K::PermissionDenied => "PermissionError",
        K::AlreadyExists => "FileExistsError",
        K::TimedOut => "TimeoutError",
        K::Interrupted => "InterruptedError",
        K::WouldBlock => "BlockingIOError",
        K::BrokenPipe => "BrokenPipeError",
        K::ConnectionRefused => "ConnectionRefusedError",
        K::ConnectionReset => "ConnectionResetError",
        K::ConnectionAborted => "ConnectionAbortedError",
        K::IsADirectory => "IsADirectoryError",
        K::NotADirectory => "NotADirectoryError",
        _ => "OSError",
    };
    let detail = McpErrorDetail::new(error_type, message);
    match error.raw_os_error() {
        Some(errno) => {
            let mut details = Map::new();
            details.insert("errno".into(), json!(errno));
            detail.with_details(details)
        }
        None => detail,
    }
}

impl From<String> for McpErrorDetail {
    /// A `ToolError` with the string as its message.
    fn from(message: String) -> Self {
        McpErrorDetail::new(GENERIC_ERROR, message)
    }
}

impl From<&str> for McpErrorDetail {
    /// A `ToolError` with the string as its message.
    fn from(message: &str) -> Self {
        McpErrorDetail::new(GENERIC_ERROR, message)
    }
}

impl From<Box<dyn std::error::Error + Send + Sync>> for McpErrorDetail {
    /// The detail itself if the box holds an [`McpErrorDetail`], the `std::io::Error`
    /// conversion if it holds one, else a `ToolError` with the error's message.
    fn from(error: Box<dyn std::error::Error + Send + Sync>) -> Self {
        match error.downcast::<McpErrorDetail>() {
            Ok(detail) => *detail,
            Err(error) => match error.downcast::<std::io::Error>() {
                Ok(io) => McpErrorDetail::from(*io),
                Err(error) => McpErrorDetail::new(GENERIC_ERROR, error.to_string()),
            },
        }
    }
}

impl From<Box<dyn std::error::Error>> for McpErrorDetail {
    /// As for `Box<dyn Error + Send + Sync>`.
    fn from(error: Box<dyn std::error::Error>) -> Self {
        match error.downcast::<McpErrorDetail>() {
            Ok(detail) => *detail,
            Err(error) => match error.downcast::<std::io::Error>() {
                Ok(io) => McpErrorDetail::from(*io),
                Err(error) => McpErrorDetail::new(GENERIC_ERROR, error.to_string()),
            },
        }
    }
}

impl From<Infallible> for McpErrorDetail {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

#[cfg(feature = "anyhow")]
impl From<anyhow::Error> for McpErrorDetail {
    /// The detail itself if the error is an [`McpErrorDetail`]; the `std::io::Error`
    /// conversion if it is one; else a `ToolError`. The message is the whole context chain
    /// (`"outer: inner"`).
    fn from(error: anyhow::Error) -> Self {
        if let Some(detail) = error.downcast_ref::<McpErrorDetail>() {
            return detail.clone();
        }
        let message = format!("{error:#}");
        match error.downcast_ref::<std::io::Error>() {
            Some(io) => io_error_detail(io, message),
            None => McpErrorDetail::new(GENERIC_ERROR, message),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The generated code's support. Not public API: it may change in any release.
// ---------------------------------------------------------------------------------------------

#[doc(hidden)]
#[path = "generated.rs"]
pub mod __private;
