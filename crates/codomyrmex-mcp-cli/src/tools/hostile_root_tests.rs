//! Tests of the built-in tools over a hostile root: a repository whose own configuration,
//! attributes and layout try to make the git tools start a program or read outside the root,
//! file-tool writes into `.git`, and error messages that would reveal the server's paths.
//!
//! Each hostile repository writes a marker file when one of its programs runs; the tests check
//! that the marker never appears while the git tools still work.

use std::path::PathBuf;

use serde_json::json;

use super::git::GitTools;
use super::test_support::*;
use super::{Workspace, kinds};
use crate::config::Profile;
use codomyrmex_mcp::McpToolRegistry;

/// The git programs to test with: the one on PATH and the distribution's, when present.
fn gits() -> Vec<String> {
    let mut found = Vec::new();
    for candidate in ["git", "/usr/bin/git", "/usr/local/bin/git"] {
        let works = std::process::Command::new(candidate)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if works {
            found.push(candidate.to_owned());
        }
    }
    found
}

/// A repository in the fixture's root with one commit of `a.txt` and a modified `a.txt`, and
/// a marker directory outside the root that hostile programs write into.
struct Hostile {
    fx: Fixture,
    markers: tempfile::TempDir,
    scripts: tempfile::TempDir,
}

impl Hostile {
    fn new() -> Self {
        let fx = repo_with_history("b.bin");
        Self {
            fx,
            markers: tempfile::tempdir().unwrap(),
            scripts: tempfile::tempdir().unwrap(),
        }
    }

    /// An executable that records that `name` ran (for settings that name a program, not a
    /// shell command).
    fn script(&self, name: &str) -> PathBuf {
        let path = self.scripts.path().join(name);
        std::fs::write(
            &path,
            format!("#!/bin/sh\ntouch {}\ncat\n", self.marker(name).display()),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        path
    }

    /// A shell command that records that `name` ran, then passes its input through.
    fn program(&self, name: &str) -> String {
        format!("touch {}; cat", self.marker(name).display())
    }

    fn marker(&self, name: &str) -> PathBuf {
        self.markers.path().join(name)
    }

    /// Appends `text` to the repository's `.git/config`.
    fn config(&self, text: &str) {
        let path = self.fx.path(".git/config");
        let mut config = std::fs::read_to_string(&path).unwrap();
        config.push_str(text);
        std::fs::write(path, config).unwrap();
    }

    /// The names of the markers that exist: the programs that ran.
    fn ran(&self) -> Vec<String> {
        std::fs::read_dir(self.markers.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// A registry of the git tools running `program`.
    fn tools(&self, program: &str) -> McpToolRegistry {
        tools_with(self.fx.ws.clone(), program)
    }
}

fn tools_with(ws: Workspace, program: &str) -> McpToolRegistry {
    let r = McpToolRegistry::new();
    r.register_methods(std::sync::Arc::new(GitTools::with_program(ws, program)))
        .unwrap();
    r
}

fn message(result: &codomyrmex_mcp::McpToolResult) -> String {
    result
        .error()
        .map(|e| e.error_message.clone())
        .unwrap_or_default()
}

/// Every git tool, each with arguments that read the modified file, must work, and no marker
/// may appear.
async fn every_tool_works_and_nothing_ran(h: &Hostile) {
    for program in gits() {
        let r = h.tools(&program);
        let v = ok(&r, "git.status", json!({})).await;
        assert!(v["entries"].to_string().contains("a.txt"), "{program}: {v}");
        let v = ok(&r, "git.diff", json!({})).await;
        assert!(
            v["output"].as_str().unwrap().contains("+three"),
            "{program}: {v}"
        );
        ok(&r, "git.diff", json!({"base": "HEAD~1"})).await;
        ok(&r, "git.diff", json!({"staged": true})).await;
        let v = ok(&r, "git.log", json!({})).await;
        assert_eq!(v["commits"].as_array().unwrap().len(), 2, "{program}: {v}");
        let v = ok(&r, "git.show", json!({})).await;
        assert!(
            v["output"].as_str().unwrap().contains("+two"),
            "{program}: {v}"
        );
        let v = ok(&r, "git.show", json!({"path": "a.txt"})).await;
        assert_eq!(v["output"], "one\ntwo\n", "{program}");
        ok(
            &r,
            "git.show",
            json!({"path": "b.bin", "revision": "HEAD~1"}),
        )
        .await;
        ok(&r, "git.show", json!({"stat_only": true})).await;
        assert_eq!(h.ran(), Vec::<String>::new(), "{program} ran a program");
    }
}

#[tokio::test]
async fn a_clean_filter_does_not_run() {
    let h = Hostile::new();
    h.config(&format!(
        "[filter \"x\"]\n\tclean = \"{}\"\n\tsmudge = \"{}\"\n\trequired = true\n",
        h.program("clean"),
        h.program("smudge")
    ));
    h.fx.write(".gitattributes", "* filter=x\n");
    every_tool_works_and_nothing_ran(&h).await;
}

#[tokio::test]
async fn a_process_filter_does_not_run() {
    let h = Hostile::new();
    h.config(&format!(
        "[filter \"p\"]\n\tprocess = \"{}\"\n",
        h.program("process")
    ));
    h.fx.write(".gitattributes", "*.txt filter=p\n");
    every_tool_works_and_nothing_ran(&h).await;
}

#[tokio::test]
async fn diff_drivers_and_textconv_do_not_run() {
    let h = Hostile::new();
    h.config(&format!(
        "[diff \"d\"]\n\tcommand = \"{}\"\n[diff \"t\"]\n\ttextconv = \"{}\"\n\tcachetextconv = false\n[diff]\n\texternal = \"{}\"\n",
        h.program("command"),
        h.program("textconv"),
        h.program("external"),
    ));
    h.fx.write(".gitattributes", "*.txt diff=d\n*.bin diff=t\n");
    h.fx.write("b.bin", "changed\n");
    every_tool_works_and_nothing_ran(&h).await;
}

#[tokio::test]
async fn fsmonitor_hooks_and_pagers_do_not_run() {
    let h = Hostile::new();
    let script = h.script("fsmonitor");
    h.config(&format!(
        "[core]\n\tfsmonitor = \"{}\"\n\tpager = \"{}\"\n\thooksPath = \"{}\"\n[pager]\n\tdiff = \"{}\"\n\tlog = \"{}\"\n\tshow = \"{}\"\n\tstatus = \"{}\"\n",
        script.display(),
        h.program("core-pager"),
        h.markers.path().display(),
        h.program("pager-diff"),
        h.program("pager-log"),
        h.program("pager-show"),
        h.program("pager-status"),
    ));
    every_tool_works_and_nothing_ran(&h).await;
}

#[tokio::test]
async fn an_included_config_does_not_apply() {
    let h = Hostile::new();
    let included = h.fx.path("evil.inc");
    std::fs::write(
        &included,
        format!("[filter \"x\"]\n\tclean = \"{}\"\n", h.program("included")),
    )
    .unwrap();
    h.config(&format!(
        "[include]\n\tpath = {}\n[includeIf \"gitdir:/\"]\n\tpath = {}\n",
        included.display(),
        included.display()
    ));
    h.fx.write(".gitattributes", "* filter=x\n");
    every_tool_works_and_nothing_ran(&h).await;
}

#[tokio::test]
async fn info_attributes_select_no_driver() {
    let h = Hostile::new();
    h.config(&format!(
        "[filter \"x\"]\n\tclean = \"{}\"\n[diff \"d\"]\n\tcommand = \"{}\"\n",
        h.program("clean"),
        h.program("command")
    ));
    std::fs::create_dir_all(h.fx.path(".git/info")).unwrap();
    std::fs::write(h.fx.path(".git/info/attributes"), "* filter=x diff=d\n").unwrap();
    every_tool_works_and_nothing_ran(&h).await;
}

#[tokio::test]
async fn a_signature_is_not_verified_with_the_repositorys_gpg_program() {
    let h = Hostile::new();
    // A commit object with a (fake) signature: showing it with log.showSignature runs
    // gpg.program.
    let d = h.fx.dir.path();
    let head = std::process::Command::new("git")
        .args(["cat-file", "commit", "HEAD"])
        .current_dir(d)
        .output()
        .unwrap();
    let body = String::from_utf8(head.stdout).unwrap();
    let (headers, message) = body.split_once("\n\n").unwrap();
    let signed = format!(
        "{headers}\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\n{message}"
    );
    let hashed = std::process::Command::new("git")
        .args(["hash-object", "-t", "commit", "-w", "--stdin"])
        .current_dir(d)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(signed.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    let hash = String::from_utf8(hashed.stdout).unwrap();
    git(d, &["update-ref", "HEAD", hash.trim()]);
    h.config(&format!(
        "[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {}\n[gpg \"ssh\"]\n\tprogram = {}\n",
        h.script("gpg").display(),
        h.script("gpg-ssh").display()
    ));
    every_tool_works_and_nothing_ran(&h).await;
}

#[tokio::test]
async fn a_submodule_with_its_own_filter_does_not_run() {
    let h = Hostile::new();
    let inner = tempfile::tempdir().unwrap();
    git(inner.path(), &["init", "-q"]);
    std::fs::write(inner.path().join("s.txt"), "s\n").unwrap();
    git(inner.path(), &["add", "."]);
    git(inner.path(), &["commit", "-q", "-m", "inner"]);
    let d = h.fx.dir.path();
    git(
        d,
        &[
            "submodule",
            "add",
            "-q",
            inner.path().to_str().unwrap(),
            "sub",
        ],
    );
    git(d, &["commit", "-q", "-m", "with a submodule"]);
    // The submodule's repository gets a filter, and its file is modified.
    let sub_git = std::fs::read_to_string(h.fx.path("sub/.git")).unwrap();
    let sub_dir =
        h.fx.path("sub")
            .join(sub_git.trim().trim_start_matches("gitdir: "));
    let mut config = std::fs::read_to_string(sub_dir.join("config")).unwrap();
    config.push_str(&format!(
        "[filter \"x\"]\n\tclean = \"{}\"\n",
        h.program("submodule-clean")
    ));
    std::fs::write(sub_dir.join("config"), config).unwrap();
    std::fs::write(h.fx.path("sub/.gitattributes"), "* filter=x\n").unwrap();
    // Same size, later mtime: git must hash the file, through the filter, to compare it.
    std::fs::write(h.fx.path("sub/s.txt"), "s\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(h.fx.path("sub/s.txt"))
        .unwrap()
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(3600))
        .unwrap();
    h.fx.write("a.txt", "one\ntwo\nthree\n");
    for program in gits() {
        let r = h.tools(&program);
        ok(&r, "git.status", json!({})).await;
        ok(&r, "git.diff", json!({})).await;
        ok(&r, "git.show", json!({})).await;
        let e = call(&r, "git.status", json!({"path": "sub/s.txt"})).await;
        assert_eq!(error_kind(&e), kinds::ACCESS_DENIED, "{program}: {e:?}");
        assert_eq!(h.ran(), Vec::<String>::new(), "{program} ran a program");
    }
}

#[tokio::test]
async fn the_servers_environment_does_not_reach_git() {
    // A fake git that records its environment.
    let fx = Fixture::new();
    git(fx.dir.path(), &["init", "-q"]);
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("git");
    let seen = bin.path().join("env.txt");
    std::fs::write(&fake, format!("#!/bin/sh\nenv > {}\n", seen.display())).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let r = tools_with(fx.ws.clone(), fake.to_str().unwrap());
    let _ = call(&r, "git.log", json!({})).await;
    let env = std::fs::read_to_string(&seen).unwrap();
    let allowed = [
        "PATH", "HOME", "LC_ALL", "LANG", "PWD", "OLDPWD", "SHLVL", "_",
    ];
    for line in env.lines() {
        let key = line.split('=').next().unwrap_or_default();
        assert!(
            allowed.contains(&key) || key.starts_with("GIT_"),
            "{key} reached git: {env}"
        );
    }
    for line in env.lines().filter(|l| l.starts_with("GIT_")) {
        let key = line.split('=').next().unwrap_or_default();
        assert!(
            [
                "GIT_DIR",
                "GIT_WORK_TREE",
                "GIT_INDEX_FILE",
                "GIT_OBJECT_DIRECTORY",
                "GIT_CEILING_DIRECTORIES",
                "GIT_CONFIG_NOSYSTEM",
                "GIT_CONFIG_GLOBAL",
                "GIT_CONFIG_SYSTEM",
                "GIT_ATTR_NOSYSTEM",
                "GIT_TERMINAL_PROMPT",
                "GIT_OPTIONAL_LOCKS",
                "GIT_NO_LAZY_FETCH",
                "GIT_NO_REPLACE_OBJECTS",
                "GIT_PAGER",
            ]
            .contains(&key),
            "{key} was set: {env}"
        );
    }
    assert!(env.contains("GIT_CONFIG_GLOBAL=/dev/null"), "{env}");
}

#[tokio::test]
async fn revisions_naming_paths_are_refused() {
    let h = Hostile::new();
    let r = h.tools("git");
    for rev in ["HEAD:a.txt", "HEAD:../x", "HEAD:", ":a.txt", ":0:a.txt"] {
        for (tool, arg) in [
            ("git.show", "revision"),
            ("git.log", "revision"),
            ("git.diff", "base"),
        ] {
            let e = call(&r, tool, json!({ arg: rev })).await;
            assert_eq!(
                error_kind(&e),
                kinds::INVALID_ARGUMENT,
                "{tool} {rev}: {e:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_root_inside_a_repository_is_refused() {
    let h = Hostile::new();
    h.fx.write("sub/c.txt", "c\n");
    git(h.fx.dir.path(), &["add", "sub/c.txt"]);
    git(h.fx.dir.path(), &["commit", "-q", "-m", "sub"]);
    let sandbox = super::Sandbox::new(h.fx.path("sub")).unwrap();
    let ws = Workspace::new(
        sandbox,
        crate::config::Limits::default(),
        crate::config::ShellSettings::default(),
    );
    let r = tools_with(ws, "git");
    for (tool, args) in [
        ("git.status", json!({})),
        ("git.diff", json!({})),
        ("git.log", json!({})),
        ("git.show", json!({"path": "c.txt"})),
    ] {
        let e = call(&r, tool, args).await;
        assert_eq!(error_kind(&e), kinds::GIT_ERROR, "{tool}: {e:?}");
        assert!(
            message(&e).contains("not a git repository"),
            "{tool}: {e:?}"
        );
    }
}

#[tokio::test]
async fn a_gitdir_file_is_refused() {
    let h = Hostile::new();
    let elsewhere = Hostile::new();
    std::fs::remove_dir_all(h.fx.path(".git")).unwrap();
    h.fx.write(
        ".git",
        format!("gitdir: {}\n", elsewhere.fx.path(".git").display()),
    );
    let r = h.tools("git");
    let e = call(&r, "git.log", json!({})).await;
    assert_eq!(error_kind(&e), kinds::GIT_ERROR, "{e:?}");
    assert!(message(&e).contains("gitdir"), "{e:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn git_files_linked_out_of_the_root_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "root:secret-hash:1:2\n").unwrap();
    for entry in ["packed-refs", "HEAD", "index", "refs/heads/evil"] {
        let h = Hostile::new();
        let path = h.fx.path(&format!(".git/{entry}"));
        let _ = std::fs::remove_file(&path);
        std::os::unix::fs::symlink(outside.path().join("secret"), &path).unwrap();
        let r = h.tools("git");
        for tool in ["git.log", "git.status"] {
            let e = call(&r, tool, json!({})).await;
            assert!(
                !format!("{e:?}").contains("secret-hash"),
                "{entry} {tool}: {e:?}"
            );
            assert_eq!(
                error_kind(&e),
                kinds::ACCESS_DENIED,
                "{entry} {tool}: {e:?}"
            );
        }
    }
    // Alternates would read objects of another repository.
    let h = Hostile::new();
    std::fs::write(
        h.fx.path(".git/objects/info/alternates"),
        format!("{}\n", outside.path().display()),
    )
    .unwrap();
    let e = call(&h.tools("git"), "git.log", json!({})).await;
    assert_eq!(error_kind(&e), kinds::ACCESS_DENIED, "{e:?}");
}

#[tokio::test]
async fn git_errors_do_not_reveal_absolute_paths() {
    let h = Hostile::new();
    let root = h.fx.dir.path().canonicalize().unwrap();
    let r = h.tools("git");
    for (tool, args) in [
        ("git.diff", json!({"base": "no-such-branch"})),
        ("git.show", json!({"revision": "no-such"})),
        ("git.show", json!({"path": "missing.txt"})),
        ("git.log", json!({"revision": "nope..nada"})),
        ("git.log", json!({"path": "../x"})),
        ("git.status", json!({"path": ".git/config"})),
    ] {
        let e = call(&r, tool, args.clone()).await;
        assert_ne!(e.status(), "success", "{tool} {args}");
        let text = format!("{:?}", e.error());
        assert!(
            !text.contains(root.to_str().unwrap()) && !text.contains("/tmp"),
            "{tool} {args}: {text}"
        );
    }
    // A broken config: git names the file it cannot parse.
    std::fs::write(h.fx.path(".git/config"), "[core\n\tbroken").unwrap();
    let e = call(&r, "git.log", json!({})).await;
    assert_eq!(error_kind(&e), kinds::GIT_ERROR, "{e:?}");
    let text = format!("{:?}", e.error());
    assert!(!text.contains(root.to_str().unwrap()), "{text}");
    assert!(text.contains("config"), "{text}");
    // No repository at all.
    let fx = Fixture::new();
    let e = call(&registry(&fx, Profile::Readonly), "git.log", json!({})).await;
    let text = format!("{:?}", e.error());
    assert!(!text.contains(fx.dir.path().to_str().unwrap()), "{text}");
}

#[tokio::test]
async fn file_tools_do_not_write_into_git_directories() {
    let h = Hostile::new();
    h.fx.write("sub/.GIT/keep", "x");
    #[cfg(unix)]
    std::os::unix::fs::symlink(h.fx.path(".git"), h.fx.path("link-to-git")).unwrap();
    let r = registry(&h.fx, Profile::Full);
    let config = h.fx.read(".git/config");
    for path in [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git",
        "sub/.git",
        "sub/.GIT/keep",
        ".Git/x",
        "link-to-git/config",
        "./.git/info/attributes",
    ] {
        for (tool, args) in [
            (
                "file_system.write",
                json!({"path": path, "content": "x", "create_parents": true}),
            ),
            (
                "file_system.edit",
                json!({"path": path, "old_string": "[core]", "new_string": "[x]"}),
            ),
            ("file_system.make_directory", json!({"path": path})),
            (
                "file_system.move",
                json!({"source": "a.txt", "destination": path}),
            ),
        ] {
            let e = call(&r, tool, args).await;
            assert_eq!(error_kind(&e), kinds::ACCESS_DENIED, "{tool} {path}: {e:?}");
        }
    }
    for source in [".git/config", ".git", "link-to-git/HEAD"] {
        let e = call(
            &r,
            "file_system.move",
            json!({"source": source, "destination": "stolen"}),
        )
        .await;
        assert_eq!(error_kind(&e), kinds::ACCESS_DENIED, "move {source}: {e:?}");
    }
    assert_eq!(h.fx.read(".git/config"), config);
    assert!(!h.fx.path("sub/.git").exists());
    // Reading stays allowed.
    ok(&r, "file_system.read", json!({"path": ".git/config"})).await;
    // A name that merely contains ".git" is an ordinary file.
    ok(
        &r,
        "file_system.write",
        json!({"path": ".gitignore", "content": "target\n"}),
    )
    .await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_fifo_is_not_opened_for_reading_or_writing() {
    let fx = Fixture::new();
    let status = std::process::Command::new("mkfifo")
        .arg(fx.path("pipe"))
        .status();
    if !status.is_ok_and(|s| s.success()) {
        return;
    }
    let r = registry(&fx, Profile::Full);
    for (tool, args) in [
        ("file_system.read", json!({"path": "pipe"})),
        ("file_system.checksum", json!({"path": "pipe"})),
        ("json.query", json!({"filter": ".", "path": "pipe"})),
        ("file_system.write", json!({"path": "pipe", "content": "x"})),
        (
            "file_system.edit",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
    ] {
        let e = call(&r, tool, args).await;
        assert_eq!(error_kind(&e), kinds::INVALID_ARGUMENT, "{tool}: {e:?}");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn no_error_message_names_the_root() {
    let fx = Fixture::new();
    fx.write("f.txt", "text\n");
    fx.write("d/x", "x");
    let r = registry(&fx, Profile::Full);
    let given = fx.dir.path().to_str().unwrap().to_owned();
    let canonical = fx.dir.path().canonicalize().unwrap();
    let canonical = canonical.to_str().unwrap().to_owned();
    for (tool, args) in [
        ("file_system.read", json!({"path": "missing"})),
        ("file_system.read", json!({"path": "d"})),
        ("file_system.list_directory", json!({"path": "f.txt"})),
        ("file_system.search", json!({"pattern": "("})),
        (
            "file_system.search",
            json!({"pattern": "x", "path": "missing"}),
        ),
        ("file_system.checksum", json!({"path": "d"})),
        ("file_system.stat", json!({"path": "missing/deeper"})),
        ("file_system.write", json!({"path": "d", "content": "x"})),
        (
            "file_system.write",
            json!({"path": "no/parent", "content": "x"}),
        ),
        (
            "file_system.edit",
            json!({"path": "f.txt", "old_string": "absent", "new_string": "x"}),
        ),
        ("file_system.make_directory", json!({"path": "f.txt"})),
        (
            "file_system.move",
            json!({"source": "missing", "destination": "y"}),
        ),
        (
            "file_system.move",
            json!({"source": "d", "destination": "d/x/y"}),
        ),
        ("json.query", json!({"filter": ".", "path": "missing.json"})),
        ("json.query", json!({"filter": ".", "path": "f.txt"})),
        (
            "json.query",
            json!({"filter": "error(\"boom\")", "input": 1}),
        ),
        ("shell.run", json!({"argv": ["codomyrmex-no-such-program"]})),
        ("shell.run", json!({"argv": ["true"], "cwd": "missing"})),
        ("git.status", json!({})),
        ("git.show", json!({"path": "f.txt"})),
    ] {
        let e = call(&r, tool, args.clone()).await;
        assert_ne!(e.status(), "success", "{tool} {args}");
        let text = format!("{:?}", e.error());
        assert!(
            !text.contains(&given) && !text.contains(&canonical),
            "{tool} {args}: {text}"
        );
    }
}

#[tokio::test]
async fn a_sha256_repository_keeps_its_object_format() {
    let fx = Fixture::new();
    git(fx.dir.path(), &["init", "-q", "--object-format=sha256"]);
    fx.write("a.txt", "one\n");
    git(fx.dir.path(), &["add", "."]);
    git(fx.dir.path(), &["commit", "-q", "-m", "first"]);
    fx.write("a.txt", "one\ntwo\n");
    for program in gits() {
        let r = tools_with(fx.ws.clone(), &program);
        let v = ok(&r, "git.log", json!({})).await;
        assert_eq!(
            v["commits"][0]["hash"].as_str().unwrap().len(),
            64,
            "{program}: {v}"
        );
        let v = ok(&r, "git.diff", json!({})).await;
        assert!(
            v["output"].as_str().unwrap().contains("+two"),
            "{program}: {v}"
        );
        let v = ok(&r, "git.show", json!({"path": "a.txt"})).await;
        assert_eq!(v["output"], "one\n", "{program}");
    }
}

/// Issue #26's chain in `root`: 20 nested directories of 200-character names; in the
/// deepest, `b` → `target`, `passwd` → `/etc/passwd`, `environ` → `/proc/self/environ`; `a`
/// (in the root) → the first ten levels, `c` (at level ten) → the last ten. The resolved
/// paths pass `PATH_MAX`, so `realpath` fails on them while `open` follows them.
#[cfg(unix)]
fn long_chain(root: &std::path::Path, target: &std::path::Path) {
    use rustix::fs::{Mode, OFlags, mkdirat, openat, symlinkat};
    let name = "d".repeat(200);
    let ten = [name.as_str(); 10].join("/");
    std::os::unix::fs::symlink(&ten, root.join("a")).unwrap();
    let mut dir = std::fs::File::open(root).unwrap();
    for level in 1..=20 {
        mkdirat(&dir, name.as_str(), Mode::RWXU).unwrap();
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        dir = std::fs::File::from(openat(&dir, name.as_str(), flags, Mode::empty()).unwrap());
        if level == 10 {
            symlinkat(ten.as_str(), &dir, "c").unwrap();
        }
    }
    symlinkat(target, &dir, "b").unwrap();
    symlinkat("/etc/passwd", &dir, "passwd").unwrap();
    symlinkat("/proc/self/environ", &dir, "environ").unwrap();
}

/// Whether `text` shows what the chain's targets hold.
fn leaks_chain(text: &str) -> bool {
    text.contains("root:secret-hash") || text.contains("root:x:0") || text.contains("PATH=")
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_chain_past_path_max_is_refused_by_every_tool() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.json");
    std::fs::write(&secret, "\"root:secret-hash:1:2\"\n").unwrap();
    let h = Hostile::new();
    long_chain(h.fx.dir.path(), &secret);
    // The kernel follows the chain (each link is short): the finding's premise holds here.
    let via_kernel = std::process::Command::new("cat")
        .current_dir(h.fx.dir.path())
        .arg("a/c/b")
        .output()
        .unwrap();
    assert!(leaks_chain(&String::from_utf8_lossy(&via_kernel.stdout)));
    let git = h.tools("git");
    let full = registry(&h.fx, Profile::Full);
    let full: &McpToolRegistry = &full;
    for path in ["a/c/b", "a/c/passwd", "a/c/environ"] {
        for (tools, tool, args) in [
            (full, "file_system.read", json!({"path": path})),
            (full, "file_system.checksum", json!({"path": path})),
            (full, "file_system.stat", json!({"path": path})),
            (full, "json.query", json!({"filter": ".", "path": path})),
            (&git, "git.log", json!({"path": path})),
            (&git, "git.diff", json!({"path": path})),
            (
                full,
                "file_system.write",
                json!({"path": path, "content": "x"}),
            ),
        ] {
            let e = call(tools, tool, args).await;
            assert!(!leaks_chain(&format!("{e:?}")), "{tool} {path}: {e:?}");
            assert_eq!(error_kind(&e), kinds::ACCESS_DENIED, "{tool} {path}: {e:?}");
        }
    }
    // A search below the chain finds the links and opens none of them.
    let found = call(
        full,
        "file_system.search",
        json!({"pattern": "root", "path": "a/c"}),
    )
    .await;
    assert!(!leaks_chain(&format!("{found:?}")), "{found:?}");
    assert!(
        std::fs::read_to_string(&secret)
            .unwrap()
            .contains("secret-hash"),
        "the write went through the chain"
    );
}

/// `.git/objects/info` linked out of the root: git would read `alternates` (and the
/// commit-graph) from there, so the repository is refused however that directory looks now.
/// The check walks `.git/objects/info/alternates` from the root's descriptor; a path-based
/// `symlink_metadata` found no `alternates` outside and let git follow the link.
#[cfg(unix)]
#[tokio::test]
async fn objects_info_linked_out_of_the_root_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let h = Hostile::new();
    let info = h.fx.path(".git/objects/info");
    let _ = std::fs::remove_dir_all(&info);
    std::os::unix::fs::symlink(outside.path(), &info).unwrap();
    let r = h.tools("git");
    for tool in ["git.log", "git.status"] {
        let e = call(&r, tool, json!({})).await;
        assert_eq!(error_kind(&e), kinds::ACCESS_DENIED, "{tool}: {e:?}");
    }
    // An alternates file planted there later is never reached either.
    std::fs::write(outside.path().join("alternates"), "/elsewhere/objects\n").unwrap();
    let e = call(&r, "git.log", json!({})).await;
    assert_eq!(error_kind(&e), kinds::ACCESS_DENIED, "{e:?}");
}

/// The root's directory swapped for a symlink to another repository after the server opened
/// it and before git or `shell.run` starts (issue #26): the race between the confinement's
/// checks and the spawn, made deterministic by swapping before the call. The children still
/// run in the directory the server opened, never in the one the link names.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_root_swapped_for_a_symlink_out_moves_neither_git_nor_the_shell() {
    let h = Hostile::new();
    let outside = tempfile::tempdir().unwrap();
    git(outside.path(), &["init", "-q"]);
    std::fs::write(outside.path().join("a.txt"), "OUTSIDE\n").unwrap();
    git(outside.path(), &["add", "."]);
    git(outside.path(), &["commit", "-q", "-m", "OUTSIDE commit"]);
    let r = registry(&h.fx, Profile::Full);
    // Both work before the swap.
    ok(&r, "git.log", json!({})).await;
    ok(&r, "shell.run", json!({"argv": ["true"]})).await;

    let root = h.fx.dir.path().to_path_buf();
    let aside = tempfile::tempdir().unwrap();
    let moved = aside.path().join("moved");
    std::fs::rename(&root, &moved).unwrap();
    std::os::unix::fs::symlink(outside.path(), &root).unwrap();
    let log = call(&r, "git.log", json!({})).await;
    let status = call(&r, "git.status", json!({})).await;
    let show = call(&r, "git.show", json!({"path": "a.txt"})).await;
    let cat = call(&r, "shell.run", json!({"argv": ["cat", "a.txt"]})).await;
    let sub = call(
        &r,
        "shell.run",
        json!({"argv": ["cat", "../a.txt"], "cwd": ".git"}),
    )
    .await;
    // Put the root back before asserting, so the fixture cleans up after a failure too.
    std::fs::remove_file(&root).unwrap();
    std::fs::rename(&moved, &root).unwrap();

    for (what, result) in [
        ("git.log", &log),
        ("git.status", &status),
        ("git.show", &show),
        ("shell.run", &cat),
        ("shell.run in .git", &sub),
    ] {
        assert_eq!(result.status(), "success", "{what}: {:?}", result.error());
        let data = format!("{:?}", result.data());
        assert!(
            !data.contains("OUTSIDE"),
            "{what} ran outside the root: {data}"
        );
    }
    let subjects: Vec<_> = log.data().unwrap()["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(subjects, ["second commit", "first commit"]);
    assert!(
        status.data().unwrap()["entries"]
            .to_string()
            .contains("a.txt"),
        "{:?}",
        status.data()
    );
    assert_eq!(show.data().unwrap()["output"], "one\ntwo\n");
    assert_eq!(cat.data().unwrap()["stdout"], "one\ntwo\nthree\n");
    assert_eq!(sub.data().unwrap()["stdout"], "one\ntwo\nthree\n");
}
