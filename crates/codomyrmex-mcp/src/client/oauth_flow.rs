//! The OAuth flow as the HTTP transport uses it: the [`Authorizer`] it asks on a `401` (tokens
//! kept, refresh, a new authorization, the headers that present a token, DPoP nonces) and
//! [`Flow`], its implementation over [`oauth`](super::oauth)'s functions and a fetch. No
//! protocol logic of its own beyond which token is DPoP-bound.

use std::sync::{Arc, Mutex};

use super::lock;
use super::oauth::{Challenge, OAuthConfig, Tokens, authorize, refresh};
use super::oauth_fetch::{Fetch, Headers};
use crate::platform::BoxFuture;

/// What the HTTP transport asks when a request is refused: tokens kept for a resource, and
/// a fresh authorization. A trait object, so that a client built without OAuth links none
/// of the flow.
pub(crate) trait Authorizer: Send + Sync {
    /// The tokens kept for `resource_url`.
    fn stored(&self, resource_url: &str) -> Option<Tokens>;
    /// How many re-authorizations one request may make.
    fn max_step_ups(&self) -> usize;
    /// Refreshes the tokens kept for `resource_url`.
    fn refresh(&self, resource_url: String) -> BoxFuture<'static, Result<Tokens, String>>;
    /// Authorizes for `resource_url` after `challenge`.
    fn authorize(
        &self,
        resource_url: String,
        challenge: Challenge,
    ) -> BoxFuture<'static, Result<Tokens, String>>;
    /// The headers that present `token` on a `method` request to `url`: `Authorization:
    /// Bearer`, or for a DPoP-bound token `Authorization: DPoP` and a fresh `DPoP` proof.
    fn credentials(&self, method: &str, url: &str, token: &str) -> Headers;
    /// Keeps a `DPoP-Nonce` the server at `url` sent; whether it is new.
    fn note_nonce(&self, url: &str, nonce: &str) -> bool;
}

/// `Authorization: Bearer TOKEN`.
pub(crate) fn bearer(token: &str) -> Headers {
    vec![("Authorization".into(), format!("Bearer {token}"))]
}

/// The OAuth flow over a fetch: the [`Authorizer`] of [`McpClient::connect_http_oauth`](super::McpClient::connect_http_oauth).
pub(crate) struct Flow {
    config: OAuthConfig,
    fetch: Fetch,
    /// The DPoP-bound access token in use, if the one in use is.
    bound: Arc<Mutex<Option<String>>>,
}

impl Flow {
    pub(crate) fn new(config: OAuthConfig, fetch: Fetch) -> Self {
        Self {
            config,
            fetch,
            bound: Arc::new(Mutex::new(None)),
        }
    }
}

/// Records whether `tokens` are DPoP-bound (to `config`'s key); `None` for tokens bound to
/// another key (a key of an earlier process: they cannot be presented).
fn note_binding(
    config: &OAuthConfig,
    bound: &Mutex<Option<String>>,
    tokens: Tokens,
) -> Option<Tokens> {
    match &tokens.dpop_jkt {
        None => Some(tokens),
        Some(jkt) if config.dpop.as_ref().map(|d| d.thumbprint()).as_ref() == Some(jkt) => {
            *lock(bound) = Some(tokens.access_token.clone());
            Some(tokens)
        }
        Some(_) => None,
    }
}

impl Authorizer for Flow {
    fn stored(&self, resource_url: &str) -> Option<Tokens> {
        let tokens = self.config.store.get(resource_url)?;
        note_binding(&self.config, &self.bound, tokens)
    }

    fn credentials(&self, method: &str, url: &str, token: &str) -> Headers {
        let dpop = self
            .config
            .dpop
            .as_deref()
            .filter(|_| lock(&self.bound).as_deref() == Some(token));
        match dpop.map(|d| d.proof(method, url, Some(token))) {
            Some(Ok(proof)) => vec![
                ("Authorization".into(), format!("DPoP {token}")),
                ("DPoP".into(), proof),
            ],
            // No randomness for a proof: the server refuses the request, and says why.
            Some(Err(_)) | None => bearer(token),
        }
    }

    fn note_nonce(&self, url: &str, nonce: &str) -> bool {
        self.config
            .dpop
            .as_deref()
            .is_some_and(|d| d.note_nonce(url, nonce))
    }

    fn max_step_ups(&self) -> usize {
        self.config.max_step_ups
    }

    fn refresh(&self, resource_url: String) -> BoxFuture<'static, Result<Tokens, String>> {
        let config = self.config.clone();
        let fetch = self.fetch.clone();
        let bound = self.bound.clone();
        Box::pin(async move {
            let tokens = config
                .store
                .get(&resource_url)
                .ok_or("no tokens to refresh")?;
            let fresh = refresh(&fetch, &config, &resource_url, &tokens).await?;
            note_binding(&config, &bound, fresh)
                .ok_or_else(|| "a token bound to another key".into())
        })
    }

    fn authorize(
        &self,
        resource_url: String,
        challenge: Challenge,
    ) -> BoxFuture<'static, Result<Tokens, String>> {
        let config = self.config.clone();
        let fetch = self.fetch.clone();
        let bound = self.bound.clone();
        Box::pin(async move {
            let stored = config
                .store
                .get(&resource_url)
                .and_then(|t| note_binding(&config, &bound, t));
            // A refused token that can be refreshed is refreshed first; more scope needs
            // the whole flow.
            if challenge.error.as_deref() != Some("insufficient_scope")
                && let Some(tokens) = &stored
                && tokens.refresh_token.is_some()
                && let Ok(fresh) = refresh(&fetch, &config, &resource_url, tokens).await
                && let Some(fresh) = note_binding(&config, &bound, fresh)
            {
                return Ok(fresh);
            }
            let previous = stored.and_then(|t| t.scope);
            let tokens = authorize(
                &fetch,
                &config,
                &resource_url,
                &challenge,
                previous.as_deref(),
            )
            .await?;
            note_binding(&config, &bound, tokens)
                .ok_or_else(|| "a token bound to another key".into())
        })
    }
}
