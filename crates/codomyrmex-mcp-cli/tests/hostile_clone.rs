//! The finding of issue #26: a cloned repository whose symlink chain resolves past
//! `PATH_MAX` (so `realpath` fails while `open` still follows it) must not let a client read
//! outside the served root. The repository is built and committed at test time, cloned with
//! `git clone` as an attacker's would arrive, and its chain read through the library's
//! `ServeDirectory`, the `serve` binary (readonly) and the `gateway` in front of it.

// Test helpers fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::{ClientOptions, EraPreference, StdioCommand};
use codomyrmex_mcp::{McpResourceRegistry, ResourceError};
use codomyrmex_mcp::{ServeDirectory as _, ToolContext};
use serde_json::{Value, json};

use support::BIN;

const GUARD: Duration = Duration::from_secs(60);
/// What the outside file holds; no answer may contain it.
const SECRET: &str = "the-secret-outside-the-root-26";

/// `git ARGS` in `dir` with a test identity and none of the caller's configuration.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.symlinks=true",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The hostile repository, committed and cloned: 20 nested directories of 200-character
/// names; in the deepest, `b` → the outside secret, `passwd` → `/etc/passwd`, `environ` →
/// `/proc/self/environ`; `a` (in the root) → the first ten levels, `c` (at level ten) → the
/// last ten. Returns (the clone, the temp dirs to keep).
fn hostile_clone() -> (PathBuf, Vec<tempfile::TempDir>) {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    let origin = tempfile::tempdir().unwrap();
    git(origin.path(), &["init", "-q"]);
    let name = "d".repeat(200);
    let ten = [name.as_str(); 10].join("/");
    // The shell walks relative paths one level at a time: no path it uses passes PATH_MAX.
    let script = format!(
        "set -e; ln -s '{ten}' a; for i in $(seq 20); do mkdir {name}; cd {name}; \
         if [ $i = 10 ]; then ln -s '{ten}' c; fi; done; \
         ln -s '{secret}' b; ln -s /etc/passwd passwd; ln -s /proc/self/environ environ",
        secret = secret.display()
    );
    let out = Command::new("sh")
        .current_dir(origin.path())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(origin.path().join("README"), "a hostile repository\n").unwrap();
    git(origin.path(), &["add", "-A"]);
    git(origin.path(), &["commit", "-q", "-m", "hostile"]);
    let clones = tempfile::tempdir().unwrap();
    let url = format!("file://{}", origin.path().display());
    // A root path of a usual length (a home directory, a project): with the chain's 4,020
    // bytes the resolved path passes PATH_MAX, so realpath fails where open does not.
    let name = format!("clone-{}", "r".repeat(100));
    git(clones.path(), &["clone", "-q", &url, &name]);
    let clone = clones.path().join(name);
    assert!(
        clone
            .canonicalize()
            .unwrap()
            .join("a/c/b")
            .canonicalize()
            .is_err(),
        "realpath must fail on the chain for the test to mean anything"
    );
    // The chain arrived: the kernel follows it (the symlinks are short) to the secret.
    let via_chain = Command::new("cat")
        .current_dir(&clone)
        .arg("a/c/b")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&via_chain.stdout), SECRET);
    (clone, vec![outside, origin, clones])
}

/// The paths under the root that lead outside.
const CHAIN: [&str; 3] = ["a/c/b", "a/c/passwd", "a/c/environ"];

/// Whether `text` shows anything read from outside.
fn leaks(text: &str) -> bool {
    text.contains(SECRET) || text.contains("root:") || text.contains("PATH=")
}

#[tokio::test]
async fn the_library_refuses_the_chain() {
    let (clone, _keep) = hostile_clone();
    let r = McpResourceRegistry::new();
    r.serve_directory(&clone, "codomyrmex://root/", "root")
        .unwrap();
    let readme = r
        .read("codomyrmex://root/README", ToolContext::detached())
        .await
        .unwrap();
    assert!(format!("{readme:?}").contains("a hostile repository"));
    for path in CHAIN {
        let got = r
            .read(
                &format!("codomyrmex://root/{path}"),
                ToolContext::detached(),
            )
            .await;
        assert!(!leaks(&format!("{got:?}")), "{path}: {got:?}");
        assert!(
            matches!(got, Err(ResourceError::AccessDenied(_))),
            "{path}: {got:?}"
        );
    }
}

/// A stdio client of the binary with `args`.
async fn client(args: &[&str]) -> McpClient {
    let mut c = StdioCommand::new(BIN);
    c.args = args.iter().map(|a| (*a).to_owned()).collect();
    let client = McpClient::spawn(&c, ClientOptions::default()).unwrap();
    tokio::time::timeout(
        GUARD,
        client.negotiate(EraPreference::Legacy, Duration::from_secs(10)),
    )
    .await
    .expect("no hang")
    .expect("the handshake");
    client
}

/// Reads `uri`; the error's text, or the contents.
async fn read(client: &McpClient, uri: &str) -> Result<Value, String> {
    tokio::time::timeout(GUARD, client.read_resource(uri))
        .await
        .expect("no hang")
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn the_serve_binary_refuses_the_chain() {
    let (clone, _keep) = hostile_clone();
    let root = clone.to_str().unwrap();
    let c = client(&["serve", "--root", root, "--profile", "readonly"]).await;
    let ok = read(&c, "codomyrmex://root/README").await.unwrap();
    assert_eq!(ok["contents"][0]["text"], "a hostile repository\n");
    for path in CHAIN {
        let got = read(&c, &format!("codomyrmex://root/{path}")).await;
        assert!(!leaks(&format!("{got:?}")), "{path}: {got:?}");
        let e = got.expect_err(path);
        assert!(e.to_lowercase().contains("outside the root"), "{path}: {e}");
    }
    // The file tools refuse the same chain.
    for path in CHAIN {
        let r = c
            .call_tool("file_system.read", json!({"path": path}))
            .await
            .unwrap();
        assert_eq!(r["isError"], true, "{path}: {r}");
        assert!(!leaks(&r.to_string()), "{path}: {r}");
    }
}

#[tokio::test]
async fn the_gateway_in_front_of_serve_refuses_the_chain() {
    let (clone, _keep) = hostile_clone();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"files\"\ncommand = \"{BIN}\"\n\
             args = [\"serve\", \"--root\", \"{root}\", \"--profile\", \"readonly\"]\n",
            root = clone.to_str().unwrap()
        ),
    )
    .unwrap();
    let c = client(&["gateway", "--config", config.to_str().unwrap()]).await;
    let ok = read(&c, "files+codomyrmex://root/README").await.unwrap();
    assert_eq!(ok["contents"][0]["text"], "a hostile repository\n");
    for path in CHAIN {
        let got = read(&c, &format!("files+codomyrmex://root/{path}")).await;
        assert!(!leaks(&format!("{got:?}")), "{path}: {got:?}");
        assert!(got.is_err(), "{path}: {got:?}");
    }
}
