//! [`McpPromptRegistry`]: prompt templates with declared arguments and per-argument
//! completion.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, PoisonError, RwLock};

use crate::sync::{Changes, Generation};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::context::ToolContext;
use crate::registry::BoxFuture;
use crate::resources::Completer;
use crate::schema::McpErrorDetail;
use crate::wire::ContentBlock;

/// A declared prompt argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    /// The name.
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    pub required: bool,
}

impl PromptArgument {
    /// A required argument.
    pub fn required(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            required: true,
        }
    }

    /// An optional argument.
    pub fn optional(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            required: false,
        }
    }
}

/// A prompt's description (MCP `Prompt`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptDefinition {
    /// The name.
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl PromptDefinition {
    /// A prompt with a name and description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            arguments: Vec::new(),
            meta: None,
        }
    }

    /// Adds an argument.
    pub fn with_argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.push(argument);
        self
    }
}

/// A message of a prompt result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// The content.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A user message.
    pub fn user(content: ContentBlock) -> Self {
        Self {
            role: "user",
            content,
        }
    }

    /// An assistant message.
    pub fn assistant(content: ContentBlock) -> Self {
        Self {
            role: "assistant",
            content,
        }
    }
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptResult {
    /// A description of the rendered prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

/// A `prompts/get` request as the handler sees it.
#[derive(Debug, Clone)]
pub struct PromptRequest {
    /// The arguments, all strings.
    pub arguments: BTreeMap<String, String>,
    /// The request's context.
    pub context: ToolContext,
}

/// Renders a prompt.
pub trait PromptHandler: Send + Sync + 'static {
    /// Produces the messages.
    fn get(
        &self,
        request: PromptRequest,
    ) -> BoxFuture<'static, Result<PromptResult, McpErrorDetail>>;
}

impl<F, Fut> PromptHandler for F
where
    F: Fn(PromptRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<PromptResult, McpErrorDetail>> + Send + 'static,
{
    fn get(
        &self,
        request: PromptRequest,
    ) -> BoxFuture<'static, Result<PromptResult, McpErrorDetail>> {
        Box::pin(self(request))
    }
}

pub(crate) struct RegisteredPrompt {
    pub(crate) definition: PromptDefinition,
    wire: Value,
    pub(crate) handler: Arc<dyn PromptHandler>,
    completers: BTreeMap<String, Completer>,
}

/// Prompts by name.
///
/// A prompt is a definition (its name, description and arguments) and a handler that
/// renders its messages from the client's arguments; a server lists and renders them
/// (`prompts/list`, `prompts/get`). The `#[mcp_prompt]` macro of `codomyrmex_mcp` builds
/// both from a function.
///
/// ```
/// use codomyrmex_mcp_core::PromptRequest;
/// use codomyrmex_mcp_core::{
///     ContentBlock, McpErrorDetail, McpPromptRegistry, PromptArgument, PromptDefinition,
///     PromptMessage, PromptResult,
/// };
///
/// let prompts = McpPromptRegistry::new();
/// let added = prompts.add(
///     PromptDefinition::new("code.review", "Asks for a code review")
///         .with_argument(PromptArgument::required("code", "The code to review")),
///     |request: PromptRequest| async move {
///         let code = request.arguments.get("code").cloned().unwrap_or_default();
///         Ok::<_, McpErrorDetail>(PromptResult {
///             description: None,
///             messages: vec![PromptMessage::user(ContentBlock::text(format!("Review {code}")))],
///         })
///     },
/// );
/// assert!(added);
/// assert_eq!(prompts.names(), ["code.review"]);
/// assert!(prompts.remove("code.review"));
/// assert!(prompts.names().is_empty());
/// ```
pub struct McpPromptRegistry {
    prompts: RwLock<BTreeMap<String, Arc<RegisteredPrompt>>>,
    generation: Generation,
}

impl Default for McpPromptRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for McpPromptRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpPromptRegistry")
            .field("prompts", &self.names())
            .finish()
    }
}

impl McpPromptRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            prompts: RwLock::new(BTreeMap::new()),
            generation: Generation::new(),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<RegisteredPrompt>>> {
        self.prompts.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a prompt; `false` if the name is taken.
    pub fn add(&self, definition: PromptDefinition, handler: impl PromptHandler) -> bool {
        self.add_with_completion(definition, handler, BTreeMap::new())
    }

    /// Adds a prompt with per-argument completers; `false` if the name is taken.
    pub fn add_with_completion(
        &self,
        definition: PromptDefinition,
        handler: impl PromptHandler,
        completers: BTreeMap<String, Completer>,
    ) -> bool {
        let wire = serde_json::to_value(&definition).unwrap_or(Value::Null);
        let mut map = self.prompts.write().unwrap_or_else(PoisonError::into_inner);
        if map.contains_key(&definition.name) {
            return false;
        }
        map.insert(
            definition.name.clone(),
            Arc::new(RegisteredPrompt {
                definition,
                wire,
                handler: Arc::new(handler),
                completers,
            }),
        );
        drop(map);
        self.generation.bump();
        true
    }

    /// Removes a prompt.
    pub fn remove(&self, name: &str) -> bool {
        let removed = self
            .prompts
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name)
            .is_some();
        if removed {
            self.generation.bump();
        }
        removed
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Changes whenever the list changes.
    pub fn subscribe(&self) -> Changes {
        self.generation.subscribe()
    }

    /// The number of changes so far (what a cached list page was built at).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.get()
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<RegisteredPrompt>> {
        self.read().get(name).cloned()
    }

    pub(crate) fn page(&self, after: Option<&str>, size: usize) -> (Vec<Value>, Option<String>) {
        crate::util::page_after(&self.read(), after, size, |p| p.wire.clone())
    }

    /// The completer of a prompt argument: `None` for an unknown prompt, `Some(None)` when
    /// the argument has none. The engine runs it under its execution policy.
    pub(crate) fn completer(&self, prompt: &str, argument: &str) -> Option<Option<Completer>> {
        let p = self.lookup(prompt)?;
        Some(p.completers.get(argument).cloned())
    }
}

impl RegisteredPrompt {
    /// Checks required arguments; the error names the missing ones.
    pub(crate) fn check_arguments(&self, args: &BTreeMap<String, String>) -> Result<(), String> {
        let missing: Vec<&str> = self
            .definition
            .arguments
            .iter()
            .filter(|a| a.required && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "Missing required prompt argument(s): {}",
                missing.join(", ")
            ))
        }
    }
}
