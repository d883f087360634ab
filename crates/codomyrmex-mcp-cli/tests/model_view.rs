//! What a model and a client see, from the real `codomyrmex-mcp serve` binary over stdio in a
//! small git repository: the text blocks of every built-in tool's `tools/call` result, and
//! the root's files in `resources/list`.

// Test helpers fail by panicking, outside `#[test]` functions too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use codomyrmex_mcp::Era;
use codomyrmex_mcp::client::McpClient;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_codomyrmex-mcp");
const HANG_GUARD: Duration = Duration::from_secs(60);

const ORIGINAL: &str = "fn main() {\n    println!(\"hi\");\n}\n";
const CHANGED: &str = "fn main() {\n    println!(\"hi\");\n    println!(\"bye\");\n}\n";

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Tester")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "Tester")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository with one commit of `src/main.rs` (then changed in the working tree), an
/// ignored `target/` and a JSON file.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("src/main.rs"), ORIGINAL).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(root.join("target/junk"), "x").unwrap();
    std::fs::write(root.join("data.json"), r#"{"a": [1, "two"]}"#).unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "first commit"]);
    std::fs::write(root.join("src/main.rs"), CHANGED).unwrap();
    dir
}

/// The text of each content block (every block must be text).
fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {result}"))
        .iter()
        .map(|b| {
            assert_eq!(b["type"], "text", "{result}");
            b["text"].as_str().unwrap().to_owned()
        })
        .collect()
}

struct Server {
    client: McpClient,
    child: tokio::process::Child,
    called: BTreeSet<String>,
}

impl Server {
    async fn start(root: &Path) -> Self {
        Self::start_with(root, &[]).await
    }

    async fn start_with(root: &Path, extra: &[&str]) -> Self {
        let mut child = tokio::process::Command::new(BIN)
            .args(["serve", "--stdio", "--profile", "full", "--root"])
            .arg(root)
            .args(extra)
            .env_remove("CODOMYRMEX_MCP_CONFIG")
            .env_remove("CODOMYRMEX_MCP_HTTP")
            .env_remove("CODOMYRMEX_MCP_PROFILE")
            .env_remove("CODOMYRMEX_MCP_ROOT")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let client = McpClient::connect(
            child.stdout.take().unwrap(),
            child.stdin.take().unwrap(),
            Era::Legacy,
        );
        tokio::time::timeout(HANG_GUARD, client.initialize())
            .await
            .unwrap()
            .unwrap();
        Self {
            client,
            child,
            called: BTreeSet::new(),
        }
    }

    /// A successful call's result; checks that `structuredContent` is there.
    async fn call(&mut self, name: &str, args: Value) -> Value {
        self.called.insert(name.to_owned());
        let r = tokio::time::timeout(HANG_GUARD, self.client.call_tool(name, args))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(r["isError"], true, "{name}: {r}");
        assert!(r["structuredContent"].is_object(), "{name}: {r}");
        r
    }

    /// A call whose text is the JSON of its `structuredContent` (the default rendering).
    async fn call_json(&mut self, name: &str, args: Value) -> Value {
        let r = self.call(name, args).await;
        let t = texts(&r);
        assert_eq!(t.len(), 1, "{name}: {r}");
        let parsed: Value = serde_json::from_str(&t[0]).unwrap();
        assert_eq!(parsed, r["structuredContent"], "{name}");
        r
    }
}

#[tokio::test]
async fn every_builtin_tool_shows_the_model_plain_text() {
    let dir = repository();
    let mut s = Server::start(dir.path()).await;

    // file_system.read: the file exactly as on disk, nothing else.
    let r = s
        .call("file_system.read", json!({"path": "src/main.rs"}))
        .await;
    assert_eq!(texts(&r), [CHANGED]);
    assert_eq!(r["structuredContent"]["content"], CHANGED);
    // Cut short: the bytes, then how to go on.
    let r = s
        .call(
            "file_system.read",
            json!({"path": "src/main.rs", "max_bytes": 4}),
        )
        .await;
    assert_eq!(
        texts(&r),
        [
            "fn m",
            "[truncated: 4 of the file's 55 bytes returned; continue with offset 4]"
        ]
    );

    // With encoding "base64": the base64 text.
    let r = s
        .call(
            "file_system.read",
            json!({"path": "data.json", "encoding": "base64"}),
        )
        .await;
    assert_eq!(texts(&r), ["eyJhIjogWzEsICJ0d28iXX0="]);

    let r = s
        .call("file_system.list_directory", json!({"recursive": true}))
        .await;
    assert_eq!(texts(&r), ["data.json\nsrc/\nsrc/main.rs\n"]);

    let r = s
        .call("file_system.search", json!({"pattern": "bye"}))
        .await;
    assert_eq!(texts(&r), ["src/main.rs:3:    println!(\"bye\");\n"]);

    let r = s
        .call("file_system.checksum", json!({"path": "src/main.rs"}))
        .await;
    let digest: String = Sha256::digest(CHANGED.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(texts(&r), [format!("{digest}  src/main.rs\n")]);

    s.call_json("file_system.stat", json!({"path": "src/main.rs"}))
        .await;

    let r = s.call("git.status", json!({})).await;
    assert_eq!(texts(&r), ["## main\n M src/main.rs\n"]);

    let r = s.call("git.diff", json!({})).await;
    let [diff] = &texts(&r)[..] else {
        panic!("{r}")
    };
    assert!(
        diff.starts_with("diff --git a/src/main.rs b/src/main.rs\n"),
        "{diff}"
    );
    assert!(diff.contains("\n+    println!(\"bye\");\n"), "{diff}");
    assert_eq!(r["structuredContent"]["output"], *diff);

    let r = s.call("git.log", json!({})).await;
    let commit = &r["structuredContent"]["commits"][0];
    assert_eq!(
        texts(&r),
        [format!(
            "{} {} Tester <t@example.com>\n    first commit\n",
            commit["hash"].as_str().unwrap(),
            commit["date"].as_str().unwrap()
        )]
    );

    let r = s
        .call(
            "git.show",
            json!({"revision": "HEAD", "path": "src/main.rs"}),
        )
        .await;
    assert_eq!(texts(&r), [ORIGINAL]);
    let r = s.call("git.show", json!({})).await;
    let [show] = &texts(&r)[..] else {
        panic!("{r}")
    };
    assert!(
        show.starts_with(&format!("commit {}", commit["hash"].as_str().unwrap())),
        "{show}"
    );
    assert!(show.contains("\n+    println!(\"hi\");\n"), "{show}");

    let r = s
        .call("json.query", json!({"filter": ".a[]", "path": "data.json"}))
        .await;
    assert_eq!(texts(&r), ["1\n\"two\"\n"]);

    let r = s
        .call(
            "shell.run",
            json!({"argv": ["sh", "-c", "printf 'out\\n'; printf 'err\\n' >&2; exit 3"]}),
        )
        .await;
    assert_eq!(texts(&r), ["out\n", "[stderr]\nerr\n", "[exit code 3]"]);

    // The writing tools and the schema lookup: their structured value, as JSON.
    s.call_json(
        "file_system.write",
        json!({"path": "new.txt", "content": "a"}),
    )
    .await;
    s.call_json(
        "file_system.edit",
        json!({"path": "new.txt", "old_string": "a", "new_string": "b"}),
    )
    .await;
    s.call_json("file_system.make_directory", json!({"path": "d"}))
        .await;
    s.call_json(
        "file_system.move",
        json!({"source": "new.txt", "destination": "d/new.txt"}),
    )
    .await;
    s.call_json(
        "codomyrmex.get_tool_schema",
        json!({"tool_name": "git.diff"}),
    )
    .await;

    let r = s.call("codomyrmex.list_registered_tools", json!({})).await;
    let names: Vec<String> =
        serde_json::from_value(r["structuredContent"]["tools"].clone()).unwrap();
    assert_eq!(texts(&r), [format!("{}\n", names.join("\n"))]);

    // Every built-in tool was looked at.
    let all: BTreeSet<String> = names.into_iter().collect();
    assert_eq!(s.called, all);
    s.child.kill().await.unwrap();
}

/// Every built-in declares an output schema, and MCP clients validate `structuredContent`
/// against it, so a failure carries its `McpErrorDetail` as text only.
#[tokio::test]
async fn a_builtin_failure_is_text_with_is_error_and_no_structured_content() {
    let dir = repository();
    let s = Server::start(dir.path()).await;
    let r = s
        .client
        .call_tool("file_system.read", json!({"path": "missing.txt"}))
        .await
        .unwrap();
    assert_eq!(r["isError"], true, "{r}");
    assert!(r.get("structuredContent").is_none(), "{r}");
    let t = texts(&r);
    assert_eq!(t.len(), 1, "{r}");
    assert!(t[0].starts_with("NOT_FOUND: "), "{r}");
}

/// `resources/list` lists the root's files (not what `.gitignore` excludes, not hidden ones),
/// by relative URI, paged at the server's page size (100), and a listed URI reads.
#[tokio::test]
async fn resources_list_pages_through_the_root_files() {
    let dir = repository();
    std::fs::create_dir_all(dir.path().join("many")).unwrap();
    for i in 0..150 {
        std::fs::write(dir.path().join(format!("many/f{i:03}.txt")), "x").unwrap();
    }
    std::fs::write(dir.path().join("with space.txt"), "spaced").unwrap();
    let mut s = Server::start(dir.path()).await;
    let mut uris = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut pages = 0;
    loop {
        let params = cursor
            .as_ref()
            .map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let r = tokio::time::timeout(HANG_GUARD, s.client.request("resources/list", params))
            .await
            .unwrap()
            .unwrap();
        let items = r["resources"].as_array().unwrap();
        assert!(items.len() <= 100, "{}", items.len());
        for item in items {
            let uri = item["uri"].as_str().unwrap();
            assert!(!item["name"].as_str().unwrap().starts_with('/'), "{item}");
            uris.push(uri.to_owned());
        }
        pages += 1;
        match r.get("nextCursor") {
            Some(c) => cursor = Some(c.clone()),
            None => break,
        }
    }
    assert_eq!(pages, 2);
    assert_eq!(uris.len(), 153, "{uris:?}");
    let mut sorted = uris.clone();
    sorted.sort();
    assert_eq!(sorted, uris);
    for want in [
        "codomyrmex://root/data.json",
        "codomyrmex://root/src/main.rs",
        "codomyrmex://root/many/f149.txt",
        "codomyrmex://root/with%20space.txt",
    ] {
        assert!(uris.iter().any(|u| u == want), "{want} missing: {uris:?}");
    }
    assert!(
        !uris
            .iter()
            .any(|u| u.contains("target/") || u.contains("/.")),
        "{uris:?}"
    );
    let read = s
        .client
        .request(
            "resources/read",
            json!({"uri": "codomyrmex://root/with%20space.txt"}),
        )
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "spaced", "{read}");
    s.child.kill().await.unwrap();
}

/// `serve --stdio` serves stdio even when the configuration file names an HTTP address.
#[tokio::test]
async fn serve_stdio_wins_over_the_files_http_address() {
    let dir = repository();
    let config = dir.path().join("server.toml");
    std::fs::write(&config, "[http]\nlisten = \"127.0.0.1:0\"\n").unwrap();
    let mut s = Server::start_with(dir.path(), &["--config", config.to_str().unwrap()]).await;
    // `start_with` initialised over stdio; a call works too.
    let r = s.call("codomyrmex.list_registered_tools", json!({})).await;
    assert!(!texts(&r).is_empty());
    s.child.kill().await.unwrap();
}
