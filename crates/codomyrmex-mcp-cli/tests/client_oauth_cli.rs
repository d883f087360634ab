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
