//! `codomyrmex-mcp client --oauth` end to end against a local fake resource and authorization
//! server (the library's `tests/oauth_fake`): the authorization URL on stderr, a "browser"
//! (`$BROWSER`, a script that follows the URL) that lands on the loopback redirect
//! listener, tokens cached in a 0600 file, and a second run that reuses them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../codomyrmex-mcp/tests/oauth_fake/mod.rs"]
mod oauth_fake;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_codomyrmex-mcp");
const HANG: Duration = Duration::from_secs(60);

async fn client(url: &str, token_file: &Path, browser: &Path) -> Output {
    let mut c = tokio::process::Command::new(BIN);
    c.args(["client", "--http", url, "--oauth", "--token-file"])
        .arg(token_file)
        .args(["--era", "legacy", "--timeout", "30", "tools"])
        .env("BROWSER", browser)
        .kill_on_drop(true);
    for (k, _) in std::env::vars() {
        if k.starts_with("CODOMYRMEX_MCP_") {
            c.env_remove(k);
        }
    }
    tokio::time::timeout(HANG, c.output())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn oauth_through_the_browser_and_the_loopback_listener_then_from_the_cache() {
    let (url, fake) = oauth_fake::start(3600, true).await;
    let dir = tempfile::tempdir().unwrap();
    let browser = dir.path().join("browser");
    std::fs::write(
        &browser,
        "#!/bin/sh\nexec python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1]).read()' \"$1\"\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let tokens = dir.path().join("cache/tokens.json");

    let first = client(&url, &tokens, &browser).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr),
    );
    assert_eq!(first.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("fake-tool"), "{stdout}");
    assert!(
        stderr.contains("/authorize?"),
        "the URL is printed: {stderr}"
    );
    assert!(
        stderr.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"),
        "a loopback redirect: {stderr}"
    );
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    assert!(
        std::fs::read_to_string(&tokens)
            .unwrap()
            .contains("access-1")
    );

    // The second run uses the cached token: no browser, no new authorization.
    let no_browser = dir.path().join("no-browser");
    std::fs::write(&no_browser, "#!/bin/sh\nexit 1\n").unwrap();
    let second = client(&url, &tokens, &no_browser).await;
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(String::from_utf8_lossy(&second.stdout).contains("fake-tool"));
    let f = fake.lock().unwrap();
    assert_eq!(f.authorizations.len(), 1, "authorized once");
    assert_eq!(f.grants, ["authorization_code"]);
}

/// A P-256 key in PKCS#8 PEM (`openssl genpkey -algorithm EC -pkeyopt
/// ec_paramgen_curve:P-256`), made for these tests.
const CLIENT_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgXYvTWgOul4N8lgjc
7RXveQ6iSYz0LYWAScYvSBwETHmhRANCAARpMMJ5ldCD0vVUB5oFqotEsuJttqgT
iT5s+/xbN9gjxvyhJG2dJsZ5t0l32mzKqDDR5kgfqL7/RBGVXMT9eZkh
-----END PRIVATE KEY-----
";
/// Another, for DPoP.
const DPOP_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgrG58wjPYp+nLnuUW
k35Uv4C+ufGXm0dfJePV6i3SeyWhRANCAART91gi34GJ1ywnUa/oPbFGofAIqwg0
B3alraxypVGiNJKFD961H4APMlJTajzQ/Gk0bUnhF8G0Tx15Sp33vVBD
-----END PRIVATE KEY-----
";

/// Writes `text` to `dir/name` with `mode`.
fn file(dir: &Path, name: &str, text: &str, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// `client --http URL --oauth --token-file TOKENS ARGS... --era legacy tools`, no browser.
async fn run(url: &str, tokens: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut c = tokio::process::Command::new(BIN);
    c.args(["client", "--http", url, "--oauth", "--token-file"])
        .arg(tokens)
        .args(args)
        .args(["--era", "legacy", "--timeout", "30", "tools"])
        .env("BROWSER", "/bin/false")
        .kill_on_drop(true);
    for (k, _) in std::env::vars() {
        if k.starts_with("CODOMYRMEX_MCP_") {
            c.env_remove(k);
        }
    }
    let out = tokio::time::timeout(HANG, c.output())
        .await
        .unwrap()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The JSON of a JWT's part `n` (0 the header, 1 the claims).
fn jwt_part(jwt: &str, n: usize) -> serde_json::Value {
    use base64::Engine as _;
    let part = jwt.split('.').nth(n).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn private_key_jwt_with_a_pre_registered_client_and_the_jwt_bearer_grant() {
    let (url, fake) = oauth_fake::start(3600, true).await;
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let jwt = file(
        dir.path(),
        "workload.jwt",
        &format!("{}\n", oauth_fake::WORKLOAD_JWT),
        0o644,
    );
    let assertion = format!("@{}", jwt.display());

    // A key other users can read is refused before anything is sent, as ssh does.
    let open_key = file(dir.path(), "open.pem", CLIENT_KEY, 0o644);
    let (code, _, stderr) = run(
        &url,
        &tokens,
        &[
            "--oauth-client-id",
            "cli-1",
            "--oauth-private-key",
            open_key.to_str().unwrap(),
            "--oauth-jwt-assertion",
            &assertion,
        ],
    )
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("chmod 600"), "{stderr}");
    // A key that is not an ES256 one says what it takes.
    let sec1 = file(
        dir.path(),
        "sec1.pem",
        "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
        0o600,
    );
    let (code, _, stderr) = run(
        &url,
        &tokens,
        &[
            "--oauth-client-id",
            "cli-1",
            "--oauth-private-key",
            sec1.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("PKCS#8") && stderr.contains("ES256"),
        "{stderr}"
    );
    // The assertion is a file: a JWT on the command line would be visible to other users.
    let (code, _, stderr) = run(
        &url,
        &tokens,
        &["--oauth-jwt-assertion", oauth_fake::WORKLOAD_JWT],
    )
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("@FILE"), "{stderr}");
    assert!(fake.lock().unwrap().grants.is_empty(), "nothing was asked");

    let key = file(dir.path(), "client.pem", CLIENT_KEY, 0o600);
    let (code, stdout, stderr) = run(
        &url,
        &tokens,
        &[
            "--oauth-client-id",
            "cli-1",
            "--oauth-private-key",
            key.to_str().unwrap(),
            "--oauth-jwt-assertion",
            &assertion,
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("fake-tool"), "{stdout}");
    assert!(!stderr.contains("/authorize?"), "no browser: {stderr}");
    let f = fake.lock().unwrap();
    assert_eq!(f.grants, ["urn:ietf:params:oauth:grant-type:jwt-bearer"]);
    assert_eq!(f.registrations, 0, "the client id was given");
    let form = &f.forms[0];
    assert_eq!(
        form["assertion"],
        oauth_fake::WORKLOAD_JWT,
        "the file's JWT, trimmed"
    );
    assert_eq!(
        form["client_assertion_type"],
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    );
    let header = jwt_part(&form["client_assertion"], 0);
    assert_eq!(header["alg"], "ES256", "{header}");
    let claims = jwt_part(&form["client_assertion"], 1);
    assert_eq!(
        (claims["iss"].as_str(), claims["sub"].as_str()),
        (Some("cli-1"), Some("cli-1")),
        "{claims}"
    );
    assert_eq!(claims["aud"].as_str(), Some(f.base.as_str()), "{claims}");
}

#[tokio::test]
async fn enterprise_managed_authorization_exchanges_the_id_token_at_the_idp() {
    let (url, fake) = oauth_fake::start(3600, true).await;
    let base = fake.lock().unwrap().base.clone();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let id_token = file(dir.path(), "id.jwt", oauth_fake::ID_TOKEN, 0o600);
    let (code, stdout, stderr) = run(
        &url,
        &tokens,
        &[
            "--oauth-id-token",
            &format!("@{}", id_token.display()),
            "--oauth-idp-token-endpoint",
            &format!("{base}/idp/token"),
            "--oauth-idp-client-id",
            "idp-client",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("fake-tool"), "{stdout}");
    let f = fake.lock().unwrap();
    let exchange = &f.forms[0];
    assert_eq!(
        exchange["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(exchange["subject_token"], oauth_fake::ID_TOKEN);
    assert_eq!(exchange["client_id"], "idp-client");
    assert_eq!(exchange["audience"], base);
    assert_eq!(
        f.forms[1]["assertion"],
        oauth_fake::ID_JAG,
        "the ID-JAG redeemed"
    );
    assert_eq!(f.grants, ["urn:ietf:params:oauth:grant-type:jwt-bearer"]);
}

#[tokio::test]
async fn dpop_bound_tokens_with_a_kept_key_are_reused_and_no_dpop_turns_it_off() {
    let (url, fake) = oauth_fake::start(3600, true).await;
    fake.lock().unwrap().dpop = true;
    let dir = tempfile::tempdir().unwrap();
    let jwt = file(dir.path(), "workload.jwt", oauth_fake::WORKLOAD_JWT, 0o600);
    let assertion = format!("@{}", jwt.display());
    let key = file(dir.path(), "dpop.pem", DPOP_KEY, 0o600);
    let tokens = dir.path().join("tokens.json");
    let with_key = [
        "--oauth-jwt-assertion",
        assertion.as_str(),
        "--dpop-key",
        key.to_str().unwrap(),
    ];
    for run_no in 0..2 {
        let (code, stdout, stderr) = run(&url, &tokens, &with_key).await;
        assert_eq!(code, Some(0), "run {run_no}: {stdout}\n{stderr}");
    }
    {
        let f = fake.lock().unwrap();
        assert_eq!(
            f.token_dpop,
            [true],
            "one token request, with a proof: the second run reused the DPoP-bound token"
        );
        assert!(
            f.schemes.iter().flatten().all(|s| s == "DPoP"),
            "{:?}",
            f.schemes
        );
        assert!(f.schemes.iter().flatten().count() >= 2, "{:?}", f.schemes);
    }
    // A DPoP key other users can read is refused.
    let open_key = file(dir.path(), "open.pem", DPOP_KEY, 0o640);
    let (code, _, stderr) = run(
        &url,
        &dir.path().join("t2.json"),
        &[
            "--oauth-jwt-assertion",
            &assertion,
            "--dpop-key",
            open_key.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("chmod 600"), "{stderr}");
    // --no-dpop: a plain bearer token, even from a server that offers DPoP.
    let (code, stdout, stderr) = run(
        &url,
        &dir.path().join("t3.json"),
        &["--oauth-jwt-assertion", &assertion, "--no-dpop"],
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let f = fake.lock().unwrap();
    assert_eq!(f.token_dpop, [true, false]);
    assert_eq!(
        f.schemes.last().cloned().flatten().as_deref(),
        Some("Bearer")
    );
}
