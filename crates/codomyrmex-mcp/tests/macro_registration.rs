//! `#[mcp_tool]` and `#[mcp_tools]`: discovery, explicit registration and stateful methods.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use codomyrmex_mcp::{
    McpRegistrationError, McpToolCall, McpToolRegistry, McpToolResult, ToolContext,
    ToolRegistration, mcp_tool, mcp_tools,
};
use serde_json::{Value, json};

#[mcp_tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[mcp_tool(name = "math.double")]
async fn double(n: i64) -> i64 {
    tokio::task::yield_now().await;
    n * 2
}

mod nested {
    use codomyrmex_mcp::mcp_tool;

    /// Echoes its input.
    #[mcp_tool(name = "nested.echo")]
    pub fn echo(text: String) -> String {
        text
    }
}

/// The library under another path, as when a crate re-exports it.
mod mcp {
    pub use codomyrmex_mcp::*;
}

#[mcp_tool(name = "renamed.path", crate = "crate::mcp")]
fn through_another_path(flag: Option<bool>) -> bool {
    flag.unwrap_or(true)
}

struct Renamed;

#[mcp_tools(crate = crate::mcp)]
impl Renamed {
    #[mcp_tool(name = "renamed.method")]
    fn method(&self) -> u8 {
        7
    }
}

fn not_a_tool(a: i64) -> i64 {
    a
}

/// Every `#[mcp_tool]` function in this test program, sorted.
const EVERY_TOOL: [&str; 5] = [
    "add",
    "local.answer",
    "math.double",
    "nested.echo",
    "renamed.path",
];

fn call(name: &str, arguments: Value) -> McpToolCall {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    McpToolCall::new(name, arguments)
}

fn data(result: &McpToolResult) -> Value {
    assert_eq!(result.status(), "success", "{result:?}");
    Value::Object(result.data().cloned().unwrap_or_default())
}

#[test]
fn discovery_finds_every_tool_function_and_no_method() {
    let registry = McpToolRegistry::discovered().unwrap();
    assert_eq!(registry.list_tools(), EVERY_TOOL);
    // Repeatable: the same definitions every time.
    assert_eq!(
        McpToolRegistry::discovered().unwrap().definitions(),
        registry.definitions()
    );
}

#[test]
fn tools_inside_function_bodies_are_discovered_too() {
    fn never_called() -> i64 {
        #[mcp_tool(name = "local.answer")]
        fn answer() -> i64 {
            42
        }
        answer()
    }
    let _ = never_called;
    let registry = McpToolRegistry::discovered().unwrap();
    assert!(registry.get("local.answer").is_some());
}

#[tokio::test(flavor = "current_thread")]
async fn discovered_tools_run() {
    let registry = McpToolRegistry::discovered().unwrap();
    let sum = registry
        .execute(&call("add", json!({"a": 2, "b": 3})))
        .await;
    assert_eq!(data(&sum), json!({"result": 5}));
    let doubled = registry
        .execute(&call("math.double", json!({"n": 21})))
        .await;
    assert_eq!(data(&doubled), json!({"result": 42}));
    let echoed = registry
        .execute(&call("nested.echo", json!({"text": "hi"})))
        .await;
    assert_eq!(data(&echoed), json!({"result": "hi"}));
}

#[tokio::test(flavor = "current_thread")]
async fn the_crate_argument_finds_the_library_elsewhere() {
    let registry = McpToolRegistry::new();
    registry.register_fn(through_another_path).unwrap();
    registry.register_methods(Arc::new(Renamed)).unwrap();
    let flag = registry
        .execute(&call("renamed.path", json!({"flag": false})))
        .await;
    assert_eq!(data(&flag), json!({"result": false}));
    let method = registry.execute(&call("renamed.method", json!({}))).await;
    assert_eq!(data(&method), json!({"result": 7}));
}

#[tokio::test(flavor = "current_thread")]
async fn register_fn_registers_exactly_one_tool() {
    let registry = McpToolRegistry::new();
    registry.register_fn(add).unwrap();
    assert_eq!(registry.list_tools(), ["add"]);
    // Idempotent, like every registration.
    registry.register_fn(add).unwrap();
    registry.register_fn(nested::echo).unwrap();
    assert_eq!(registry.list_tools(), ["add", "nested.echo"]);
    let sum = registry
        .execute(&call("add", json!({"a": 1, "b": 1})))
        .await;
    assert_eq!(data(&sum), json!({"result": 2}));
}

#[test]
fn register_fn_refuses_what_is_not_a_tool() {
    let registry = McpToolRegistry::new();
    let error = registry.register_fn(not_a_tool).unwrap_err();
    let McpRegistrationError::InvalidName { name, reason } = &error else {
        panic!("unexpected error {error:?}");
    };
    assert!(name.ends_with("not_a_tool"), "{name}");
    assert!(reason.contains("#[mcp_tool]"), "{reason}");
    assert!(registry.register_fn(|a: i64| a).is_err());
    assert!(registry.is_empty());
    assert!(ToolRegistration::of(not_a_tool).is_none());
    assert!(ToolRegistration::of(add).is_some());
}

#[tokio::test(flavor = "current_thread")]
async fn a_registration_can_be_adjusted_before_it_is_registered() {
    let mut registration = ToolRegistration::of(add).unwrap();
    registration.definition.name = "math.plus".into();
    registration.settings.timeout = Some(std::time::Duration::from_secs(1));
    let registry = McpToolRegistry::new();
    registry.register_tool(registration).unwrap();
    assert_eq!(registry.list_tools(), ["math.plus"]);
    let sum = registry
        .execute(&call("math.plus", json!({"a": 40, "b": 2})))
        .await;
    assert_eq!(data(&sum), json!({"result": 42}));
}

// ---------------------------------------------------------------------------------------------
// Methods of a type that holds state.
// ---------------------------------------------------------------------------------------------

struct Store {
    greeting: String,
    greeted: AtomicU64,
}

impl Store {
    fn new(greeting: &str) -> Self {
        Self {
            greeting: greeting.into(),
            greeted: AtomicU64::new(0),
        }
    }
}

#[mcp_tools]
impl Store {
    /// Greets someone.
    #[mcp_tool(name = "store.greet", read_only)]
    fn greet(&self, name: String) -> String {
        self.greeted.fetch_add(1, Ordering::SeqCst);
        format!("{}, {name}!", self.greeting)
    }

    /// How many greetings so far.
    #[mcp_tool(name = "store.greeted")]
    async fn greeted(self: Arc<Self>) -> u64 {
        tokio::task::yield_now().await;
        self.greeted.load(Ordering::SeqCst)
    }

    #[mcp_tool(name = "store.version")]
    fn version() -> &'static str {
        "1.0"
    }

    #[mcp_tool(name = "store.whoami")]
    async fn whoami(&self, cx: &ToolContext, suffix: Option<String>) -> String {
        format!("{}{}", cx.tool_name(), suffix.unwrap_or_default())
    }

    /// Not a tool: it has no `#[mcp_tool]`.
    fn shout(&self) -> String {
        self.greeting.to_uppercase()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn methods_run_on_the_registered_value() {
    let store = Arc::new(Store::new("Hello"));
    let registry = McpToolRegistry::new();
    registry.register_methods(store.clone()).unwrap();
    assert_eq!(
        registry.list_tools(),
        [
            "store.greet",
            "store.greeted",
            "store.version",
            "store.whoami"
        ]
    );
    let greet = registry.get("store.greet").unwrap();
    assert_eq!(greet.description.as_deref(), Some("Greets someone."));
    assert_eq!(greet.annotations.read_only_hint, Some(true));
    assert_eq!(
        greet.input_schema,
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    );

    let hello = registry
        .execute(&call("store.greet", json!({"name": "Ada"})))
        .await;
    assert_eq!(data(&hello), json!({"result": "Hello, Ada!"}));
    let greeted = registry.execute(&call("store.greeted", json!({}))).await;
    assert_eq!(data(&greeted), json!({"result": 1}));
    assert_eq!(store.greeted.load(Ordering::SeqCst), 1, "the same value");
    let version = registry.execute(&call("store.version", json!({}))).await;
    assert_eq!(data(&version), json!({"result": "1.0"}));
    let whoami = registry
        .execute(&call("store.whoami", json!({"suffix": "!"})))
        .await;
    assert_eq!(data(&whoami), json!({"result": "store.whoami!"}));

    // The methods are still ordinary methods.
    assert_eq!(store.greet("Bob".into()), "Hello, Bob!");
    assert_eq!(store.shout(), "HELLO");
    assert_eq!(Store::version(), "1.0");
}

#[tokio::test(flavor = "current_thread")]
async fn each_registry_calls_its_own_value() {
    let registry = McpToolRegistry::new();
    registry
        .register_methods(Arc::new(Store::new("Hi")))
        .unwrap();
    let hello = registry
        .execute(&call("store.greet", json!({"name": "Ada"})))
        .await;
    assert_eq!(data(&hello), json!({"result": "Hi, Ada!"}));
}

#[test]
fn methods_and_functions_share_a_registry() {
    let registry = McpToolRegistry::discovered().unwrap();
    registry
        .register_methods(Arc::new(Store::new("Hey")))
        .unwrap();
    assert_eq!(registry.len(), EVERY_TOOL.len() + 4);
}

/// A module whose tools are all methods, importing `mcp_tool` as the documentation says: the
/// import must count as used (`#[mcp_tools]` keeps each method's attribute as an inert marker
/// instead of removing it, so rustc resolves the path).
#[deny(unused_imports)]
mod methods_only {
    use codomyrmex_mcp::{mcp_tool, mcp_tools};

    pub struct Only;

    #[mcp_tools]
    impl Only {
        #[mcp_tool(name = "only.one")]
        fn one(&self) -> u8 {
            1
        }

        // The fully qualified path works too.
        #[codomyrmex_mcp::mcp_tool(name = "only.two")]
        fn two() -> u8 {
            2
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_module_of_methods_uses_its_mcp_tool_import() {
    let registry = McpToolRegistry::new();
    registry
        .register_methods(Arc::new(methods_only::Only))
        .unwrap();
    assert_eq!(registry.list_tools(), ["only.one", "only.two"]);
    let one = registry.execute(&call("only.one", json!({}))).await;
    assert_eq!(data(&one), json!({"result": 1}));
    let two = registry.execute(&call("only.two", json!({}))).await;
    assert_eq!(data(&two), json!({"result": 2}));
}
