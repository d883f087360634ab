//! The OAuth options of a Python [`Client`](crate::client::Client) over Streamable HTTP, read
//! into the library's [`OAuthConfig`]: the flows, token endpoint authentication and DPoP are
//! the library's; this only reads the options.
//!
//! `oauth` is a JSON object:
//! - `client_id`, `client_secret`: a pre-registered client (else the client registers itself);
//! - `client_credentials`: `true` for the client credentials grant (needs both of the above);
//! - `token_file`: where tokens are kept across runs (a private file), else in memory;
//! - `client_name`, `client_metadata_url`, `redirect_uri`;
//! - `dpop`: `false` never asks for DPoP-bound tokens;
//! - `wait`: seconds the loopback redirect listener waits for the browser (300 by default).
//!
//! For the authorization code flow, the Python callable `authorize(url)` takes the user
//! through the authorization URL and returns the URL the browser was sent back to
//! (`redirect_uri` is then the one registered). Without it, a listener on `127.0.0.1` takes the
//! redirect and the URL is written to stderr for the user to open.

use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::client::oauth::OAuthConfig;
use codomyrmex_mcp::client::oauth_loopback::LoopbackRedirect;
use codomyrmex_mcp::client::token_file::FileTokenStore;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use serde_json::Value;

use crate::runtime::with_python;

/// How long the loopback listener waits for the browser by default.
const BROWSER_WAIT: Duration = Duration::from_secs(300);

fn text(oauth: &Value, key: &str) -> PyResult<Option<String>> {
    match oauth.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(PyValueError::new_err(format!(
            "oauth {key} must be a string"
        ))),
    }
}

/// The library's configuration for the `oauth` options (see the module docs). Must run
/// inside the runtime (the loopback listener binds here).
pub(crate) fn oauth_config(oauth: &Value, authorize: Option<Py<PyAny>>) -> PyResult<OAuthConfig> {
    if !oauth.is_object() {
        return Err(PyValueError::new_err("oauth must be a dict"));
    }
    let client_credentials = match oauth.get("client_credentials") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(PyValueError::new_err(
                "oauth client_credentials must be a bool",
            ));
        }
    };
    let mut config = match (authorize, client_credentials) {
        (_, true) => OAuthConfig::new(text(oauth, "redirect_uri")?.unwrap_or_default()),
        (Some(authorize), false) => {
            let redirect = text(oauth, "redirect_uri")?.ok_or_else(|| {
                PyValueError::new_err("oauth with authorize needs the redirect_uri it registers")
            })?;
            let mut config = OAuthConfig::new(redirect);
            let authorize = Arc::new(authorize);
            config.user_agent = Some(Arc::new(move |url: String| {
                let authorize = authorize.clone();
                Box::pin(async move {
                    with_python(move |py| authorize.call1(py, (url,))?.extract::<String>(py)).await
                })
            }));
            config
        }
        (None, false) => {
            let wait = match oauth.get("wait").and_then(Value::as_f64) {
                Some(w) if w.is_finite() && w > 0.0 => Duration::from_secs_f64(w),
                Some(w) => {
                    return Err(PyValueError::new_err(format!(
                        "oauth wait must be a positive number of seconds, not {w}"
                    )));
                }
                None => BROWSER_WAIT,
            };
            let loopback = LoopbackRedirect::bind().map_err(|e| {
                PyOSError::new_err(format!(
                    "cannot listen for the OAuth redirect on 127.0.0.1: {e}"
                ))
            })?;
            let mut config = OAuthConfig::new(loopback.redirect_uri());
            config.user_agent = Some(loopback.user_agent(
                |url| eprintln!("codomyrmex_mcp: open this URL to authorize the client: {url}"),
                wait,
            ));
            config
        }
    };
    config.client_id = text(oauth, "client_id")?;
    config.client_secret = text(oauth, "client_secret")?;
    if client_credentials {
        if config.client_id.is_none() || config.client_secret.is_none() {
            return Err(PyValueError::new_err(
                "oauth client_credentials authenticates the client: give client_id and client_secret",
            ));
        }
        config.client_credentials = true;
    }
    if config.client_secret.is_some() && config.client_id.is_none() {
        return Err(PyValueError::new_err(
            "oauth client_secret is the secret of the client client_id names: give that too",
        ));
    }
    if let Some(name) = text(oauth, "client_name")? {
        config.client_name = name;
    }
    config.client_metadata_url = text(oauth, "client_metadata_url")?;
    if let Some(path) = text(oauth, "token_file")? {
        config.store = Arc::new(FileTokenStore::new(path));
    }
    if oauth.get("dpop") == Some(&Value::Bool(false)) {
        config.dpop = None;
    }
    Ok(config)
}
