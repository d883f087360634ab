//! Authorization policies (issue #31, item 1) over Streamable HTTP, in both eras, against
//! `serve` and against the gateway in front of `serve`: four callers holding different JWTs
//! (signed here with a key whose JWKS the server reads), matched by subject, by claim, by
//! scope, and by nothing. Each sees only what its rules allow, in `tools/list`,
//! `resources/list`, `resources/templates/list` and `prompts/list`, and is refused the rest
//! in `tools/call`, `resources/read`, `prompts/get`, `completion/complete` and task-augmented
//! calls, with errors that name no policy. `/metrics` counts the refusals per principal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use base64::Engine as _;
use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::{ClientOptions, EraPreference, TaskCall};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use support::BIN;

const GUARD: Duration = Duration::from_secs(60);
const ISSUER: &str = "https://issuer.authz.test";
const AUDIENCE: &str = "http://mcp.authz.test/mcp";
const SECRET: &[u8] = b"a test key for authz, 32 bytes or more";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// HMAC-SHA256 (RFC 2104), so the test needs no JWT library.
fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut k = [0u8; 64];
    k[..key.len()].copy_from_slice(key);
    let pad = |b: u8| k.iter().map(|x| x ^ b).collect::<Vec<u8>>();
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .to_vec()
}

/// An HS256 access token for this server with `claims` over the usual ones.
fn token(claims: Value) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut body = json!({"iss": ISSUER, "aud": AUDIENCE, "exp": now + 600, "iat": now});
    for (k, v) in claims.as_object().unwrap() {
        body[k] = v.clone();
    }
    let head = b64(br#"{"alg":"HS256","typ":"JWT","kid":"k1"}"#);
    let signing = format!("{head}.{}", b64(body.to_string().as_bytes()));
    let sig = b64(&hmac(SECRET, signing.as_bytes()));
    format!("{signing}.{sig}")
}

fn write_jwks(dir: &std::path::Path) -> String {
    let path = dir.join("jwks.json");
    let jwks = json!({"keys": [{"kty": "oct", "k": b64(SECRET), "kid": "k1", "alg": "HS256"}]});
    std::fs::write(&path, jwks.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The team: an admin by subject, a docs writer by claim, a prompter by scope.
const POLICIES: &str = r#"
[[policy]]
name = "admin"
subjects = ["alice"]
tools = ["*"]
prompts = ["*"]
resources = ["*"]

[[policy]]
name = "docs"
claims = { team = "docs" }
tools = ["PFX*file_system.read", "PFX*test.sleep"]
resources = ["*codomyrmex://root/docs/*"]

[[policy]]
name = "prompter"
scopes = ["mcp:prompts"]
prompts = ["*codomyrmex.explore"]
"#;

/// The names a server shows (`serve`'s own, or the gateway's with their namespace).
struct Names {
    read: String,
    sleep: Option<String>,
    explore: String,
    docs: String,
    secret: String,
    template: String,
}

impl Names {
    fn of(tool_prefix: &str, uri_prefix: &str, tasks: bool) -> Self {
        Self {
            read: format!("{tool_prefix}file_system.read"),
            sleep: tasks.then(|| format!("{tool_prefix}test.sleep")),
            explore: format!("{tool_prefix}codomyrmex.explore"),
            docs: format!("{uri_prefix}codomyrmex://root/docs/guide.md"),
            secret: format!("{uri_prefix}codomyrmex://root/secret/keys.md"),
            template: format!("{uri_prefix}codomyrmex://root/{{+path}}"),
        }
    }
}

fn root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (path, text) in [
        ("docs/guide.md", "the guide"),
        ("secret/keys.md", "the keys"),
    ] {
        let p = root.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    root
}

async fn connect(url: &str, jwt: &str, era: EraPreference) -> McpClient {
    let mut t = HttpTarget::new(url.to_owned());
    t.token = Some(jwt.to_owned());
    let client = McpClient::connect_http(t, ClientOptions::default()).unwrap();
    tokio::time::timeout(GUARD, client.negotiate(era, GUARD))
        .await
        .unwrap()
        .unwrap();
    client
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, f).await.unwrap()
}

fn names_of(list: &[Value], key: &str) -> Vec<String> {
    let mut v: Vec<String> = list
        .iter()
        .map(|i| i[key].as_str().unwrap_or_default().to_owned())
        .collect();
    v.sort();
    v
}

/// An error that is the same as for a name that does not exist: no word of a policy.
fn refused<T: std::fmt::Debug>(
    r: Result<T, codomyrmex_mcp::client::ClientError>,
    what: &str,
) -> String {
    let e = match r {
        Ok(v) => panic!("{what}: allowed: {v:?}"),
        Err(e) => e.to_string(),
    };
    let lower = e.to_lowercase();
    for word in [
        "policy",
        "denied",
        "forbidden",
        "principal",
        "admin",
        "docs",
        "prompter",
    ] {
        assert!(!lower.contains(word), "{what}: {e}");
    }
    e
}

/// Everything each of the four callers may and may not do, in `era`.
async fn check_team(url: &str, n: &Names, era: EraPreference) {
    let alice = connect(url, &token(json!({"sub": "alice"})), era).await;
    let bob = connect(
        url,
        &token(json!({"sub": "bob", "team": ["dev", "docs"]})),
        era,
    )
    .await;
    let carol = connect(
        url,
        &token(json!({"sub": "carol", "scope": "mcp:prompts"})),
        era,
    )
    .await;
    let dave = connect(url, &token(json!({"sub": "dave", "team": "ops"})), era).await;

    // tools/list: alice everything, bob two tools, carol and dave none.
    let all = names_of(&within(alice.list_tools()).await.unwrap(), "name");
    assert!(all.contains(&n.read) && all.len() > 3, "{all:?}");
    let mut bobs = vec![n.read.clone()];
    bobs.extend(n.sleep.clone());
    bobs.sort();
    assert_eq!(
        names_of(&within(bob.list_tools()).await.unwrap(), "name"),
        bobs
    );
    assert!(within(carol.list_tools()).await.unwrap().is_empty());
    assert!(within(dave.list_tools()).await.unwrap().is_empty());

    // tools/call.
    let args = json!({"path": "docs/guide.md"});
    for c in [&alice, &bob] {
        let r = within(c.call_tool(&n.read, args.clone())).await.unwrap();
        assert!(r.to_string().contains("the guide"), "{r}");
    }
    let missing = refused(
        within(alice.call_tool("no.such_tool", json!({}))).await,
        "unknown",
    );
    for c in [&carol, &dave] {
        let e = refused(within(c.call_tool(&n.read, args.clone())).await, "call");
        assert_eq!(
            e.replace(&n.read, "NAME"),
            missing.replace("no.such_tool", "NAME"),
            "a refused tool looks unknown"
        );
    }
    let other = all
        .iter()
        .find(|t| **t != n.read && Some(*t) != n.sleep.as_ref());
    refused(
        within(bob.call_tool(other.unwrap(), json!({}))).await,
        "bob's other tool",
    );

    // Resources: bob reads and lists docs only; the template is alice's.
    let docs = within(bob.read_resource(&n.docs)).await.unwrap();
    assert!(docs.to_string().contains("the guide"), "{docs}");
    let keys = within(alice.read_resource(&n.secret)).await.unwrap();
    assert!(keys.to_string().contains("the keys"), "{keys}");
    for c in [&bob, &carol, &dave] {
        refused(within(c.read_resource(&n.secret)).await, "secret");
    }
    refused(within(carol.read_resource(&n.docs)).await, "carol's docs");
    let listed = names_of(&within(bob.list_resources()).await.unwrap(), "uri");
    assert_eq!(listed, vec![n.docs.clone()]);
    let alices = names_of(&within(alice.list_resources()).await.unwrap(), "uri");
    assert!(alices.contains(&n.secret), "{alices:?}");
    let templates = names_of(
        &within(alice.list_resource_templates()).await.unwrap(),
        "uriTemplate",
    );
    assert_eq!(templates, vec![n.template.clone()]);
    assert!(
        within(bob.list_resource_templates())
            .await
            .unwrap()
            .is_empty()
    );

    // Prompts: alice and carol.
    for c in [&alice, &carol] {
        let p = within(c.get_prompt(&n.explore, json!({"goal": "tests"}))).await;
        assert!(p.unwrap().to_string().contains("tests"));
        assert_eq!(
            names_of(&within(c.list_prompts()).await.unwrap(), "name"),
            vec![n.explore.clone()]
        );
    }
    for c in [&bob, &dave] {
        refused(within(c.get_prompt(&n.explore, json!({}))).await, "prompt");
        assert!(within(c.list_prompts()).await.unwrap().is_empty());
    }

    // Completion follows the prompt or template it completes.
    let of_prompt = json!({"ref": {"type": "ref/prompt", "name": n.explore},
                           "argument": {"name": "goal", "value": "t"}});
    let of_template = json!({"ref": {"type": "ref/resource", "uri": n.template},
                             "argument": {"name": "path", "value": "d"}});
    for (c, ok) in [
        (&alice, true),
        (&carol, true),
        (&bob, false),
        (&dave, false),
    ] {
        let r = within(c.request("completion/complete", of_prompt.clone())).await;
        if ok {
            assert!(r.unwrap()["completion"]["values"].is_array());
        } else {
            refused(r, "prompt completion");
        }
    }
    assert!(
        within(alice.request("completion/complete", of_template.clone()))
            .await
            .is_ok()
    );
    for c in [&bob, &carol] {
        refused(
            within(c.request("completion/complete", of_template.clone())).await,
            "template completion",
        );
    }

    // Tasks follow the tool that starts them.
    if let Some(sleep) = &n.sleep {
        let args = json!({"seconds": 0});
        let started = within(bob.call_tool_as_task(sleep, args.clone(), None))
            .await
            .unwrap();
        assert!(matches!(started, TaskCall::Task(_) | TaskCall::Done(_)));
        refused(
            within(carol.call_tool_as_task(sleep, args, None)).await,
            "carol's task",
        );
    }
    for c in [alice, bob, carol, dave] {
        c.close(Duration::from_secs(5)).await;
    }
}

/// `GET /metrics` with `jwt`.
fn metrics(addr: &str, jwt: &str) -> String {
    support::http_get(addr, "/metrics", Some(jwt))
}

fn denials(text: &str, principal: &str) -> u64 {
    let needle = format!("mcp_authz_denials_total{{principal=\"{principal}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&needle))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {needle} in {text}"))
}

fn check_metrics(addr: &str) {
    let text = metrics(addr, &token(json!({"sub": "alice"})));
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    for p in ["docs", "prompter", ""] {
        assert!(denials(&text, p) > 0, "{p}: {text}");
    }
    assert_eq!(denials(&text, "admin"), 0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_lets_each_principal_use_only_what_its_rules_allow() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let jwks = write_jwks(dir.path());
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "[http]\njwks = {jwks:?}\nissuer = {ISSUER:?}\naudience = {AUDIENCE:?}\n{}",
            POLICIES.replace("PFX*", "")
        ),
    )
    .unwrap();
    let server = support::serve_http(
        root.path(),
        &["--config", config.to_str().unwrap()],
        &[("CODOMYRMEX_MCP_TEST_TOOLS", "1")],
    );
    let names = Names::of("", "", true);
    check_team(&server.url, &names, EraPreference::Legacy).await;
    check_team(&server.url, &names, EraPreference::Modern).await;
    check_metrics(server.addr());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_lets_each_principal_use_only_what_its_rules_allow() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let jwks = write_jwks(dir.path());
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"files\"\ncommand = {BIN:?}\nargs = [\"serve\", \"--root\", {:?}]\n{}",
            root.path().to_str().unwrap(),
            POLICIES.replace("PFX*", "files.")
        ),
    )
    .unwrap();
    let server = support::http_server(
        &[
            "gateway",
            "--config",
            config.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
            "--jwks",
            &jwks,
            "--issuer",
            ISSUER,
            "--audience",
            AUDIENCE,
        ],
        &[],
    );
    // The gateway mounts tools and prompts as `files.NAME`, resources as `files+URI`; its
    // tools run no tasks.
    let names = Names::of("files.", "files+", false);
    check_team(&server.url, &names, EraPreference::Legacy).await;
    check_team(&server.url, &names, EraPreference::Modern).await;
    check_metrics(server.addr());
}

#[test]
fn gateway_check_prints_what_each_principal_may_use() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"files\"\ncommand = {BIN:?}\nargs = [\"serve\", \"--root\", {:?}]\n{}",
            root.path().to_str().unwrap(),
            POLICIES.replace("PFX*", "files.")
        ),
    )
    .unwrap();
    let ran = support::output(&mut support::command(&[
        "gateway",
        "--check",
        "--config",
        config.to_str().unwrap(),
    ]));
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let out = &ran.stdout;
    let section = |p: &str| {
        let start = out
            .find(&format!("principal {p} may use:\n"))
            .unwrap_or_else(|| panic!("{p}: {out}"));
        let rest = &out[start..];
        let end = rest[1..].find("principal ").map_or(rest.len(), |i| i + 1);
        rest[..end].to_owned()
    };
    let docs = section("docs");
    assert!(docs.contains("tool     files.file_system.read\n"), "{docs}");
    assert!(!docs.contains("files.git."), "{docs}");
    assert!(!docs.contains("template"), "{docs}");
    let prompter = section("prompter");
    assert!(
        prompter.contains("prompt   files.codomyrmex.explore\n") && !prompter.contains("tool "),
        "{prompter}"
    );
    let admin = section("admin");
    assert!(
        admin.contains("files.git.status")
            && admin.contains("template files+codomyrmex://root/{+path}"),
        "{admin}"
    );
}

/// The guide's team examples are the ones these tests run.
#[test]
fn the_guides_team_examples_are_the_tested_ones() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    for (page, prefix) in [("gateway.md", "files."), ("security.md", "")] {
        let text = std::fs::read_to_string(docs.join(page)).unwrap();
        let example = POLICIES.replace("PFX*", prefix);
        assert!(
            text.contains(&format!("```toml{example}```")),
            "docs/{page} no longer shows the tested example:\n{example}"
        );
    }
}
