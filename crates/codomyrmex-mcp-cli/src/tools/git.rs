//! `git.*`: status, diff, log and show through the git command-line program.
//!
//! The tools work on the repository whose top level is the root, and git runs through
//! [`super::git_sandbox`], so the repository cannot make it start a program or read outside
//! the root. Paths are literal pathspecs inside the root (not inside `.git` or a nested
//! repository); revisions that look like options or name a path (`HEAD:file`) are refused.

use codomyrmex_mcp::{WithContent, mcp_tool, mcp_tools};
use schemars::JsonSchema;
use serde::Serialize;

use super::git_sandbox::{GitRun, repository_path, run_git};
use super::model_text::ModelText;
use super::{ToolError, Workspace};

/// The `git` tools, over a workspace.
pub struct GitTools {
    ws: Workspace,
    /// The git program: `git`, looked up on PATH, outside tests.
    program: String,
}

impl GitTools {
    /// The tools over `ws`.
    pub fn new(ws: Workspace) -> Self {
        Self::with_program(ws, GIT)
    }

    /// The tools over `ws`, running `program` as git (tests run each git they find).
    pub(crate) fn with_program(ws: Workspace, program: &str) -> Self {
        Self {
            ws,
            program: program.to_owned(),
        }
    }
}

#[mcp_tools]
impl GitTools {
    #[mcp_tool(
        name = "git.status",
        title = "git status",
        description = "Shows the branch and the changed, staged and untracked files of the git \
                       repository the root is in (limited to the root, or to path).",
        read_only,
        idempotent,
        open_world = false,
        category = "git",
        deny_unknown_arguments
    )]
    async fn status(
        &self,
        /// Limit to this file or directory, relative to the root.
        path: Option<String>,
    ) -> Result<WithContent<StatusOutput>, ToolError> {
        let ws = &self.ws;
        let spec = pathspec(ws, path.as_deref())?;
        // Porcelain paths are relative to the repository's top; the prefix maps them to the
        // root.
        let prefix = self
            .run(vec!["rev-parse".into(), "--show-prefix".into()])
            .await?;
        let prefix = prefix.stdout.trim_end_matches('\n').to_owned();
        let run = self
            .run(vec![
                "status".into(),
                "--ignore-submodules=all".into(),
                "--porcelain=v1".into(),
                "--branch".into(),
                "--untracked-files=all".into(),
                "-z".into(),
                "--".into(),
                spec,
            ])
            .await?;
        Ok(parse_status(&run.stdout, &prefix).for_model())
    }

    #[mcp_tool(
        name = "git.diff",
        title = "git diff",
        description = "Shows changes as a unified diff: the working tree against the index \
                       (default), the index against HEAD (staged), or against a revision \
                       (base). Paths are relative to the root.",
        read_only,
        idempotent,
        open_world = false,
        category = "git",
        deny_unknown_arguments
    )]
    async fn diff(
        &self,
        /// Limit to this file or directory, relative to the root.
        path: Option<String>,
        /// Compare the index with HEAD (what would be committed). Default false.
        staged: Option<bool>,
        /// Compare with this revision instead (e.g. `HEAD~1`, `main`, `v1.0..v2.0`).
        base: Option<String>,
        /// Lines of context around each change (default 3).
        #[arg(maximum = 1000)]
        context_lines: Option<u32>,
        /// Only a summary of changed files (`--stat`). Default false.
        stat_only: Option<bool>,
    ) -> Result<WithContent<TextOutput>, ToolError> {
        let ws = &self.ws;
        let spec = pathspec(ws, path.as_deref())?;
        let mut git: Vec<String> = vec![
            "diff".into(),
            "--ignore-submodules=all".into(),
            "--no-ext-diff".into(),
            "--no-textconv".into(),
            "--no-color".into(),
            "--relative".into(),
            format!("-U{}", context_lines.unwrap_or(3)),
        ];
        if stat_only.unwrap_or(false) {
            git.push("--stat".into());
        }
        if staged.unwrap_or(false) {
            git.push("--cached".into());
        }
        if let Some(base) = &base {
            git.push(revision(base)?);
        }
        git.push("--".into());
        git.push(spec);
        let run = self.run(git).await?;
        Ok(TextOutput {
            output: run.stdout,
            truncated: run.truncated,
        }
        .for_model())
    }

    #[mcp_tool(
        name = "git.log",
        title = "git log",
        description = "Lists commits (hash, author, date, subject), newest first, optionally \
                       only those touching path.",
        read_only,
        idempotent,
        open_world = false,
        category = "git",
        deny_unknown_arguments
    )]
    async fn log(
        &self,
        /// Only commits touching this file or directory, relative to the root.
        path: Option<String>,
        /// How many commits (default 20, at most 500).
        #[arg(minimum = 1, maximum = 500)]
        max_count: Option<u32>,
        /// Start from this revision or range instead of HEAD.
        revision: Option<String>,
    ) -> Result<WithContent<LogOutput>, ToolError> {
        let ws = &self.ws;
        let spec = pathspec(ws, path.as_deref())?;
        let count = max_count.unwrap_or(20).clamp(1, 500);
        let mut git: Vec<String> = vec![
            "log".into(),
            "--no-color".into(),
            format!("--max-count={count}"),
            "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x1e".into(),
        ];
        if let Some(rev) = &revision {
            git.push(self::revision(rev)?);
        }
        git.push("--".into());
        git.push(spec);
        let run = self.run(git).await?;
        Ok(LogOutput {
            commits: parse_log(&run.stdout),
        }
        .for_model())
    }

    #[mcp_tool(
        name = "git.show",
        title = "git show",
        description = "Shows a commit (message and diff, or only stats), or with path the \
                       content of a file at that revision.",
        read_only,
        idempotent,
        open_world = false,
        category = "git",
        deny_unknown_arguments
    )]
    async fn show(
        &self,
        /// The revision (default `HEAD`).
        revision: Option<String>,
        /// Show this file's content at the revision instead of the commit, relative to the root.
        path: Option<String>,
        /// Only the commit message and a summary of changed files. Default false.
        stat_only: Option<bool>,
    ) -> Result<WithContent<TextOutput>, ToolError> {
        let ws = &self.ws;
        let rev = self::revision(revision.as_deref().unwrap_or("HEAD"))?;
        let git: Vec<String> = match &path {
            Some(raw) => {
                let rel = repository_path(ws.sandbox(), raw)?;
                // `./` makes the path relative to the root, not to the repository's top.
                vec![
                    "show".into(),
                    "--no-textconv".into(),
                    format!("{rev}:./{rel}"),
                ]
            }
            None => {
                let mut g: Vec<String> = vec![
                    "show".into(),
                    "--no-ext-diff".into(),
                    "--no-textconv".into(),
                    "--no-color".into(),
                    "--relative".into(),
                ];
                if stat_only.unwrap_or(false) {
                    g.push("--stat".into());
                }
                g.extend([rev, "--".into(), ":(literal).".into()]);
                g
            }
        };
        let run = self.run(git).await?;
        Ok(TextOutput {
            output: run.stdout,
            truncated: run.truncated,
        }
        .for_model())
    }
}

/// The git program.
const GIT: &str = "git";

impl GitTools {
    /// Runs git with `args` in the root.
    async fn run(&self, args: Vec<String>) -> Result<GitRun, ToolError> {
        run_git(
            &self.program,
            self.ws.sandbox(),
            &args,
            self.ws.limits().max_git_output_bytes,
        )
        .await
    }
}

/// A literal pathspec for `raw` (a path inside the root), relative to the root.
fn pathspec(ws: &Workspace, raw: Option<&str>) -> Result<String, ToolError> {
    let rel = match raw {
        None => ".".to_owned(),
        // Deleted files are valid pathspecs, so the path need not exist.
        Some(raw) => repository_path(ws.sandbox(), raw)?,
    };
    Ok(format!(":(literal){rel}"))
}

/// Refuses revisions that git would parse as options, that name a path or the index
/// (`HEAD:file`, `:file`: a path is given with `path`, and checked), or that are not plain text.
fn revision(rev: &str) -> Result<String, ToolError> {
    if rev.is_empty()
        || rev.starts_with('-')
        || rev.contains(':')
        || rev.len() > 256
        || rev.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(ToolError::invalid_argument(format!(
            "{:?} is not an acceptable revision (no leading '-', no ':', whitespace or control \
             characters; give a file with `path`)",
            rev.chars().take(64).collect::<String>()
        )));
    }
    Ok(rev.to_owned())
}

// ---------------------------------------------------------------------------------------------
// status
// ---------------------------------------------------------------------------------------------

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct StatusEntry {
    /// The path, relative to the root.
    pub path: String,
    /// The index (staged) status letter: `M`, `A`, `D`, `R`, `C`, `U`, `?`, `!` or ` `.
    pub index: String,
    /// The working-tree status letter.
    pub worktree: String,
    /// For renames and copies: the old path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_path: Option<String>,
}

/// Result of `git.status`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusOutput {
    /// The current branch, if on one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// git's branch line, e.g. `main...origin/main [ahead 1]`.
    pub branch_line: String,
    /// The changed paths.
    pub entries: Vec<StatusEntry>,
    /// Whether nothing changed.
    pub clean: bool,
}

fn parse_status(out: &str, prefix: &str) -> StatusOutput {
    let strip = |p: &str| p.strip_prefix(prefix).unwrap_or(p).to_owned();
    let mut fields = out.split('\0').filter(|f| !f.is_empty());
    let mut branch_line = String::new();
    let mut entries = Vec::new();
    while let Some(field) = fields.next() {
        if let Some(line) = field.strip_prefix("## ") {
            branch_line = line.to_owned();
            continue;
        }
        let (Some(x), Some(y), Some(path)) = (field.get(0..1), field.get(1..2), field.get(3..))
        else {
            continue;
        };
        let original_path = if x == "R" || x == "C" {
            fields.next().map(strip)
        } else {
            None
        };
        entries.push(StatusEntry {
            path: strip(path),
            index: x.to_owned(),
            worktree: y.to_owned(),
            original_path,
        });
    }
    let branch = if branch_line.starts_with("HEAD (no branch)") {
        None
    } else if let Some(rest) = branch_line.strip_prefix("No commits yet on ") {
        Some(rest.to_owned())
    } else {
        branch_line
            .split("...")
            .next()
            .and_then(|b| b.split(' ').next())
            .filter(|b| !b.is_empty())
            .map(ToOwned::to_owned)
    };
    StatusOutput {
        branch,
        branch_line,
        clean: entries.is_empty(),
        entries,
    }
}

// ---------------------------------------------------------------------------------------------
// diff
// ---------------------------------------------------------------------------------------------

/// Output of `git.diff` and `git.show`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TextOutput {
    /// git's output.
    pub output: String,
    /// Whether the output was cut at the server's limit.
    pub truncated: bool,
}

// ---------------------------------------------------------------------------------------------
// log
// ---------------------------------------------------------------------------------------------

/// One commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct Commit {
    /// The full hash.
    pub hash: String,
    /// The author's name.
    pub author: String,
    /// The author's email.
    pub email: String,
    /// The author date, ISO 8601.
    pub date: String,
    /// The first line of the message.
    pub subject: String,
}

/// Result of `git.log`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LogOutput {
    /// The commits, newest first.
    pub commits: Vec<Commit>,
}

fn parse_log(out: &str) -> Vec<Commit> {
    out.split('\x1e')
        .filter_map(|record| {
            let mut f = record.trim_start_matches('\n').split('\x1f');
            Some(Commit {
                hash: f.next().filter(|h| !h.is_empty())?.to_owned(),
                author: f.next()?.to_owned(),
                email: f.next()?.to_owned(),
                date: f.next()?.to_owned(),
                subject: f.next()?.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use codomyrmex_mcp::McpToolRegistry;
    use serde_json::json;

    use super::*;
    use crate::config::Profile;
    use crate::tools::kinds;
    use crate::tools::test_support::*;

    /// Whether git is missing; if so, checks that the tools say so clearly.
    async fn git_missing() -> bool {
        let available = std::process::Command::new(GIT)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !available {
            let fx = Fixture::new();
            let r = registry(&fx, Profile::Readonly);
            let e = call(&r, "git.status", json!({})).await;
            assert_eq!(error_kind(&e), kinds::GIT_UNAVAILABLE);
        }
        !available
    }

    /// A repository with two commits, a staged and an unstaged change, and an untracked file.
    fn repo() -> Fixture {
        let fx = repo_with_history("sub/b.txt");
        fx.write("sub/b.txt", "bee staged\n");
        git(fx.dir.path(), &["add", "sub/b.txt"]);
        fx.write("new.txt", "untracked\n");
        fx
    }

    #[tokio::test]
    async fn status_lists_changes() {
        if git_missing().await {
            return;
        }
        let fx = repo();
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "git.status", json!({})).await;
        assert_eq!(v["branch"], "main");
        assert_eq!(v["clean"], false);
        let entries: Vec<(String, String, String)> = v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["path"].as_str().unwrap().into(),
                    e["index"].as_str().unwrap().into(),
                    e["worktree"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert!(
            entries.contains(&("a.txt".into(), " ".into(), "M".into())),
            "{entries:?}"
        );
        assert!(
            entries.contains(&("sub/b.txt".into(), "M".into(), " ".into())),
            "{entries:?}"
        );
        assert!(
            entries.contains(&("new.txt".into(), "?".into(), "?".into())),
            "{entries:?}"
        );
        let v = ok(&r, "git.status", json!({"path": "sub"})).await;
        assert_eq!(v["entries"].as_array().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn diff_working_tree_staged_and_against_a_revision() {
        if git_missing().await {
            return;
        }
        let fx = repo();
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "git.diff", json!({})).await;
        let out = v["output"].as_str().unwrap();
        assert!(out.contains("+three"), "{out}");
        assert!(!out.contains("bee staged"), "{out}");
        let v = ok(&r, "git.diff", json!({"staged": true})).await;
        assert!(v["output"].as_str().unwrap().contains("+bee staged"));
        let v = ok(
            &r,
            "git.diff",
            json!({"base": "HEAD~1", "path": "a.txt", "context_lines": 0}),
        )
        .await;
        let out = v["output"].as_str().unwrap();
        assert!(out.contains("+two") && out.contains("+three"), "{out}");
        let v = ok(&r, "git.diff", json!({"stat_only": true})).await;
        assert!(
            v["output"].as_str().unwrap().contains("1 file changed"),
            "{v}"
        );
        assert_eq!(v["truncated"], false);
        let e = call(&r, "git.diff", json!({"base": "--output=/tmp/pwned"})).await;
        assert_eq!(error_kind(&e), kinds::INVALID_ARGUMENT);
        let e = call(&r, "git.diff", json!({"base": "no-such-branch"})).await;
        assert_eq!(error_kind(&e), kinds::GIT_ERROR);
        let e = call(&r, "git.diff", json!({"path": "../x"})).await;
        assert_eq!(error_kind(&e), kinds::ACCESS_DENIED);
    }

    #[tokio::test]
    async fn log_and_show() {
        if git_missing().await {
            return;
        }
        let fx = repo();
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "git.log", json!({})).await;
        let commits = v["commits"].as_array().unwrap();
        assert_eq!(commits.len(), 2);
        assert_eq!(commits[0]["subject"], "second commit");
        assert_eq!(commits[1]["subject"], "first commit");
        assert_eq!(commits[0]["author"], "Test User");
        assert_eq!(commits[0]["email"], "test@example.com");
        assert_eq!(commits[0]["hash"].as_str().unwrap().len(), 40);
        let v = ok(&r, "git.log", json!({"max_count": 1})).await;
        assert_eq!(v["commits"].as_array().unwrap().len(), 1);
        let v = ok(&r, "git.log", json!({"path": "sub"})).await;
        assert_eq!(v["commits"].as_array().unwrap().len(), 1);

        let v = ok(&r, "git.show", json!({})).await;
        let out = v["output"].as_str().unwrap();
        assert!(
            out.contains("second commit") && out.contains("+two"),
            "{out}"
        );
        let v = ok(
            &r,
            "git.show",
            json!({"revision": "HEAD~1", "stat_only": true}),
        )
        .await;
        assert!(
            v["output"].as_str().unwrap().contains("2 files changed"),
            "{v}"
        );
        let v = ok(
            &r,
            "git.show",
            json!({"revision": "HEAD~1", "path": "a.txt"}),
        )
        .await;
        assert_eq!(v["output"], "one\n");
        let e = call(&r, "git.show", json!({"revision": "-p"})).await;
        assert_eq!(error_kind(&e), kinds::INVALID_ARGUMENT);
    }

    #[tokio::test]
    async fn outside_a_repository_git_fails_clearly() {
        if git_missing().await {
            return;
        }
        let fx = Fixture::new();
        let inside_a_repo = std::process::Command::new(GIT)
            .args(["rev-parse", "--git-dir"])
            .current_dir(fx.dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        if inside_a_repo {
            return; // the temporary directory is inside some repository
        }
        let r = registry(&fx, Profile::Readonly);
        let e = call(&r, "git.log", json!({})).await;
        assert_eq!(error_kind(&e), kinds::GIT_ERROR);
        assert!(
            e.error()
                .unwrap()
                .error_message
                .contains("not a git repository"),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn a_missing_git_is_a_clear_error() {
        if git_missing().await {
            return;
        }
        let fx = repo();
        let r = McpToolRegistry::new();
        r.register_methods(std::sync::Arc::new(GitTools::with_program(
            fx.ws.clone(),
            "codomyrmex-no-such-git-program",
        )))
        .unwrap();
        let e = call(&r, "git.status", json!({})).await;
        assert_eq!(error_kind(&e), kinds::GIT_UNAVAILABLE);
        assert!(
            e.error().unwrap().error_message.contains("not installed"),
            "{e:?}"
        );
    }

    #[test]
    fn parse_status_handles_renames_and_branches() {
        let out =
            "## main...origin/main [ahead 1]\0R  sub/new.txt\0sub/old.txt\0 M sub/x.rs\0?? sub/u\0";
        let s = parse_status(out, "sub/");
        assert_eq!(s.branch.as_deref(), Some("main"));
        assert_eq!(s.branch_line, "main...origin/main [ahead 1]");
        assert_eq!(
            s.entries[0],
            StatusEntry {
                path: "new.txt".into(),
                index: "R".into(),
                worktree: " ".into(),
                original_path: Some("old.txt".into())
            }
        );
        assert_eq!(s.entries[1].path, "x.rs");
        assert_eq!(s.entries[2].index, "?");
        assert!(!s.clean);
        assert_eq!(
            parse_status("## No commits yet on trunk\0", "")
                .branch
                .as_deref(),
            Some("trunk")
        );
        assert_eq!(parse_status("## HEAD (no branch)\0", "").branch, None);
        assert!(parse_status("## main\0", "").clean);
    }

    #[test]
    fn revisions_that_look_like_options_are_refused() {
        for bad in [
            "-p",
            "--output=x",
            "",
            "a b",
            "a\nb",
            &"x".repeat(300),
            "HEAD:secret.txt",
            "HEAD:",
            ":0:a",
        ] {
            assert!(revision(bad).is_err(), "{bad}");
        }
        for good in ["HEAD", "HEAD~1", "main..feature", "v1.0", "abc123"] {
            assert_eq!(revision(good).unwrap(), good);
        }
    }
}
