//! The built-in tools, grouped by module, with invocation names `module.tool`.
//!
//! Each module's tools are `#[mcp_tool]` methods of an `#[mcp_tools]` impl block on a small
//! type holding what they need (the [`Workspace`], or the registry for `codomyrmex.*`), and
//! [`register_builtins`] registers them with `register_methods`. A module whose tools differ
//! by profile has one type per profile part: `file_system::FileSystemTools` (every profile)
//! and `file_system::FileSystemWriteTools` (full only).
//!
//! The conventions every built-in follows:
//! - `#[mcp_tool(name = "module.tool", title = ..., description = ..., category = "module",
//!   deny_unknown_arguments, open_world = false, ...)]`: the category is the module, and
//!   unknown arguments are refused;
//! - reading tools say `read_only, idempotent`; writing tools `read_only = false` and their
//!   `destructive` and `idempotent` hints;
//! - parameters carry their descriptions as doc comments, and their bounds as
//!   `#[arg(minimum = ..., min_length = ...)]`;
//! - the result is `Result<Output, ToolError>`, where `Output` derives `Serialize` and
//!   `JsonSchema`; types nested in arguments or results are `#[schemars(inline)]`, so that the
//!   schemas have no `$ref`. A result that is mainly text is `Result<WithContent<Output>,
//!   ToolError>`, its text rendered by [`model_text`].

pub mod codomyrmex;
pub mod demo;
pub mod file_system;
pub mod git;
pub mod git_sandbox;
#[cfg(test)]
mod hostile_root_tests;
pub mod json;
pub mod model_text;
pub mod process;
pub mod sandbox;
pub mod shell;
pub mod test_tools;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use codomyrmex_mcp::{McpErrorDetail, McpRegistrationError, McpToolRegistry};

use crate::config::{Limits, Profile, ShellSettings};
pub use sandbox::Sandbox;

/// What every tool of a server shares: the sandbox and the limits.
#[derive(Debug, Clone)]
pub struct Workspace {
    inner: Arc<WorkspaceInner>,
}

#[derive(Debug, Clone)]
struct WorkspaceInner {
    sandbox: Sandbox,
    limits: Limits,
    shell: ShellSettings,
    helper: Option<std::path::PathBuf>,
}

impl Workspace {
    /// A workspace over `sandbox`.
    pub fn new(sandbox: Sandbox, limits: Limits, shell: ShellSettings) -> Self {
        Self {
            inner: Arc::new(WorkspaceInner {
                sandbox,
                limits,
                shell,
                helper: None,
            }),
        }
    }

    /// This workspace, with `program` (this executable) as the helper for child processes: it
    /// evaluates `json.query` filters (`program __json-query-worker`) and leads the process
    /// groups that die with the server (`program __group-guard`, see
    /// [`process::ChildGroup`]).
    pub fn with_helper(self, program: std::path::PathBuf) -> Self {
        let WorkspaceInner {
            sandbox,
            limits,
            shell,
            ..
        } = Arc::unwrap_or_clone(self.inner);
        Self {
            inner: Arc::new(WorkspaceInner {
                sandbox,
                limits,
                shell,
                helper: Some(program),
            }),
        }
    }

    /// The helper program for child processes, if any.
    pub fn helper(&self) -> Option<&std::path::Path> {
        self.inner.helper.as_deref()
    }

    /// The sandbox.
    pub fn sandbox(&self) -> &Sandbox {
        &self.inner.sandbox
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The `shell.run` settings.
    pub fn shell(&self) -> &ShellSettings {
        &self.inner.shell
    }
}

/// Registers every built-in tool of `profile`.
pub fn register_builtins(
    registry: &Arc<McpToolRegistry>,
    workspace: &Workspace,
    profile: Profile,
) -> Result<(), McpRegistrationError> {
    let full = profile == Profile::Full;
    let ws = || workspace.clone();
    registry.register_methods(Arc::new(codomyrmex::CodomyrmexTools::new(registry)))?;
    registry.register_methods(Arc::new(file_system::FileSystemTools::new(ws())))?;
    if full {
        registry.register_methods(Arc::new(file_system::FileSystemWriteTools::new(ws())))?;
    }
    registry.register_methods(Arc::new(git::GitTools::new(ws())))?;
    registry.register_methods(Arc::new(json::JsonTools::new(ws())))?;
    if full {
        registry.register_methods(Arc::new(shell::ShellTools::new(ws())))?;
    }
    Ok(())
}

/// Registers the demo tools ([`demo`]; `--demo-tools`, in no profile).
pub fn register_demo(registry: &Arc<McpToolRegistry>) -> Result<(), McpRegistrationError> {
    registry.register_methods(Arc::new(demo::DemoTools))
}

/// A tool failure: a stable machine-readable kind and a message for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// `ACCESS_DENIED`, `INVALID_PATH`, `NOT_FOUND`, ...
    pub kind: &'static str,
    /// What went wrong, without secrets or paths outside the root.
    pub message: String,
}

impl ToolError {
    /// A failure of `kind`.
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// `ACCESS_DENIED`: the path leaves the sandbox or the operation is not allowed.
    pub fn access_denied(message: impl Into<String>) -> Self {
        Self::new(kinds::ACCESS_DENIED, message)
    }

    /// `INVALID_PATH`: the path itself is unusable (too long, NUL, not UTF-8).
    pub fn invalid_path(message: impl Into<String>) -> Self {
        Self::new(kinds::INVALID_PATH, message)
    }

    /// `INVALID_ARGUMENT`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(kinds::INVALID_ARGUMENT, message)
    }

    /// Maps an I/O error on `shown` (a root-relative path) to a failure.
    pub fn io(error: &std::io::Error, shown: &str) -> Self {
        use std::io::ErrorKind as K;
        match error.kind() {
            K::NotFound => Self::new(
                kinds::NOT_FOUND,
                format!("{shown}: no such file or directory"),
            ),
            K::PermissionDenied => Self::new(
                kinds::ACCESS_DENIED,
                format!("{shown}: permission denied by the operating system"),
            ),
            K::AlreadyExists => {
                Self::new(kinds::ALREADY_EXISTS, format!("{shown}: already exists"))
            }
            K::NotADirectory => {
                Self::new(kinds::NOT_A_DIRECTORY, format!("{shown}: not a directory"))
            }
            K::IsADirectory => Self::new(kinds::IS_A_DIRECTORY, format!("{shown}: is a directory")),
            K::InvalidFilename => Self::invalid_path(format!("{shown}: invalid file name")),
            K::DirectoryNotEmpty => {
                Self::new(kinds::IO_ERROR, format!("{shown}: directory not empty"))
            }
            _ => Self::new(kinds::IO_ERROR, format!("{shown}: {error}")),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<ToolError> for McpErrorDetail {
    fn from(e: ToolError) -> Self {
        McpErrorDetail::new(e.kind, e.message)
    }
}

/// The error kinds tools report (`error_type`).
pub mod kinds {
    /// The path leaves the root, or the operation is not allowed.
    pub const ACCESS_DENIED: &str = "ACCESS_DENIED";
    /// The path is unusable: too long, a NUL byte, not UTF-8.
    pub const INVALID_PATH: &str = "INVALID_PATH";
    /// An argument is out of range or inconsistent.
    pub const INVALID_ARGUMENT: &str = "INVALID_ARGUMENT";
    /// The file or directory does not exist.
    pub const NOT_FOUND: &str = "NOT_FOUND";
    /// The destination exists.
    pub const ALREADY_EXISTS: &str = "ALREADY_EXISTS";
    /// A directory was expected.
    pub const NOT_A_DIRECTORY: &str = "NOT_A_DIRECTORY";
    /// A file was expected.
    pub const IS_A_DIRECTORY: &str = "IS_A_DIRECTORY";
    /// The file exceeds a configured size limit.
    pub const TOO_LARGE: &str = "TOO_LARGE";
    /// Any other I/O failure.
    pub const IO_ERROR: &str = "IO_ERROR";
    /// `file_system.edit`: the text to replace is not in the file.
    pub const NO_MATCH: &str = "NO_MATCH";
    /// `file_system.edit`: the text to replace occurs more than once.
    pub const AMBIGUOUS_MATCH: &str = "AMBIGUOUS_MATCH";
    /// git is not installed.
    pub const GIT_UNAVAILABLE: &str = "GIT_UNAVAILABLE";
    /// git failed (not a repository, unknown revision, ...).
    pub const GIT_ERROR: &str = "GIT_ERROR";
    /// `json.query`: the filter does not parse or compile, or failed at run time.
    pub const JQ_ERROR: &str = "JQ_ERROR";
    /// `json.query`: the input is not JSON.
    pub const INVALID_JSON: &str = "INVALID_JSON";
    /// `shell.run`: the command is not in the allow-list.
    pub const COMMAND_NOT_ALLOWED: &str = "COMMAND_NOT_ALLOWED";
    /// `shell.run`: the command could not be started.
    pub const SPAWN_FAILED: &str = "SPAWN_FAILED";
    /// An internal failure.
    pub const INTERNAL: &str = "INTERNAL_ERROR";
}

/// Set when the caller stopped waiting (the call was cancelled or timed out), so that blocking
/// work can stop early.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Whether the caller is gone.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}

/// Runs blocking file-system work off the async runtime. `work` gets a [`Cancel`] that is set
/// when the awaiting future is dropped.
pub async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&Cancel) -> Result<T, ToolError> + Send + 'static,
{
    let cancel = Cancel::default();
    let guard = CancelOnDrop(cancel.clone());
    let result = tokio::task::spawn_blocking(move || work(&cancel)).await;
    drop(guard);
    result.map_err(|_| ToolError::new(kinds::INTERNAL, "the tool's worker thread failed"))?
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers for the tools' tests.

    use serde_json::Value;

    use super::*;
    use crate::config::{Limits, ShellSettings};

    /// A temporary root and a workspace over it.
    pub struct Fixture {
        pub dir: tempfile::TempDir,
        pub ws: Workspace,
    }

    impl Fixture {
        pub fn new() -> Self {
            Self::with_limits(Limits::default())
        }

        pub fn with_limits(limits: Limits) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let sandbox = Sandbox::new(dir.path()).unwrap();
            let ws = Workspace::new(sandbox, limits, ShellSettings::default());
            Self { dir, ws }
        }

        pub fn with_shell(shell: ShellSettings) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let sandbox = Sandbox::new(dir.path()).unwrap();
            let ws = Workspace::new(sandbox, Limits::default(), shell);
            Self { dir, ws }
        }

        pub fn path(&self, rel: &str) -> std::path::PathBuf {
            self.dir.path().join(rel)
        }

        pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
            let p = self.path(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            std::fs::write(p, content).unwrap();
        }

        pub fn read(&self, rel: &str) -> String {
            std::fs::read_to_string(self.path(rel)).unwrap()
        }
    }

    /// A registry holding every built-in of `profile` over the fixture's root.
    pub fn registry(fx: &Fixture, profile: Profile) -> Arc<McpToolRegistry> {
        let registry = Arc::new(McpToolRegistry::new());
        register_builtins(&registry, &fx.ws, profile).unwrap();
        registry
    }

    /// Calls a tool through the registry (schema validation included).
    pub async fn call(
        registry: &McpToolRegistry,
        name: &str,
        args: Value,
    ) -> codomyrmex_mcp::McpToolResult {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        registry
            .execute(&codomyrmex_mcp::McpToolCall::new(name, args))
            .await
    }

    /// The error kind of a failed result.
    pub fn error_kind(result: &codomyrmex_mcp::McpToolResult) -> String {
        result
            .error()
            .map(|e| e.error_type.clone())
            .unwrap_or_else(|| format!("not a failure: {:?}", result.data()))
    }

    /// Calls a tool that must succeed and returns its structured result.
    pub async fn ok(registry: &McpToolRegistry, name: &str, args: Value) -> Value {
        let r = call(registry, name, args.clone()).await;
        assert_eq!(r.status(), "success", "{name} {args}: {:?}", r.error());
        Value::Object(r.data().cloned().unwrap_or_default())
    }

    /// Calls a tool that must fail and returns its error kind.
    pub async fn fail(registry: &McpToolRegistry, name: &str, args: Value) -> String {
        error_kind(&call(registry, name, args).await)
    }

    /// Runs git as a test's setup step (never through the tools), ignoring the user's config.
    pub fn git(dir: &std::path::Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=Test User",
                "-c",
                "user.email=test@example.com",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
                "-c",
                "protocol.file.allow=always",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A repository in a new fixture's root with history: `a.txt` and `other` (`bee\n`)
    /// committed as "first commit", `a.txt` changed and committed as "second commit", then
    /// `a.txt` changed again and left modified.
    pub fn repo_with_history(other: &str) -> Fixture {
        let fx = Fixture::new();
        let d = fx.dir.path();
        git(d, &["init", "-q"]);
        fx.write("a.txt", "one\n");
        fx.write(other, "bee\n");
        git(d, &["add", "."]);
        git(d, &["commit", "-q", "-m", "first commit"]);
        fx.write("a.txt", "one\ntwo\n");
        git(d, &["commit", "-q", "-am", "second commit"]);
        fx.write("a.txt", "one\ntwo\nthree\n");
        fx
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::test_support::*;
    use super::*;

    #[test]
    fn every_builtin_has_object_schemas_with_properties_inline() {
        let fx = Fixture::new();
        let registry = registry(&fx, Profile::Full);
        let defs = registry.definitions();
        assert!(defs.len() >= 17, "{}", defs.len());
        for def in defs {
            assert_eq!(def.input_schema["type"], "object", "{}", def.name);
            assert!(def.input_schema.get("$ref").is_none(), "{}", def.name);
            assert!(def.input_schema.get("title").is_none(), "{}", def.name);
            assert!(
                def.input_schema.get("description").is_none(),
                "{}",
                def.name
            );
            let out = def.output_schema.as_ref().unwrap();
            assert_eq!(out["type"], "object", "{}", def.name);
            assert!(def.description.as_deref().is_some_and(|d| !d.is_empty()));
            assert!(def.title.as_deref().is_some_and(|t| !t.is_empty()));
            let module = def.name.split('.').next().unwrap();
            assert!(
                ["file_system", "git", "json", "shell", "codomyrmex"].contains(&module),
                "{}",
                def.name
            );
            // The conventions of the module documentation.
            assert_eq!(
                def.input_schema["additionalProperties"], false,
                "{}",
                def.name
            );
            let schemas = serde_json::to_string(&[&def.input_schema, out]).unwrap();
            assert!(!schemas.contains("$ref"), "{}: {schemas}", def.name);
            assert_eq!(
                def.meta.as_ref().map(|m| &m["category"]),
                Some(&json!(module)),
                "{}",
                def.name
            );
            let hints = &def.annotations;
            assert_eq!(hints.open_world_hint, Some(false), "{}", def.name);
            assert!(hints.idempotent_hint.is_some(), "{}", def.name);
            assert_eq!(
                hints.destructive_hint.is_some(),
                hints.read_only_hint == Some(false),
                "{}",
                def.name
            );
        }
    }

    #[test]
    fn readonly_profile_has_no_writing_tools() {
        let fx = Fixture::new();
        let ro = registry(&fx, Profile::Readonly).list_tools();
        for name in [
            "file_system.write",
            "file_system.edit",
            "file_system.make_directory",
            "file_system.move",
            "shell.run",
        ] {
            assert!(!ro.iter().any(|t| t == name), "{name} in readonly");
        }
        for def in registry(&fx, Profile::Readonly).definitions() {
            assert_eq!(def.annotations.read_only_hint, Some(true), "{}", def.name);
        }
        let full = registry(&fx, Profile::Full).list_tools();
        assert_eq!(full.len(), ro.len() + 5);
    }

    #[tokio::test]
    async fn unknown_arguments_are_refused() {
        let fx = Fixture::new();
        let registry = registry(&fx, Profile::Readonly);
        let r = call(
            &registry,
            "file_system.stat",
            json!({"path": ".", "bogus": 1}),
        )
        .await;
        assert_eq!(error_kind(&r), "ValidationError");
    }

    #[tokio::test]
    async fn blocking_sets_cancel_when_dropped() {
        let (tx, rx) = std::sync::mpsc::channel();
        let fut = blocking(move |cancel| {
            let start = std::time::Instant::now();
            while !cancel.is_cancelled() && start.elapsed() < std::time::Duration::from_secs(10) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            tx.send(cancel.is_cancelled()).unwrap();
            Ok(())
        });
        let _ = tokio::time::timeout(std::time::Duration::from_millis(50), fut).await;
        let seen = tokio::task::spawn_blocking(move || rx.recv().unwrap())
            .await
            .unwrap();
        assert!(seen);
    }
}
