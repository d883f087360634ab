//! `shell.run` (full profile only): runs a program with an argv — never a shell string — in a
//! directory inside the root, with a timeout and capped output.
//!
//! The program runs in a process group of its own call (a [`ChildGroup`]). When it exits,
//! times out or the call is dropped, the whole group is killed, so background processes it
//! started do not outlive it; and the group also dies when the server dies, whatever the
//! signal. Its environment is the server's minus `CODOMYRMEX_MCP_*`, which only keeps them
//! from being passed on by accident: the program runs as the server's user and can read the
//! server's own (`/proc/$PPID/environ`, see SECURITY.md). `[shell]
//! allowed_commands` checks only argv\[0\]: an allowed program's arguments can make it run
//! others. The program itself can read and write outside the root like any process of this
//! user: the sandbox confines the tools' paths, not what a program does — which is why only
//! the full profile has this tool. (`git` run this way reads the repository's own config,
//! filters included: only the `git.*` tools are hardened against a hostile repository.)

use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use codomyrmex_mcp::confine::{ConfinedRoot, LastLink};
use codomyrmex_mcp::{WithContent, mcp_tool, mcp_tools};
use rustix::fs::FileType;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::model_text::ModelText;
use super::process::{Captured, ChildGroup, Held, scrub_env};
use super::sandbox::tool_error;
use super::{ToolError, Workspace, kinds};

/// How long output pipes may stay open after the program ended.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// `shell.run`, over a workspace (full profile only).
pub struct ShellTools {
    ws: Workspace,
}

impl ShellTools {
    /// The tool over `ws`.
    pub fn new(ws: Workspace) -> Self {
        Self { ws }
    }
}

#[mcp_tools]
impl ShellTools {
    #[mcp_tool(
        name = "shell.run",
        title = "Run a command",
        description = "Runs a program with arguments (argv, e.g. [\"cargo\", \"test\"]; not a \
                       shell string: no pipes, globs or variables) in a directory inside the \
                       root, with a timeout. Returns the exit code and the (capped) stdout and \
                       stderr.",
        read_only = false,
        destructive,
        idempotent = false,
        open_world = false,
        category = "shell",
        deny_unknown_arguments
    )]
    async fn run(
        &self,
        /// The program and its arguments, e.g. ["git", "status"]. The program is looked up on
        /// PATH.
        #[arg(min_items = 1)]
        argv: Vec<String>,
        /// The working directory, relative to the root (default the root).
        cwd: Option<String>,
        /// Seconds before the program is killed (default and maximum set by the server).
        #[arg(minimum = 1)]
        timeout_secs: Option<u64>,
        /// Text to send on standard input (default: none, stdin is closed).
        stdin: Option<String>,
    ) -> Result<WithContent<RunOutput>, ToolError> {
        let ws = &self.ws;
        let settings = ws.shell();
        let Some(program) = argv.first().filter(|p| !p.is_empty()) else {
            return Err(ToolError::invalid_argument("argv must name a program"));
        };
        if argv.iter().any(|a| a.contains('\0')) {
            return Err(ToolError::invalid_argument("argv contains a NUL byte"));
        }
        if !settings.allowed_commands.is_empty() && !settings.allowed_commands.contains(program) {
            return Err(ToolError::new(
                kinds::COMMAND_NOT_ALLOWED,
                format!(
                    "{program:?} is not an allowed command; allowed: {}",
                    settings.allowed_commands.join(", ")
                ),
            ));
        }
        // Resolved and looked at (`fstat`) through the confinement's walk, not by path, and
        // held open: the child's working directory is that descriptor (`Held`), so a
        // directory swapped for a symlink after this check cannot move the program out.
        let raw = cwd.as_deref().unwrap_or(".");
        let confined = ws.sandbox().confined();
        let found = confined
            .argument(raw, true)
            .and_then(|rel| confined.resolve(&rel, LastLink::Follow))
            .map_err(|e| tool_error(e, raw))?;
        let kind = found.file_type().map_err(|e| tool_error(e, raw))?;
        if kind != FileType::Directory {
            return Err(ToolError::new(
                kinds::NOT_A_DIRECTORY,
                format!("{} is not a directory", ConfinedRoot::display(found.rel())),
            ));
        }
        let cwd = Held::new(found.into_fd());
        let timeout_secs = timeout_secs
            .unwrap_or(settings.default_timeout_secs)
            .clamp(1, settings.max_timeout_secs.max(1));
        let max = settings.max_output_bytes;

        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&argv[1..])
            .current_dir(cwd.child_dir())
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut group = ChildGroup::start(ws.helper()).map_err(|e| {
            ToolError::new(
                kinds::SPAWN_FAILED,
                format!("cannot start the process guard: {e}"),
            )
        })?;
        group.adopt(&mut cmd);
        scrub_env(&mut cmd);
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(|e| {
            ToolError::new(
                kinds::SPAWN_FAILED,
                match e.kind() {
                    std::io::ErrorKind::NotFound => format!("{program:?}: program not found"),
                    std::io::ErrorKind::PermissionDenied => {
                        format!("{program:?}: permission denied")
                    }
                    _ => format!("{program:?}: cannot start: {e}"),
                },
            )
        })?;
        group.spawned(&child);
        if let (Some(mut pipe), Some(text)) = (child.stdin.take(), stdin) {
            tokio::spawn(async move {
                let _ = pipe.write_all(text.as_bytes()).await;
                let _ = pipe.shutdown().await;
            });
        }
        let (out, err): (Shared, Shared) = Default::default();
        let mut readers = Vec::new();
        if let Some(pipe) = child.stdout.take() {
            readers.push(tokio::spawn(capture_into(pipe, max, out.clone())));
        }
        if let Some(pipe) = child.stderr.take() {
            readers.push(tokio::spawn(capture_into(pipe, max, err.clone())));
        }
        let (status, timed_out) =
            match tokio::time::timeout(Duration::from_secs(timeout_secs), child.wait()).await {
                Ok(status) => (status, false),
                Err(_) => {
                    group.kill();
                    let _ = child.start_kill();
                    (child.wait().await, true)
                }
            };
        // Background processes the program left behind would keep the pipes open.
        group.kill();
        for reader in &mut readers {
            if tokio::time::timeout(DRAIN_GRACE, &mut *reader)
                .await
                .is_err()
            {
                reader.abort();
            }
        }
        let status = status.map_err(|e| ToolError::new(kinds::IO_ERROR, e.to_string()))?;
        let take =
            |s: &Shared| std::mem::take(&mut *s.lock().unwrap_or_else(PoisonError::into_inner));
        let (out, err) = (take(&out), take(&err));
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        Ok(RunOutput {
            exit_code: status.code(),
            signal,
            success: status.success(),
            stdout_truncated: out.truncated(),
            stderr_truncated: err.truncated(),
            stdout: out.text(),
            stderr: err.text(),
            timed_out,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
        .for_model())
    }
}

/// Result of `shell.run`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunOutput {
    /// The exit code, if the program exited normally.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the program, if one did (Unix).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Whether the program exited with code 0.
    pub success: bool,
    /// Standard output (invalid UTF-8 replaced), cut at the server's limit.
    pub stdout: String,
    /// Standard error, cut at the server's limit.
    pub stderr: String,
    /// Whether stdout was cut.
    pub stdout_truncated: bool,
    /// Whether stderr was cut.
    pub stderr_truncated: bool,
    /// Whether the program was killed for exceeding the timeout.
    pub timed_out: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

type Shared = Arc<Mutex<Captured>>;

async fn capture_into<R: AsyncRead + Unpin>(mut reader: R, max: usize, into: Shared) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = reader.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut c = into.lock().unwrap_or_else(PoisonError::into_inner);
        c.total += n as u64;
        let room = max.saturating_sub(c.bytes.len());
        c.bytes.extend_from_slice(&buf[..n.min(room)]);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use codomyrmex_mcp::McpToolRegistry;
    use serde_json::{Value, json};

    use super::*;
    use crate::config::{Profile, ShellSettings};
    use crate::tools::test_support::*;

    async fn ok(registry: &McpToolRegistry, args: Value) -> Value {
        let r = call(registry, "shell.run", args.clone()).await;
        assert_eq!(r.status(), "success", "{args}: {:?}", r.error());
        Value::Object(r.data().cloned().unwrap_or_default())
    }

    #[tokio::test]
    async fn runs_argv_in_the_root_and_reports_exit_codes() {
        let fx = Fixture::new();
        fx.write("sub/f.txt", "x");
        let r = registry(&fx, Profile::Full);
        let v = ok(
            &r,
            json!({"argv": ["sh", "-c", "pwd; echo err >&2; exit 3"]}),
        )
        .await;
        assert_eq!(v["exit_code"], 3);
        assert_eq!(v["success"], false);
        let root = fx.dir.path().canonicalize().unwrap();
        assert_eq!(v["stdout"].as_str().unwrap().trim(), root.to_str().unwrap());
        assert_eq!(v["stderr"], "err\n");
        let v = ok(&r, json!({"argv": ["ls"], "cwd": "sub"})).await;
        assert_eq!(v["stdout"], "f.txt\n");
        assert_eq!(v["success"], true);
        // An argv is not a shell string: metacharacters are plain arguments.
        let v = ok(
            &r,
            json!({"argv": ["echo", "$HOME", "*", ";", "rm", "-rf", "/"]}),
        )
        .await;
        assert_eq!(v["stdout"], "$HOME * ; rm -rf /\n");
        let v = ok(&r, json!({"argv": ["cat"], "stdin": "piped in"})).await;
        assert_eq!(v["stdout"], "piped in");
    }

    #[tokio::test]
    async fn refuses_bad_working_directories_and_programs() {
        let fx = Fixture::new();
        fx.write("file", "x");
        let r = registry(&fx, Profile::Full);
        for (cwd, kind) in [
            ("..", kinds::ACCESS_DENIED),
            ("/", kinds::ACCESS_DENIED),
            ("file", kinds::NOT_A_DIRECTORY),
            ("nope", kinds::NOT_FOUND),
        ] {
            let e = call(&r, "shell.run", json!({"argv": ["true"], "cwd": cwd})).await;
            assert_eq!(error_kind(&e), kind, "{cwd}");
        }
        let e = call(
            &r,
            "shell.run",
            json!({"argv": ["codomyrmex-no-such-program"]}),
        )
        .await;
        assert_eq!(error_kind(&e), kinds::SPAWN_FAILED);
        let e = call(&r, "shell.run", json!({"argv": []})).await;
        assert_eq!(error_kind(&e), "ValidationError");
        let e = call(&r, "shell.run", json!({"argv": [""]})).await;
        assert_eq!(error_kind(&e), kinds::INVALID_ARGUMENT);
    }

    #[tokio::test]
    async fn times_out_and_kills_the_process_group() {
        let fx = Fixture::new();
        let r = registry(&fx, Profile::Full);
        let started = Instant::now();
        // The background sleep holds stdout open; it must be killed too.
        let v = ok(
            &r,
            json!({"argv": ["sh", "-c", "sleep 30 & echo started; sleep 30"], "timeout_secs": 1}),
        )
        .await;
        assert_eq!(v["timed_out"], true);
        assert_eq!(v["stdout"], "started\n");
        assert_eq!(v["signal"], 9);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        // A program that exits but leaves a child holding the pipes does not hang the call.
        let started = Instant::now();
        let v = ok(&r, json!({"argv": ["sh", "-c", "sleep 30 & echo done"]})).await;
        assert_eq!(v["stdout"], "done\n");
        assert_eq!(v["timed_out"], false);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn output_is_capped() {
        let fx = Fixture::with_shell(ShellSettings {
            max_output_bytes: 100,
            ..ShellSettings::default()
        });
        let r = registry(&fx, Profile::Full);
        let v = ok(&r, json!({"argv": ["sh", "-c", "yes | head -c 100000"]})).await;
        assert_eq!(v["stdout"].as_str().unwrap().len(), 100);
        assert_eq!(v["stdout_truncated"], true);
        assert_eq!(v["stderr_truncated"], false);
    }

    #[tokio::test]
    async fn the_allow_list_is_enforced() {
        let fx = Fixture::with_shell(ShellSettings {
            allowed_commands: vec!["echo".into()],
            ..ShellSettings::default()
        });
        let r = registry(&fx, Profile::Full);
        ok(&r, json!({"argv": ["echo", "hi"]})).await;
        let e = call(&r, "shell.run", json!({"argv": ["sh", "-c", "echo hi"]})).await;
        assert_eq!(error_kind(&e), kinds::COMMAND_NOT_ALLOWED);
        let e = call(&r, "shell.run", json!({"argv": ["/bin/echo", "hi"]})).await;
        assert_eq!(error_kind(&e), kinds::COMMAND_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn the_allow_list_checks_only_the_program() {
        let fx = Fixture::with_shell(ShellSettings {
            allowed_commands: vec!["sh".into()],
            ..ShellSettings::default()
        });
        let r = registry(&fx, Profile::Full);
        // An allowed program's arguments run anything: what the guide (docs/binary.md) and
        // SECURITY.md say.
        let v = ok(&r, json!({"argv": ["sh", "-c", "echo not checked"]})).await;
        assert_eq!(v["stdout"], "not checked\n");
    }
}
