//! `client --oauth`: the command-line client's OAuth setup. Tokens are cached in a 0600 file
//! ([`FileTokenStore`]; `--token-file`, by default `codomyrmex-mcp/oauth-tokens.json` under
//! `$XDG_CONFIG_HOME` or `~/.config`), so later runs reuse and refresh them. When the
//! server asks for authorization, the URL is printed on stderr and opened with `$BROWSER`
//! or `xdg-open` when there is one; a loopback listener on a free port
//! ([`LoopbackRedirect`]) receives the code.
//!
//! Not a browser and not a keychain: the login itself happens in the user's browser.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::client::oauth::OAuthConfig;
use codomyrmex_mcp::client::oauth_loopback::LoopbackRedirect;
use codomyrmex_mcp::client::token_file::FileTokenStore;

/// The default token file, if a config directory can be named.
pub fn default_token_file() -> Option<PathBuf> {
    token_file_under(
        std::env::var_os("XDG_CONFIG_HOME"),
        std::env::var_os("HOME"),
    )
}

/// `codomyrmex-mcp/oauth-tokens.json` under `$XDG_CONFIG_HOME`, else under `$HOME/.config`.
fn token_file_under(xdg_config_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let base = xdg_config_home
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            home.filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(base.join("codomyrmex-mcp").join("oauth-tokens.json"))
}

/// The OAuth configuration of `client --oauth`: tokens in `token_file`, the loopback redirect
/// listener waiting at most `wait` for the browser. Needs a tokio runtime.
pub fn config(token_file: Option<PathBuf>, wait: Duration) -> Result<OAuthConfig, String> {
    let path = token_file
        .or_else(default_token_file)
        .ok_or("no place for the token file: give --token-file (HOME is not set)")?;
    let loopback = LoopbackRedirect::bind()
        .map_err(|e| format!("cannot listen for the OAuth redirect on 127.0.0.1: {e}"))?;
    let mut config = OAuthConfig::new(loopback.redirect_uri());
    config.store = Arc::new(FileTokenStore::new(path));
    config.user_agent = Some(loopback.user_agent(show, wait));
    Ok(config)
}

/// Prints the authorization URL and opens it in a browser when there is one to open.
fn show(url: &str) {
    eprintln!("codomyrmex-mcp client: authorize in your browser:\n  {url}");
    let opener = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .or_else(|| on_path("xdg-open").then(|| "xdg-open".to_owned()));
    let Some(opener) = opener else {
        return;
    };
    match Command::new(&opener)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        // Reaped in the background; the browser may outlive the wait.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => eprintln!("codomyrmex-mcp client: cannot start {opener}: {e}"),
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_token_file_follows_xdg_then_home() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            token_file_under(os("/x"), os("/h")),
            Some(PathBuf::from("/x/codomyrmex-mcp/oauth-tokens.json"))
        );
        assert_eq!(
            token_file_under(os(""), os("/h")),
            Some(PathBuf::from("/h/.config/codomyrmex-mcp/oauth-tokens.json"))
        );
        assert_eq!(token_file_under(None, None), None);
    }
}
