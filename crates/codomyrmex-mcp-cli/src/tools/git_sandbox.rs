//! How the git tools run git: against a *shadow repository*, so that a repository in the root
//! can neither make git start a program nor make it read outside the root.
//!
//! The root must be the top level of a repository: it has a `.git` directory (a `.git` file,
//! the `gitdir:` redirection of linked worktrees and submodules, is refused). For every run a
//! fresh temporary directory becomes git's `GIT_DIR`. It holds our own `config` (only the
//! repository format and the `objectFormat`/`refStorage` extensions are taken over), a copy of
//! `HEAD`, and symlinks to the repository's `refs`, `packed-refs`, `shallow`, `info/exclude`
//! and split-index files; the objects and the index are reached through
//! `GIT_OBJECT_DIRECTORY` and `GIT_INDEX_FILE`. Each of those must resolve inside the root, a
//! symlink under `refs/` must too, and alternates (`objects/info/alternates`) are refused.
//! git is given none of them, nor the root, as a path: each is opened through the
//! confinement and held for the run, git's working directory is the root's descriptor (no
//! `GIT_WORK_TREE`: git takes its working directory as the work tree), and the rest are named
//! `/proc/<server pid>/fd/N` ([`Held`]), so a root or `.git` swapped for a symlink after the
//! checks cannot redirect git (Linux: `/proc` is required, else git fails to start).
//!
//! So the repository's `config` (with its filters, diff drivers, textconv, pagers, hooks,
//! fsmonitor, gpg and credential settings and `include`s) and `info/attributes` are never read.
//! The environment is cleared (only `PATH` is kept), the global and system configuration and
//! attributes are off, and the settings that could start a program are pinned on the command
//! line as well. `.gitattributes` in the working tree may still name drivers, but none is
//! defined, and git has no built-in driver that runs a program. Submodules are ignored.
//!
//! What this is not: it does not make a repository's *content* trustworthy (diffs and file
//! contents are returned as they are), and it does not bound git's own time or memory beyond
//! the output cap and the tool timeout. Symlinks inside `objects/` are not checked: through
//! them git can read only valid objects, by their hash.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;

use codomyrmex_mcp::confine::{
    ConfineError, ConfinedDir, ConfinedRoot, LastLink, TreeEntry, TreeFilter,
};
use rustix::fs::FileType;

use super::process::{Held, capture};
use super::sandbox::tool_error;
use super::{Sandbox, ToolError, kinds};

/// What a git run produced.
#[derive(Debug)]
pub struct GitRun {
    /// Standard output, cut at the cap (invalid UTF-8 replaced).
    pub stdout: String,
    /// Whether standard output was cut.
    pub truncated: bool,
}

/// The options given to every git run, before the command. The shadow repository's config
/// defines none of these; pinning them also covers a git that would read other files.
const PINNED: &[&str] = &[
    "--no-pager",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.attributesFile=/dev/null",
    "-c",
    "core.excludesFile=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "color.ui=false",
    "-c",
    "diff.external=",
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "status.submoduleSummary=false",
    "-c",
    "submodule.recurse=false",
    "-c",
    "log.showSignature=false",
    "-c",
    "protocol.allow=never",
];

/// The most entries under `.git/refs` checked for symlinks leaving the root.
const MAX_REF_ENTRIES: usize = 100_000;
/// The largest `HEAD` copied.
const MAX_HEAD_BYTES: u64 = 4096;

/// Runs `program` (git) on the root's repository with `args`, keeping at most `max_output`
/// bytes of its output. Fails on a non-zero exit with git's message, scrubbed of paths.
pub async fn run_git(
    program: &str,
    sandbox: &Sandbox,
    args: &[String],
    max_output: usize,
) -> Result<GitRun, ToolError> {
    let owned = sandbox.clone();
    // Walking the refs touches the disk: off the async runtime.
    let shadow = super::blocking(move |_| Shadow::create(&owned)).await?;
    let scrubbed = |e: ToolError| ToolError::new(e.kind, shadow.scrub(sandbox, &e.message));
    let format = shadow.repository_format(program).await.map_err(scrubbed)?;
    shadow.write_config(&format)?;
    let mut cmd = shadow.command(program);
    cmd.args(PINNED).args(args);
    execute(cmd, max_output).await.map_err(scrubbed)
}

/// The shadow repository of one run (removed when dropped).
///
/// git is never handed a path under the root: its working directory is the root's
/// descriptor, and the repository's objects, index, config and the entries linked into the
/// shadow are descriptors the confinement opened, held here for the run and named through
/// `/proc` ([`Held`]). A root or `.git` swapped for a symlink after the checks below cannot
/// redirect git: what was checked is what git reads.
struct Shadow {
    /// The temporary `GIT_DIR`.
    dir: tempfile::TempDir,
    /// The repository's `.git` directory (canonical, inside the root; only for scrubbing).
    real: PathBuf,
    /// The root, opened through the confinement: git's working directory and work tree.
    root: Held,
    /// The repository's objects.
    objects: Held,
    /// The repository's index, if any (else a missing file in the shadow).
    index: Option<Held>,
    /// The repository's own config file, if any.
    config: Option<Held>,
    /// The entries the shadow's symlinks name, held open for the run (never read: holding
    /// them keeps the names valid).
    _linked: Vec<Held>,
}

impl Shadow {
    /// Checks the root's repository and builds the shadow directory for it.
    fn create(sandbox: &Sandbox) -> Result<Self, ToolError> {
        let dot_git = sandbox.root().join(".git");
        let not_a_repository = || {
            ToolError::new(
                kinds::GIT_ERROR,
                "the root is not a git repository: the git tools work on the repository whose \
                 top level is the root (a .git directory in the root)",
            )
        };
        // Looked at from the root's descriptor (not followed), like every path into the root;
        // every error is a refusal.
        match sandbox.confined().entry_kind(Path::new(".git")) {
            Ok(Some(FileType::Directory)) => {}
            Ok(Some(FileType::RegularFile)) => {
                return Err(ToolError::new(
                    kinds::GIT_ERROR,
                    "the root's .git is a file (a gitdir: redirection, as in a linked worktree \
                     or a submodule); the git tools only use a .git directory in the root",
                ));
            }
            Ok(Some(FileType::Symlink)) => {
                return Err(ToolError::new(
                    kinds::GIT_ERROR,
                    "the root's .git is a symlink, not a directory (no gitdir: redirection); the \
                     git tools only use a .git directory in the root",
                ));
            }
            Ok(_) | Err(_) => return Err(not_a_repository()),
        }
        let real = inside(sandbox, &dot_git, ".git")?.ok_or_else(not_a_repository)?;
        let entry = |rel: &str| inside(sandbox, &real.join(rel), &format!(".git/{rel}"));
        let hold = |rel: &str| held(sandbox, &real.join(rel), &format!(".git/{rel}"));
        let head = entry("HEAD")?.ok_or_else(not_a_repository)?;
        let (objects_at, objects) = hold("objects")?.ok_or_else(not_a_repository)?;
        refuse_alternates(sandbox, &objects_at)?;
        let root = sandbox
            .confined()
            .resolve(Path::new(""), LastLink::Follow)
            .map(|found| Held::new(found.into_fd()))
            .map_err(|e| tool_error(e, "."))?;
        let mut linked = Vec::new();
        let dir = tempfile::Builder::new()
            .prefix("codomyrmex-git-")
            .tempdir()
            .map_err(|e| internal("cannot create the shadow repository", &e))?;
        let shadow = dir.path();
        let mkdir = |p: &Path| {
            std::fs::create_dir(p).map_err(|e| internal("cannot fill the shadow repository", &e))
        };
        mkdir(&shadow.join("objects"))?;
        mkdir(&shadow.join("info"))?;
        std::fs::write(shadow.join("HEAD"), read_head(sandbox, &head)?)
            .map_err(|e| internal("cannot fill the shadow repository", &e))?;
        match hold("refs")? {
            Some((refs_at, refs)) => {
                check_links_under(sandbox, &refs_at)?;
                link(&refs.program_path(), &shadow.join("refs"))?;
                linked.push(refs);
            }
            None => mkdir(&shadow.join("refs"))?,
        }
        for rel in ["packed-refs", "shallow", "reftable", "info/exclude"] {
            if let Some((_, target)) = hold(rel)? {
                link(&target.program_path(), &shadow.join(rel))?;
                linked.push(target);
            }
        }
        // A split index keeps its shared part next to the index (listed through the
        // confined walk, like every directory under the root).
        let names = real
            .strip_prefix(sandbox.root())
            .ok()
            .and_then(|rel| sandbox.confined().open_dir(rel).ok())
            .and_then(|dir| dir.names().ok())
            .unwrap_or_default();
        for name in names {
            if let Some(name) = name.to_str().filter(|n| n.starts_with("sharedindex."))
                && let Some((_, target)) = hold(name)?
            {
                link(&target.program_path(), &shadow.join(name))?;
                linked.push(target);
            }
        }
        let index = hold("index")?.map(|(_, index)| index);
        let config = hold("config")?.map(|(_, config)| config);
        Ok(Self {
            dir,
            real,
            root,
            objects,
            index,
            config,
            _linked: linked,
        })
    }

    /// The repository format to declare: `core.repositoryformatversion` and the extensions
    /// that change how the repository is read, taken from the repository's config with git
    /// itself (`--file` reads one file and follows no `include`).
    async fn repository_format(&self, program: &str) -> Result<Vec<(String, String)>, ToolError> {
        let Some(config) = &self.config else {
            return Ok(Vec::new());
        };
        let mut cmd = self.environment(program);
        cmd.current_dir(self.root.child_dir())
            .args(["config", "--file"])
            .arg(config.program_path())
            .args([
                "--get-regexp",
                r"^(core\.repositoryformatversion|extensions\.objectformat|extensions\.refstorage)$",
            ]);
        let run = match execute(cmd, 64 * 1024).await {
            Ok(run) => run,
            // Exit code 1: none of the keys is set.
            Err(e) if e.message.ends_with("(exit status: 1)") => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(run
            .stdout
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
            .collect())
    }

    /// Writes the shadow's own config.
    fn write_config(&self, format: &[(String, String)]) -> Result<(), ToolError> {
        let value = |key: &str| {
            format
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
                .filter(|v| v.chars().all(|c| c.is_ascii_alphanumeric()))
        };
        let mut extensions = String::new();
        for key in ["objectformat", "refstorage"] {
            if let Some(v) = value(&format!("extensions.{key}")) {
                extensions.push_str(&format!("\t{key} = {v}\n"));
            }
        }
        let version = match value("core.repositoryformatversion") {
            Some("1") => 1,
            _ if !extensions.is_empty() => 1,
            _ => 0,
        };
        let mut text = format!("[core]\n\trepositoryformatversion = {version}\n\tbare = false\n");
        if !extensions.is_empty() {
            text.push_str("[extensions]\n");
            text.push_str(&extensions);
        }
        std::fs::write(self.dir.path().join("config"), text)
            .map_err(|e| internal("cannot write the shadow repository's config", &e))
    }

    /// A git command with the cleared environment and no repository.
    fn environment(&self, program: &str) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(program);
        cmd.env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", self.dir.path())
            .env("LC_ALL", "C")
            .env("LANG", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_SYSTEM", "/dev/null")
            .env("GIT_ATTR_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_NO_LAZY_FETCH", "1")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_PAGER", "cat");
        cmd
    }

    /// The command running git on the shadow repository, in the root: its working directory
    /// is the root's descriptor and, with `GIT_DIR` set and no `GIT_WORK_TREE`, git takes
    /// its working directory for the work tree's top.
    fn command(&self, program: &str) -> tokio::process::Command {
        let index = self
            .index
            .as_ref()
            .map_or_else(|| self.dir.path().join("index"), Held::program_path);
        let mut cmd = self.environment(program);
        cmd.current_dir(self.root.child_dir())
            .env("GIT_DIR", self.dir.path())
            .env("GIT_INDEX_FILE", index)
            .env("GIT_OBJECT_DIRECTORY", self.objects.program_path());
        cmd
    }

    /// `message` with the root, the repository and the shadow replaced by names that reveal
    /// nothing, and any other absolute path removed.
    fn scrub(&self, sandbox: &Sandbox, message: &str) -> String {
        let mut out = message.to_owned();
        let mut known: Vec<(String, &str)> = vec![
            (self.dir.path().display().to_string(), "<git-dir>"),
            (self.real.display().to_string(), ".git"),
            (sandbox.root().display().to_string(), "<root>"),
        ];
        if let Some(alias) = sandbox.alias() {
            known.push((alias.display().to_string(), "<root>"));
        }
        for (path, name) in known {
            out = out.replace(&path, name);
        }
        redact_absolute_paths(&out)
    }
}

/// Runs `cmd`, capturing its output; a non-zero exit is a `GIT_ERROR` with git's message.
async fn execute(mut cmd: tokio::process::Command, max_output: usize) -> Result<GitRun, ToolError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(
            kinds::GIT_UNAVAILABLE,
            "git is not installed (or not on PATH); the git tools need the git command-line program",
        ),
        _ => ToolError::new(kinds::GIT_UNAVAILABLE, format!("cannot run git: {e}")),
    })?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError::new(kinds::INTERNAL, "git's pipes are missing"));
    };
    let (out, err, status) = tokio::join!(
        capture(stdout, max_output),
        capture(stderr, 16 * 1024),
        child.wait()
    );
    let status = status.map_err(|e| ToolError::new(kinds::GIT_ERROR, e.to_string()))?;
    let out = out.map_err(|e| ToolError::new(kinds::GIT_ERROR, e.to_string()))?;
    if !status.success() {
        let err = err.unwrap_or_default().text();
        let message = err.trim();
        return Err(ToolError::new(
            kinds::GIT_ERROR,
            if message.is_empty() {
                format!("git failed ({status})")
            } else {
                message.chars().take(2000).collect()
            },
        ));
    }
    Ok(GitRun {
        truncated: out.truncated(),
        stdout: out.text(),
    })
}

/// The refusal of `shown`, an entry that leads outside the root.
fn leads_outside(shown: &str) -> ToolError {
    ToolError::access_denied(format!(
        "{shown} leads outside the root (through a symlink); the git tools read only the \
         repository inside the root"
    ))
}

/// `path`'s part under the root (`shown` in messages); a path elsewhere leads outside it.
fn under_root<'p>(sandbox: &Sandbox, path: &'p Path, shown: &str) -> Result<&'p Path, ToolError> {
    path.strip_prefix(sandbox.root())
        .map_err(|_| leads_outside(shown))
}

/// `path` (under the root; `shown` in messages) as the sandbox resolves it, which keeps it
/// inside the root; `None` when it does not exist. Every other refusal or error is refused.
fn inside(sandbox: &Sandbox, path: &Path, shown: &str) -> Result<Option<PathBuf>, ToolError> {
    match sandbox.resolve_rel(under_root(sandbox, path, shown)?) {
        Ok(resolved) => Ok(Some(resolved)),
        Err(ConfineError::NotFound) => Ok(None),
        Err(_) => Err(leads_outside(shown)),
    }
}

/// [`inside`], and the entry itself opened through the confinement and held for the run:
/// its path (for further checks) and the [`Held`] descriptor git is given.
fn held(sandbox: &Sandbox, path: &Path, shown: &str) -> Result<Option<(PathBuf, Held)>, ToolError> {
    let rel = under_root(sandbox, path, shown)?;
    match sandbox.confined().resolve(rel, LastLink::Follow) {
        Ok(found) => Ok(Some((
            sandbox.root().join(found.rel()),
            Held::new(found.into_fd()),
        ))),
        Err(ConfineError::NotFound) => Ok(None),
        Err(_) => Err(leads_outside(shown)),
    }
}

/// Refuses a repository that borrows objects (`objects/info/alternates` exists, as a file,
/// link or anything) or whose `objects/info` cannot be walked inside the root (a symlink out
/// of it, where git would read `alternates` and the commit-graph). Walked from the root's
/// descriptor; only "nothing there" passes, every other answer is a refusal.
fn refuse_alternates(sandbox: &Sandbox, objects: &Path) -> Result<(), ToolError> {
    let rel = objects
        .strip_prefix(sandbox.root())
        .map(|objects| objects.join("info/alternates"));
    let found = match &rel {
        Ok(rel) => sandbox.confined().entry_kind(rel),
        Err(_) => Err(ConfineError::Escapes),
    };
    match found {
        Ok(None) | Err(ConfineError::NotFound) => Ok(()),
        Ok(Some(_)) => Err(ToolError::access_denied(
            "the repository borrows objects from elsewhere (.git/objects/info/alternates), \
             which the git tools do not follow",
        )),
        Err(e) => Err(ToolError::access_denied(format!(
            ".git/objects/info/alternates cannot be checked inside the root ({e}); the git \
             tools read only the repository inside the root"
        ))),
    }
}

/// Counts what the refs' walk meets, and keeps every entry.
struct EveryEntry {
    seen: usize,
}

impl TreeFilter for EveryEntry {
    fn enter(&mut self, _: &ConfinedDir) {}
    fn leave(&mut self) {}
    fn keep(&mut self, _: &TreeEntry) -> bool {
        self.seen += 1;
        true
    }
}

/// Refuses symlinks under `dir` (the refs) that lead outside the root. The refs are walked
/// by the confinement (from descriptors, never through a symlink).
fn check_links_under(sandbox: &Sandbox, dir: &Path) -> Result<(), ToolError> {
    let denied = || ToolError::access_denied(".git/refs cannot be walked inside the root");
    let rel = dir.strip_prefix(sandbox.root()).map_err(|_| denied())?;
    let mut walk = match sandbox
        .confined()
        .walk_tree(rel, None, EveryEntry { seen: 0 })
    {
        Ok(walk) => walk,
        // Not a directory: no loose refs to check (git decides what it is).
        Err(ConfineError::NotADirectory) => return Ok(()),
        Err(_) => return Err(denied()),
    };
    while let Some(entry) = walk.next() {
        if walk.tree_filter().seen > MAX_REF_ENTRIES {
            return Err(ToolError::new(
                kinds::TOO_LARGE,
                format!("the repository has more than {MAX_REF_ENTRIES} loose refs"),
            ));
        }
        if entry.kind() == rustix::fs::FileType::Symlink {
            let under = entry.rel().strip_prefix(rel).unwrap_or(entry.rel());
            let shown = format!(".git/refs/{}", under.display());
            inside(sandbox, &sandbox.root().join(entry.rel()), &shown)?;
        }
    }
    Ok(())
}

/// The content of the repository's `HEAD` (resolved inside the root), capped, opened by the
/// sandbox like every read.
fn read_head(sandbox: &Sandbox, head: &Path) -> Result<Vec<u8>, ToolError> {
    let failed =
        |why: &str| ToolError::new(kinds::GIT_ERROR, format!("cannot read .git/HEAD: {why}"));
    let raw = head.to_str().ok_or_else(|| failed("not a UTF-8 path"))?;
    let (_, file, _) = sandbox.open_file(raw).map_err(|e| failed(e.kind))?;
    let mut bytes = Vec::new();
    file.take(MAX_HEAD_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| failed(&e.kind().to_string()))?;
    Ok(bytes)
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) -> Result<(), ToolError> {
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| internal("cannot fill the shadow repository", &e))?;
    }
    std::os::unix::fs::symlink(target, at)
        .map_err(|e| internal("cannot fill the shadow repository", &e))
}

#[cfg(not(unix))]
fn link(_target: &Path, _at: &Path) -> Result<(), ToolError> {
    Err(ToolError::new(
        kinds::GIT_UNAVAILABLE,
        "the git tools need a Unix system (they link the repository into a shadow directory)",
    ))
}

fn internal(what: &str, e: &std::io::Error) -> ToolError {
    ToolError::new(kinds::INTERNAL, format!("{what}: {}", e.kind()))
}

/// `text` with every absolute path (a `/` at the start or after a space, quote, bracket, `=`
/// or `:`, not `//`, up to a space, quote, bracket or `:`) replaced by `<path>`.
fn redact_absolute_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut previous: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        let starts_path = c == '/'
            && previous.is_none_or(|p| " \t\n'\"`([{<=:,".contains(p))
            && !text[i + 1..].starts_with('/');
        if starts_path {
            while let Some((_, n)) = chars.peek() {
                if n.is_whitespace() || "'\"`)]}>,;:".contains(*n) {
                    break;
                }
                chars.next();
            }
            out.push_str("<path>");
            previous = Some('>');
            continue;
        }
        out.push(c);
        previous = Some(c);
    }
    out
}

/// The root-relative path of `raw` for a pathspec, refused when it is inside a `.git`
/// directory or inside another repository (a directory below the root with its own `.git`).
pub fn repository_path(sandbox: &Sandbox, raw: &str) -> Result<String, ToolError> {
    let resolved = sandbox.resolve_new(raw)?;
    sandbox.refuse_git_metadata(raw, &resolved)?;
    let rel = resolved
        .strip_prefix(sandbox.root())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut dir = PathBuf::new();
    for component in rel.components() {
        if let Component::Normal(name) = component {
            dir.push(name);
            // From the root's descriptor; nothing there (or a file on the way) passes, every
            // other answer is a refusal.
            match sandbox.confined().entry_kind(&dir.join(".git")) {
                Ok(None) | Err(ConfineError::NotFound | ConfineError::NotADirectory) => {}
                Ok(Some(_)) => {
                    return Err(ToolError::access_denied(format!(
                        "{} is another repository (it has its own .git); the git tools work \
                         only on the root's repository",
                        ConfinedRoot::display(&dir)
                    )));
                }
                Err(e) => return Err(tool_error(e, &ConfinedRoot::display(&dir))),
            }
        }
    }
    Ok(sandbox.relative(&resolved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_are_redacted() {
        assert_eq!(
            redact_absolute_paths("fatal: '../x' is outside repository at '/abs/root'"),
            "fatal: '../x' is outside repository at '<path>'"
        );
        assert_eq!(
            redact_absolute_paths("cannot open /home/u/x: denied"),
            "cannot open <path>: denied"
        );
        assert_eq!(
            redact_absolute_paths("refs/heads/main and https://example.com/x"),
            "refs/heads/main and https://example.com/x"
        );
        assert_eq!(redact_absolute_paths("a/b/c"), "a/b/c");
    }
}
