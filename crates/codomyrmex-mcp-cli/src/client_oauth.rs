//! `client --oauth`: the command-line client's OAuth setup. Tokens are cached in a 0600 file
//! ([`FileTokenStore`]; `--token-file`, by default `codomyrmex-mcp/oauth-tokens.json` under
//! `$XDG_CONFIG_HOME` or `~/.config`), so later runs reuse and refresh them. When the
//! server asks for authorization, the URL is printed on stderr and opened with `$BROWSER`
//! or `xdg-open` when there is one; a loopback listener on a free port
//! ([`LoopbackRedirect`]) receives the code.
//!
//! The grants and client authentication without a browser come from flags too: a
//! pre-registered client id (`--oauth-client-id`), `private_key_jwt` with a key file
//! (`--oauth-private-key`), the JWT bearer grant with a workload's JWT
//! (`--oauth-jwt-assertion @FILE`) or enterprise-managed authorization (`--oauth-id-token
//! @FILE` exchanged at `--oauth-idp-token-endpoint`), and DPoP (`--dpop-key`, `--no-dpop`).
//! A client secret comes from a file (`--oauth-client-secret-file`, the IdP's
//! `--oauth-idp-client-secret-file`) or the environment ([`CLIENT_SECRET_ENV`],
//! [`IDP_CLIENT_SECRET_ENV`]), never from a flag's value, and `--oauth-grant
//! client-credentials` gets the client's own tokens with it (or with `private_key_jwt`).
//! Key and secret files are refused when other users may read them, as ssh refuses them; JWT files are
//! read at each token request, since workloads' tokens are rotated.
//!
//! Not a browser and not a keychain: the login itself happens in the user's browser.

use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::client::oauth::{
    Dpop, EnterpriseIdp, Es256Key, JwtBearer, JwtSource, OAuthConfig,
};
use codomyrmex_mcp::client::oauth_loopback::LoopbackRedirect;
use codomyrmex_mcp::client::token_file::FileTokenStore;

use crate::cli::{ClientArgs, OAuthGrant};

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

/// The largest key or JWT file read.
const MAX_CREDENTIAL_BYTES: u64 = 64 << 10;

/// The OAuth configuration of `client --oauth`: tokens in `--token-file`, the grant, client
/// authentication and DPoP key its flags name, the loopback redirect listener waiting at
/// most `wait` for the browser. Every file is read (and checked) here, before any request.
/// Needs a tokio runtime.
pub fn config(args: &ClientArgs, wait: Duration) -> Result<OAuthConfig, String> {
    let path = args
        .token_file
        .clone()
        .or_else(default_token_file)
        .ok_or("no place for the token file: give --token-file (HOME is not set)")?;
    let loopback = LoopbackRedirect::bind()
        .map_err(|e| format!("cannot listen for the OAuth redirect on 127.0.0.1: {e}"))?;
    let mut config = OAuthConfig::new(loopback.redirect_uri());
    config.store = Arc::new(FileTokenStore::new(path));
    config.user_agent = Some(loopback.user_agent(show, wait));
    config.client_id.clone_from(&args.oauth_client_id);
    config.client_secret = secret(
        "--oauth-client-secret-file",
        args.oauth_client_secret_file.as_deref(),
        CLIENT_SECRET_ENV,
    )?;
    if config.client_secret.is_some() && config.client_id.is_none() {
        return Err(format!(
            "${CLIENT_SECRET_ENV} is set: it is the secret of the client --oauth-client-id names; give that too, or unset it"
        ));
    }
    if let Some(key) = &args.oauth_private_key {
        config.client_key = Some(es256_key(key)?);
    }
    if args.oauth_grant == Some(OAuthGrant::ClientCredentials) {
        if config.client_secret.is_none() && config.client_key.is_none() {
            return Err(format!(
                "--oauth-grant client-credentials authenticates the client: give \
                 --oauth-client-secret-file FILE (or ${CLIENT_SECRET_ENV}) or --oauth-private-key FILE"
            ));
        }
        config.client_credentials = true;
    }
    if let Some(file) = &args.oauth_jwt_assertion {
        config.jwt_bearer = Some(JwtBearer::Assertion(jwt_file(
            "--oauth-jwt-assertion",
            file,
        )?));
    }
    if let (Some(file), Some(token_endpoint), Some(client_id)) = (
        &args.oauth_id_token,
        &args.oauth_idp_token_endpoint,
        &args.oauth_idp_client_id,
    ) {
        config.jwt_bearer = Some(JwtBearer::Enterprise(EnterpriseIdp {
            token_endpoint: token_endpoint.clone(),
            client_id: client_id.clone(),
            client_secret: secret(
                "--oauth-idp-client-secret-file",
                args.oauth_idp_client_secret_file.as_deref(),
                IDP_CLIENT_SECRET_ENV,
            )?,
            id_token: jwt_file("--oauth-id-token", file)?,
        }));
    }
    if args.no_dpop {
        config.dpop = None;
    } else if let Some(key) = &args.dpop_key {
        config.dpop = Some(Arc::new(Dpop::with_key(es256_key(key)?)));
    }
    Ok(config)
}

/// The environment variable holding the client secret when `--oauth-client-secret-file` is
/// not given.
pub const CLIENT_SECRET_ENV: &str = "CODOMYRMEX_MCP_OAUTH_CLIENT_SECRET";
/// The environment variable holding the client secret at the IdP when
/// `--oauth-idp-client-secret-file` is not given.
pub const IDP_CLIENT_SECRET_ENV: &str = "CODOMYRMEX_MCP_OAUTH_IDP_CLIENT_SECRET";

/// A client secret: the first line of `file` (only its owner may read it), else the
/// environment variable `var` when it is set and not empty, else none.
fn secret(flag: &str, file: Option<&Path>, var: &str) -> Result<Option<String>, String> {
    if let Some(path) = file {
        let text = read_credential(path, true)?;
        let secret = text.trim();
        if secret.is_empty() || secret.contains(['\r', '\n']) {
            return Err(format!(
                "{flag} {}: give a file holding the secret alone, on one line",
                path.display()
            ));
        }
        return Ok(Some(secret.to_owned()));
    }
    Ok(std::env::var(var)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty()))
}

/// An ES256 key from a PKCS#8 PEM file only its owner can read.
fn es256_key(path: &Path) -> Result<Es256Key, String> {
    let pem = read_credential(path, true)?;
    Es256Key::from_pkcs8_pem(&pem, "ES256").map_err(|e| {
        format!(
            "{}: {e}; give a PKCS#8 PEM EC P-256 key, signed with ES256 (`openssl genpkey \
             -algorithm EC -pkeyopt ec_paramgen_curve:P-256`; `openssl pkcs8 -topk8 -nocrypt` \
             converts an `EC PRIVATE KEY`)",
            path.display()
        )
    })
}

/// `@FILE` as a source of a JWT: read (and checked) now, then again at each use.
fn jwt_file(flag: &str, value: &str) -> Result<JwtSource, String> {
    let path = value.strip_prefix('@').filter(|p| !p.is_empty()).ok_or_else(|| {
        format!("{flag} takes @FILE, a file holding the JWT: a JWT on the command line is visible to other local users")
    })?;
    let path = PathBuf::from(path);
    let read = move || {
        let text = read_credential(&path, false)?;
        let jwt = text.trim();
        if jwt.is_empty() {
            return Err(format!("{} is empty", path.display()));
        }
        Ok(jwt.to_owned())
    };
    read()?;
    Ok(Arc::new(read))
}

/// A credential file's text, at most [`MAX_CREDENTIAL_BYTES`]; with `private`, refused when
/// its group or other users may read it.
fn read_credential(path: &Path, private: bool) -> Result<String, String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = file
            .metadata()
            .map_err(|e| format!("cannot read {shown}: {e}"))?
            .permissions()
            .mode()
            & 0o777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "{shown} can be read by other users (mode {mode:04o}): chmod 600 {shown}"
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut text = String::new();
    file.take(MAX_CREDENTIAL_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if text.len() as u64 > MAX_CREDENTIAL_BYTES {
        return Err(format!("{shown} is larger than 64 KiB: not a key or a JWT"));
    }
    Ok(text)
}

/// Prints the authorization URL (the authorization server's endpoint: inert, like all a
/// peer's text) and opens it in a browser when there is one to open.
fn show(url: &str) {
    eprintln!(
        "codomyrmex-mcp client: authorize in your browser:\n  {}",
        codomyrmex_mcp::util::inert_text(url)
    );
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
