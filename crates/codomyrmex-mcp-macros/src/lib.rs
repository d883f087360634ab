//! The `#[mcp_tool]`, `#[mcp_tools]`, `#[mcp_prompt]` and `#[mcp_resource]` attribute
//! macros for `codomyrmex-mcp`.
//!
//! Read [`macro@mcp_tool`] first: it shows a complete server and the rules by which a
//! signature becomes a schema (its arguments, `#[arg(...)]`, the context, the results),
//! then [`macro@mcp_tools`] for a type whose methods are tools. The guide's chapters
//! "Tools", "Resources" and "Prompts" (`docs/` in the repository) show each in a server.
//!
//! Do not depend on this crate directly: use `codomyrmex_mcp::mcp_tool` and
//! `codomyrmex_mcp::mcp_tools`, which re-export these macros. The generated code reaches its
//! support crates (inventory, serde_json, schemars) through `codomyrmex_mcp`'s hidden
//! re-exports, so a tool crate needs no direct dependency on them.

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{ImplItem, ItemFn, ItemImpl, parse_macro_input};

mod attr;
mod prompt_resource;
mod tool;

use attr::{ToolAttr, ToolsAttr};
use tool::{Errors, Site};

/// Turns a function into an MCP tool.
///
/// A complete server with one tool:
///
/// ```standalone_crate,no_run
/// use codomyrmex_mcp::{McpServer, McpServerConfig, McpToolRegistry, mcp_tool};
///
/// /// Adds two numbers.
/// #[mcp_tool(name = "math.add", read_only)]
/// fn add(a: i64, #[arg(description = "The second term", default = 1)] b: i64) -> i64 {
///     a + b
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let registry = McpToolRegistry::discovered()?; // every #[mcp_tool] in the program
///     let config = McpServerConfig::new("calc", "1.0.0");
///     Ok(McpServer::new(config, registry.into()).serve_stdio().await?)
/// }
/// ```
///
/// The function stays an ordinary function, and its definition is derived from its signature:
///
/// ```standalone_crate
/// use codomyrmex_mcp::{McpToolRegistry, mcp_tool};
/// use serde_json::json;
///
/// /// Adds two numbers.
/// #[mcp_tool(name = "math.add", read_only)]
/// fn add(a: i64, #[arg(description = "The second term", default = 1)] b: i64) -> i64 {
///     a + b
/// }
///
/// assert_eq!(add(2, 3), 5);
/// let registry = McpToolRegistry::discovered()?;
/// let tool = registry.get("math.add").unwrap();
/// assert_eq!(tool.description.as_deref(), Some("Adds two numbers."));
/// assert_eq!(
///     tool.input_schema,
///     json!({
///         "type": "object",
///         "properties": {
///             "a": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX},
///             "b": {
///                 "type": "integer",
///                 "minimum": i64::MIN,
///                 "maximum": i64::MAX,
///                 "description": "The second term",
///                 "default": 1,
///             },
///         },
///         "required": ["a"],
///     })
/// );
/// # Ok::<(), codomyrmex_mcp::McpRegistrationError>(())
/// ```
///
/// The function keeps its signature and stays callable (`add(2, 3) == 5`). The macro adds no
/// named item beside it: the tool's definition and handler are built on demand and submitted
/// to the program-wide list that `McpToolRegistry::discovered()` reads.
///
/// # Signature
///
/// - Sync or `async`, not generic, not `unsafe`. A sync tool runs on the server's runtime:
///   keep it quick, mark it `#[mcp_tool(blocking)]` if it blocks, or make it `async` and move
///   blocking work to `spawn_blocking`.
/// - Each parameter is an argument: any type that is `serde::Deserialize` and
///   `schemars::JsonSchema` (schemars 1.x): numbers, strings, `bool`, `Option<T>`, `Vec<T>`,
///   maps, enums, your own structs. Arguments are owned: take `String`, not `&str`.
/// - One parameter may be the call's context, `&ToolContext` or `ToolContext`. It is not an
///   argument and not in the schema.
/// - The return type is `T` or `Result<T, E>`, with `T: Serialize + JsonSchema` and
///   `E: Into<McpErrorDetail>` (implemented for `std::io::Error`, `String`, `&str`,
///   `Box<dyn Error>`, and `anyhow::Error` with the `anyhow` feature). `T` may also be
///   `ToolOutput` or `McpToolResult`, for full control over the result; such a tool declares no
///   output schema. A return type counts as a `Result` when its last path segment is
///   `Result` (so `io::Result<T>` and `anyhow::Result<T>` work).
///
/// # Schemas
///
/// The input schema is a JSON Schema 2020-12 object with one property per argument. `required`
/// lists every argument that is neither an `Option` nor has a default. Nested types go in
/// `$defs`.
///
/// Generated schemas (input and output) use the spelling that narrower client dialects accept
/// and MCP Inspector does not flag: `Option<T>` is `{"anyOf": [T, {"type": "null"}]}` (as
/// Pydantic writes `Optional[T]`), never a `type` array, and `serde_json::Value` is an
/// explicit `anyOf` over the six JSON types, never a bare `true`. Each rewrite accepts exactly
/// what schemars' spelling accepts.
///
/// The output schema is `T`'s schema when `T` is an object (a struct, a map). Any other `T` is
/// wrapped: the schema is `{"type": "object", "properties": {"result": T}, "required":
/// ["result"]}`, and `structuredContent` is `{"result": value}`.
///
/// # Attribute arguments
///
/// | Argument | Effect |
/// |---|---|
/// | `name = "ns.tool"` | The invocation name; defaults to the function's name. |
/// | `title = "..."` | The display title. |
/// | `description = "..."` | Overrides the doc comment as the description. |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | Annotations (`= false` to state the opposite). |
/// | `category = "..."`, `tags = ["a", "b"]`, `version = "1.2"` | Go in the tool's `_meta`. |
/// | `deprecated_in = "2.0"` | In `_meta` too; the first call logs a warning. |
/// | `timeout = "30s"` | Overrides the server's timeout (`"500ms"`, `"2m"`, or seconds: `30`). |
/// | `deny_unknown_arguments` | Refuses arguments the function does not take: the schema says `"additionalProperties": false`. |
/// | `blocking` | For a sync tool that blocks (file or network I/O, heavy computation): each call runs on the runtime's blocking pool, so it stalls no other request (`ToolSettings::blocking`). Refused on an `async fn`. |
/// | `ui = "ui://server/view"` | MCP Apps: links the tool to the UI resource its results render in (`_meta.ui.resourceUri`); the URI must start with `ui://`, and the server refuses the tool if no resource serves it. |
/// | `visibility = ["app"]` | MCP Apps: who may call the tool (`_meta.ui.visibility`): `"model"`, `"app"` or both (the default). `["app"]` is a tool the app calls that hosts do not show the model. |
/// | `crate = "::path"` | Where `codomyrmex_mcp` is, if renamed. |
///
/// On a parameter, `#[arg(description = "...", default = expr, rename = "key")]` sets the
/// property's description, its default (used when the argument is absent; it must be of the
/// parameter's type, and a string literal converts with `Into`), and its JSON key. A doc
/// comment on the parameter also works as its description.
///
/// `#[arg(...)]` also adds JSON Schema validation keywords to the property, which the registry
/// checks before the call: `minimum = 1` and `maximum = 500` (numbers), `min_length` and
/// `max_length` (strings), `min_items` and `max_items` (arrays). On an `Option` they constrain
/// the value when one is given.
///
/// ```standalone_crate
/// use codomyrmex_mcp::{McpToolRegistry, mcp_tool};
/// use serde_json::json;
///
/// /// Repeats a word.
/// #[mcp_tool(name = "text.repeat", deny_unknown_arguments)]
/// fn repeat(
///     #[arg(min_length = 1)] word: String,
///     #[arg(minimum = 1, maximum = 10)] times: Option<u32>,
/// ) -> String {
///     word.repeat(times.unwrap_or(2) as usize)
/// }
///
/// let registry = McpToolRegistry::discovered()?;
/// assert_eq!(
///     registry.get("text.repeat").unwrap().input_schema,
///     json!({
///         "type": "object",
///         "properties": {
///             "word": {"type": "string", "minLength": 1},
///             "times": {"anyOf": [
///                 {"type": "integer", "minimum": 1, "maximum": 10},
///                 {"type": "null"},
///             ]},
///         },
///         "required": ["word"],
///         "additionalProperties": false,
///     })
/// );
/// # Ok::<(), codomyrmex_mcp::McpRegistrationError>(())
/// ```
///
/// # Registration
///
/// - `McpToolRegistry::discovered()` returns a registry with every `#[mcp_tool]` in the
///   program.
/// - `registry.register_fn(add)` registers one, and `ToolRegistration::of(add)` returns its
///   registration to adjust first.
/// - Methods of a stateful type: see [`macro@mcp_tools`].
#[proc_macro_attribute]
pub fn mcp_tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    if is_method_marker(&attr) {
        // A method `#[mcp_tools]` has already handled.
        return item;
    }
    let mut errors = Errors::default();
    let attr = match ToolAttr::parse(attr.into()) {
        Ok(attr) => attr,
        Err(e) => {
            errors.push(e);
            ToolAttr::default()
        }
    };
    let mut function = parse_macro_input!(item as ItemFn);
    let krate = attr.krate.clone().unwrap_or_else(tool::default_krate);
    let analysed = tool::analyse(
        attr,
        &function.attrs,
        &mut function.sig,
        Site::Free,
        &mut errors,
    );
    let generated = match analysed {
        Some(tool) if errors.is_empty() => {
            let ident = &tool.ident;
            let registration = tool::registration(&tool, &krate, Site::Free);
            quote! {
                #[doc(hidden)]
                const _: () = {
                    fn __mcp_registration() -> #krate::__private::ToolRegistration {
                        #registration
                    }
                    fn __mcp_type_id() -> #krate::__private::TypeId {
                        #krate::__private::type_id_of(&#ident)
                    }
                    #krate::__private::inventory::submit! {
                        #krate::__private::ToolEntry::new(__mcp_registration, __mcp_type_id)
                    }
                };
            }
        }
        _ => quote!(),
    };
    let errors = errors.into_compile_errors();
    quote!(#function #generated #errors).into()
}

/// Makes the `#[mcp_tool]` methods of an `impl` block registrable with the value that holds
/// their state.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use codomyrmex_mcp::{McpToolRegistry, mcp_tool, mcp_tools};
///
/// struct Counter {
///     hits: AtomicU64,
/// }
///
/// #[mcp_tools]
/// impl Counter {
///     /// Counts a hit and returns the total.
///     #[mcp_tool(name = "counter.hit")]
///     fn hit(&self, by: Option<u64>) -> u64 {
///         self.hits.fetch_add(by.unwrap_or(1), Ordering::Relaxed) + by.unwrap_or(1)
///     }
///
///     fn reset(&self) {
///         // Not a tool: only methods marked `#[mcp_tool]` are.
///         self.hits.store(0, Ordering::Relaxed);
///     }
/// }
///
/// let registry = McpToolRegistry::new();
/// registry.register_methods(Arc::new(Counter { hits: AtomicU64::new(0) }))?;
/// assert_eq!(registry.list_tools(), ["counter.hit"]);
/// # Ok::<(), codomyrmex_mcp::McpRegistrationError>(())
/// ```
///
/// Methods take `&self` or `self: Arc<Self>`; associated functions without a receiver work
/// too. `&mut self` does not: calls run concurrently, so keep mutable state behind a lock or
/// an atomic. Every other rule of [`macro@mcp_tool`] applies to each method. Methods are not
/// discovered (there is no value to call them on): register them with
/// `registry.register_methods(Arc::new(value))`.
///
/// The methods' `#[mcp_tool]` attributes resolve like any attribute: import `mcp_tool` with
/// `mcp_tools` (as above), or write `#[codomyrmex_mcp::mcp_tool]`.
///
/// The type implements `codomyrmex_mcp::McpTools`; one `#[mcp_tools]` block per type.
#[proc_macro_attribute]
pub fn mcp_tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let attr = match ToolsAttr::parse(attr.into()) {
        Ok(attr) => attr,
        Err(e) => {
            errors.push(e);
            ToolsAttr::default()
        }
    };
    let krate = attr.krate.unwrap_or_else(tool::default_krate);
    let mut block = parse_macro_input!(item as ItemImpl);
    if let Some(param) = block.generics.type_params().next() {
        errors.at(
            param,
            "`#[mcp_tools]` does not support generic impl blocks: tool schemas are derived \
             from concrete types. Write the block for a concrete type",
        );
    }
    if let Some(param) = block.generics.const_params().next() {
        errors.at(
            param,
            "`#[mcp_tools]` does not support generic impl blocks: tool schemas are derived \
             from concrete types. Write the block for a concrete type",
        );
    }
    let mut tools = Vec::new();
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(position) = method.attrs.iter().position(|a| {
            a.path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "mcp_tool")
        }) else {
            continue;
        };
        // The attribute stays, as an inert marker (see `METHOD_MARKER`), so that its path is
        // resolved like any attribute's: an imported `mcp_tool` counts as used.
        let attribute = method.attrs[position].clone();
        let path = attribute.path();
        let marker = format_ident!("{}", METHOD_MARKER, span = path.span());
        method.attrs[position] = syn::parse_quote_spanned!(attribute.span()=> #[#path(#marker)]);
        let attr = match ToolAttr::from_attribute(&attribute) {
            Ok(attr) => attr,
            Err(e) => {
                errors.push(e);
                ToolAttr::default()
            }
        };
        if let Some(k) = &attr.krate {
            errors.at(
                k,
                "set `crate = ...` on `#[mcp_tools(...)]`, not on a method",
            );
        }
        if let Some(tool) = tool::analyse(
            attr,
            &method.attrs,
            &mut method.sig,
            Site::Method,
            &mut errors,
        ) {
            tools.push(tool);
        }
    }
    let generated = if errors.is_empty() {
        let registrations = tools.iter().map(|t| {
            let registration = tool::registration(t, &krate, Site::Method);
            quote! {{
                let __mcp_state = #krate::__private::Arc::clone(__mcp_state);
                #registration
            }}
        });
        let self_ty = &block.self_ty;
        let (impl_generics, _, where_clause) = block.generics.split_for_impl();
        quote! {
            #[doc(hidden)]
            const _: () = {
                impl #impl_generics #krate::McpTools for #self_ty #where_clause {
                    fn tool_registrations(
                        __mcp_state: &#krate::__private::Arc<Self>,
                    ) -> #krate::__private::Vec<#krate::__private::ToolRegistration> {
                        #krate::__private::Vec::from([#(#registrations),*])
                    }
                }
            };
        }
    } else {
        quote!()
    };
    let errors = errors.into_compile_errors();
    quote!(#block #generated #errors).into()
}

/// Turns a function into an MCP prompt.
///
/// ```standalone_crate
/// use codomyrmex_mcp::{ContentBlock, McpPromptRegistry, PromptMessage, mcp_prompt};
///
/// /// Summarises a text.
/// #[mcp_prompt(name = "summarise")]
/// fn summarise(
///     #[arg(description = "The text")] text: String,
///     style: Option<String>,
/// ) -> Vec<PromptMessage> {
///     let style = style.unwrap_or_else(|| "brief".into());
///     vec![PromptMessage::user(ContentBlock::text(format!("Summarise ({style}): {text}")))]
/// }
///
/// let registry = McpPromptRegistry::discovered()?;
/// assert_eq!(registry.names(), ["summarise"]);
/// # Ok::<(), codomyrmex_mcp::FnRegistrationError>(())
/// ```
///
/// - Sync or `async`, not generic. Each parameter is a prompt argument: `String` (required)
///   or `Option<String>` (optional); one parameter may be `ToolContext` or `&ToolContext`.
/// - `#[arg(description = "...", rename = "key")]` (or a doc comment) on a parameter
///   describes the argument.
/// - It returns `PromptResult`, `Vec<PromptMessage>`, or `Result<_, E>` with
///   `E: Into<McpErrorDetail>`.
/// - Attribute arguments: `name` (defaults to the function's name), `title`, `description`
///   (defaults to the doc comment), `crate`.
/// - Registration: `McpPromptRegistry::discovered()` finds every one in the program;
///   `registry.register_prompt_fn(f)` registers one.
#[proc_macro_attribute]
pub fn mcp_prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = parse_macro_input!(item as ItemFn);
    prompt_resource::expand_prompt(attr.into(), function).into()
}

/// Turns a function into an MCP resource or resource template.
///
/// ```standalone_crate
/// use codomyrmex_mcp::{McpResourceRegistry, mcp_resource};
///
/// /// The configuration.
/// #[mcp_resource(uri = "config://app", mime_type = "application/json")]
/// fn config() -> String {
///     "{}".into()
/// }
///
/// /// A user's avatar.
/// #[mcp_resource(uri_template = "users://{id}/avatar", mime_type = "image/png")]
/// async fn avatar(id: String) -> Result<Vec<u8>, String> {
///     Err(format!("no avatar for {id}"))
/// }
///
/// let registry = McpResourceRegistry::discovered()?;
/// assert_eq!(registry.resources().len(), 1);
/// assert_eq!(registry.templates().len(), 1);
/// # Ok::<(), codomyrmex_mcp::FnRegistrationError>(())
/// ```
///
/// - `uri = "..."` for a fixed resource, or `uri_template = "..."` (RFC 6570) for a template;
///   also `name` (defaults to the function's name), `title`, `description` (defaults to the
///   doc comment), `mime_type`, `crate`.
/// - Sync or `async`, not generic. A template's parameters are `String`s (or
///   `Option<String>` for query variables) named like its variables; every variable needs one,
///   and a parameter that is not a variable is a compile error. One parameter may be
///   `ToolContext` or `&ToolContext`.
/// - It returns `String` (text contents), `Vec<u8>` (a blob), `Vec<ResourceContents>`, or
///   `Result<_, E>` with `E: Into<ResourceError>` (`String` and `&str` convert).
/// - Registration: `McpResourceRegistry::discovered()` finds every one in the program;
///   `registry.register_resource_fn(f)` registers one.
#[proc_macro_attribute]
pub fn mcp_resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = parse_macro_input!(item as ItemFn);
    prompt_resource::expand_resource(attr.into(), function).into()
}

/// What `#[mcp_tools]` leaves in place of each method's `#[mcp_tool(...)]`:
/// `#[mcp_tool(__mcp_tools_method)]`, which expands to the method unchanged. Removing the
/// attribute instead would leave an imported `mcp_tool` unused (an `unused_imports` warning
/// in a module whose tools are all methods).
const METHOD_MARKER: &str = "__mcp_tools_method";

fn is_method_marker(attr: &TokenStream) -> bool {
    let mut tokens = attr.clone().into_iter();
    matches!(
        (tokens.next(), tokens.next()),
        (Some(proc_macro::TokenTree::Ident(ident)), None) if ident.to_string() == METHOD_MARKER
    )
}
