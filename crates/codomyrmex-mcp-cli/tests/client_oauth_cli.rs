//! `codomyrmex-mcp client --oauth` end to end against a local fake resource and authorization
//! server (the library's `tests/oauth_fake`): the authorization URL on stderr, a "browser"
//! (`$BROWSER`, a script that follows the URL) that lands on the loopback redirect
//! listener, tokens cached in a 0600 file, and a second run that reuses them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../codomyrmex-mcp/tests/oauth_fake/mod.rs"]
mod oauth_fake;

mod support;

use std::path::Path;

use support::{Ran, command, output_async};

/// `client --http URL --oauth --token-file TOKENS ARGS... --era legacy --timeout 30 tools`,
/// with `$BROWSER` set to `browser` and the variables `env`.
async fn client(
    url: &str,
    tokens: &Path,
    args: &[&str],
    browser: &Path,
    env: &[(&str, &str)],
) -> Ran {
    let mut c = command(&["client", "--http", url, "--oauth", "--token-file"]);
    c.arg(tokens)
        .args(args)
        .args(["--era", "legacy", "--timeout", "30", "tools"])
        .env("BROWSER", browser)
        .envs(env.iter().copied());
    output_async(c).await
}

/// Asserts that the run succeeded.
fn assert_ok(r: &Ran) {
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
}

/// Asserts that the run succeeded and listed the fake server's tool.
fn assert_listed(r: &Ran) {
    assert_ok(r);
    assert!(r.stdout.contains("fake-tool"), "{}", r.stdout);
}

/// [`assert_listed`], and no authorization URL was printed: no browser was needed.
fn assert_listed_with_no_browser(r: &Ran) {
    assert_listed(r);
    assert!(
        !r.stderr.contains("/authorize?"),
        "no browser: {}",
        r.stderr
    );
}

/// Asserts that the run was refused as a usage error (status 2) whose message has every one
/// of `needles`.
fn assert_refused(r: &Ran, needles: &[&str]) {
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    for needle in needles {
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
    }
}

/// `@PATH`, how the flags that take a secret name its file.
fn at(path: &Path) -> String {
    format!("@{}", path.display())
}

#[tokio::test]
async fn oauth_through_the_browser_and_the_loopback_listener_then_from_the_cache() {
    let (url, fake) = oauth_fake::start(3600, true).await;
    let dir = tempfile::tempdir().unwrap();
    let browser = file(
        dir.path(),
        "browser",
        "#!/bin/sh\nexec python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1]).read()' \"$1\"\n",
        0o755,
    );
    let tokens = dir.path().join("cache/tokens.json");

    let first = client(&url, &tokens, &[], &browser, &[]).await;
    assert_listed(&first);
    let Ran { stderr, .. } = first;
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
    let second = client(&url, &tokens, &[], &no_browser, &[]).await;
    assert_listed(&second);
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

/// [`client`] with no browser (`/bin/false`).
async fn run(url: &str, tokens: &Path, args: &[&str]) -> Ran {
    run_env(url, tokens, args, &[]).await
}

/// [`run`] with the environment variables `env` set.
async fn run_env(url: &str, tokens: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    client(url, tokens, args, Path::new("/bin/false"), env).await
}

/// `&str`s of `v`.
fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
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
    let assertion = at(&jwt);

    // A key other users can read is refused before anything is sent, as ssh does.
    let with_key = |key: &Path| {
        [
            "--oauth-client-id",
            "cli-1",
            "--oauth-private-key",
            key.to_str().unwrap(),
            "--oauth-jwt-assertion",
            &assertion,
        ]
        .map(str::to_owned)
    };
    let open_key = file(dir.path(), "open.pem", CLIENT_KEY, 0o644);
    let r = run(&url, &tokens, &strs(&with_key(&open_key))).await;
    assert_refused(&r, &["chmod 600"]);
    // A key that is not an ES256 one says what it takes.
    let sec1 = file(
        dir.path(),
        "sec1.pem",
        "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
        0o600,
    );
    let r = run(&url, &tokens, &strs(&with_key(&sec1)[..4])).await;
    assert_refused(&r, &["PKCS#8", "ES256"]);
    // The assertion is a file: a JWT on the command line would be visible to other users.
    let r = run(
        &url,
        &tokens,
        &["--oauth-jwt-assertion", oauth_fake::WORKLOAD_JWT],
    )
    .await;
    assert_refused(&r, &["@FILE"]);
    assert!(fake.lock().unwrap().grants.is_empty(), "nothing was asked");

    let key = file(dir.path(), "client.pem", CLIENT_KEY, 0o600);
    let r = run(&url, &tokens, &strs(&with_key(&key))).await;
    assert_listed_with_no_browser(&r);
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
    let r = run(
        &url,
        &tokens,
        &[
            "--oauth-id-token",
            &at(&id_token),
            "--oauth-idp-token-endpoint",
            &format!("{base}/idp/token"),
            "--oauth-idp-client-id",
            "idp-client",
        ],
    )
    .await;
    assert_listed(&r);
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
    let assertion = at(&jwt);
    let key = file(dir.path(), "dpop.pem", DPOP_KEY, 0o600);
    let tokens = dir.path().join("tokens.json");
    let with_key = [
        "--oauth-jwt-assertion",
        assertion.as_str(),
        "--dpop-key",
        key.to_str().unwrap(),
    ];
    for run_no in 0..2 {
        let r = run(&url, &tokens, &with_key).await;
        assert_eq!(r.code, Some(0), "run {run_no}: {}\n{}", r.stdout, r.stderr);
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
    let r = run(
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
    assert_refused(&r, &["chmod 600"]);
    // --no-dpop: a plain bearer token, even from a server that offers DPoP.
    let r = run(
        &url,
        &dir.path().join("t3.json"),
        &["--oauth-jwt-assertion", &assertion, "--no-dpop"],
    )
    .await;
    assert_ok(&r);
    let f = fake.lock().unwrap();
    assert_eq!(f.token_dpop, [true, false]);
    assert_eq!(
        f.schemes.last().cloned().flatten().as_deref(),
        Some("Bearer")
    );
}

#[tokio::test]
async fn client_credentials_with_a_secret_file_sent_as_the_metadata_allows() {
    let (url, fake) = oauth_fake::start(3600, true).await;
    let dir = tempfile::tempdir().unwrap();
    let m2m = |secret: &Path| {
        vec![
            "--oauth-grant".to_owned(),
            "client-credentials".to_owned(),
            "--oauth-client-id".to_owned(),
            oauth_fake::M2M_CLIENT_ID.to_owned(),
            "--oauth-client-secret-file".to_owned(),
            secret.to_str().unwrap().to_owned(),
        ]
    };

    // A secret file other users can read is refused before anything is sent.
    let open = file(
        dir.path(),
        "open.secret",
        &format!("{}\n", oauth_fake::M2M_SECRET),
        0o640,
    );
    let t0 = dir.path().join("t0.json");
    let r = run(&url, &t0, &strs(&m2m(&open))).await;
    assert_refused(&r, &["chmod 600"]);
    // The grant authenticates the client: without a secret or a key it says what to give.
    let r = run(&url, &t0, &strs(&m2m(&open)[..4])).await;
    assert_refused(
        &r,
        &[
            "--oauth-client-secret-file",
            "CODOMYRMEX_MCP_OAUTH_CLIENT_SECRET",
        ],
    );
    // And it needs the client's id.
    let r = run(&url, &t0, &strs(&m2m(&open)[..2])).await;
    assert_refused(&r, &["--oauth-client-id"]);
    assert!(fake.lock().unwrap().grants.is_empty(), "nothing was asked");

    // The metadata lists neither secret method: client_secret_post, the secret in the form.
    let secret = file(
        dir.path(),
        "m2m.secret",
        &format!("{}\n", oauth_fake::M2M_SECRET),
        0o600,
    );
    let r = run(&url, &dir.path().join("t1.json"), &strs(&m2m(&secret))).await;
    assert_listed_with_no_browser(&r);
    {
        let f = fake.lock().unwrap();
        assert_eq!(f.grants, ["client_credentials"]);
        assert_eq!(f.registrations, 0, "the client id was given");
        assert!(f.authorizations.is_empty(), "no user");
        assert_eq!(f.forms[0]["client_id"], oauth_fake::M2M_CLIENT_ID);
        assert_eq!(
            f.forms[0]["client_secret"],
            oauth_fake::M2M_SECRET,
            "trimmed"
        );
        assert_eq!(f.token_authorization, [None]);
    }

    // The metadata lists client_secret_basic: the secret goes in the Authorization header.
    fake.lock().unwrap().auth_methods = Some(vec!["client_secret_basic", "client_secret_post"]);
    let r = run(&url, &dir.path().join("t2.json"), &strs(&m2m(&secret))).await;
    assert_ok(&r);
    let f = fake.lock().unwrap();
    assert_eq!(f.grants, ["client_credentials", "client_credentials"]);
    assert!(
        !f.forms[1].contains_key("client_secret"),
        "{:?}",
        f.forms[1]
    );
    let basic = f.token_authorization[1].as_deref().unwrap();
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(basic.strip_prefix("Basic ").unwrap())
        .unwrap();
    assert_eq!(
        String::from_utf8(decoded).unwrap(),
        format!("{}:{}", oauth_fake::M2M_CLIENT_ID, oauth_fake::M2M_SECRET)
    );
}

#[tokio::test]
async fn client_secrets_from_the_environment_and_the_idps_secret_from_a_file() {
    let (url, fake) = oauth_fake::start(3600, true).await;
    let base = fake.lock().unwrap().base.clone();
    let dir = tempfile::tempdir().unwrap();
    let secret_env = [("CODOMYRMEX_MCP_OAUTH_CLIENT_SECRET", oauth_fake::M2M_SECRET)];

    // The environment's secret, with the client credentials grant.
    let r = run_env(
        &url,
        &dir.path().join("t1.json"),
        &[
            "--oauth-grant",
            "client-credentials",
            "--oauth-client-id",
            oauth_fake::M2M_CLIENT_ID,
        ],
        &secret_env,
    )
    .await;
    assert_ok(&r);
    assert_eq!(fake.lock().unwrap().grants, ["client_credentials"]);
    assert_eq!(
        fake.lock().unwrap().forms[0]["client_secret"],
        oauth_fake::M2M_SECRET
    );
    // A secret with no client id to go with it is a mistake, said so.
    let r = run_env(&url, &dir.path().join("t2.json"), &[], &secret_env).await;
    assert_refused(
        &r,
        &["CODOMYRMEX_MCP_OAUTH_CLIENT_SECRET", "--oauth-client-id"],
    );

    // The IdP's client secret, from a 0600 file: sent to the IdP with client_secret_basic.
    let id_token = file(dir.path(), "id.jwt", oauth_fake::ID_TOKEN, 0o600);
    let idp_secret = file(dir.path(), "idp.secret", "idp-secret-1\n", 0o600);
    let idp_args = |secret: Option<&Path>| {
        let mut a = vec![
            "--oauth-id-token".to_owned(),
            at(&id_token),
            "--oauth-idp-token-endpoint".to_owned(),
            format!("{base}/idp/token"),
            "--oauth-idp-client-id".to_owned(),
            "idp-client".to_owned(),
        ];
        if let Some(s) = secret {
            a.push("--oauth-idp-client-secret-file".to_owned());
            a.push(s.to_str().unwrap().to_owned());
        }
        a
    };
    let args = idp_args(Some(&idp_secret));
    let r = run(&url, &dir.path().join("t3.json"), &strs(&args)).await;
    assert_ok(&r);
    // And from the environment.
    let args = idp_args(None);
    let r = run_env(
        &url,
        &dir.path().join("t4.json"),
        &strs(&args),
        &[("CODOMYRMEX_MCP_OAUTH_IDP_CLIENT_SECRET", "idp-secret-2")],
    )
    .await;
    assert_ok(&r);
    let f = fake.lock().unwrap();
    use base64::Engine as _;
    let basic = |s: &str| {
        Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("idp-client:{s}"))
        ))
    };
    assert_eq!(
        f.idp_authorization,
        [basic("idp-secret-1"), basic("idp-secret-2")]
    );
}
