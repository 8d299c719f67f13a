//! The protocol half of Google and GitHub sign-in: OpenID Connect (discovery, the
//! authorization code flow with PKCE and a nonce, ID token verification) through the
//! `openidconnect` crate, and GitHub's OAuth 2 with PKCE through `oauth2`, then its
//! `/user/emails`. Requests go through herald's [`Outbound`] client, from the blocking
//! thread a dashboard request runs on.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreJwsSigningAlgorithm, CoreProviderMetadata};
use openidconnect::{
    AccessTokenHash, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, HttpRequest, HttpResponse,
    IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
    TokenUrl,
};

use crate::config::{GithubConfig, GoogleConfig};
use crate::outbound::{Limits, Outbound, OutboundError};

/// Limits of one request to an identity provider.
const LIMITS: Limits = Limits {
    timeout: Duration::from_secs(10),
    body_max: 1024 * 1024,
};

/// How long a provider's discovery document and keys are kept.
const DISCOVERY_TTL: Duration = Duration::from_secs(3600);

/// Where a browser is sent, and what the callback needs to finish.
pub struct Started {
    /// The provider's authorization URL.
    pub url: String,
    /// The `state` the callback must bring back.
    pub state: String,
    /// The PKCE verifier.
    pub verifier: String,
    /// The OpenID nonce (empty for GitHub).
    pub nonce: String,
}

/// Why a sign-in by identity failed (shown to the person, so nothing secret).
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The provider could not be reached or answered something unusable.
    #[error("the identity provider cannot be reached or answered something unexpected: {0}")]
    Provider(String),
    /// The identity carries no verified email.
    #[error("the identity has no verified email address")]
    NoVerifiedEmail,
}

fn provider(error: impl std::fmt::Display) -> OAuthError {
    OAuthError::Provider(error.to_string())
}

/// The identity providers' client: herald's outbound HTTP and the cached discovery.
pub struct OAuth {
    outbound: Outbound,
    discovered: Mutex<Option<(Instant, CoreProviderMetadata)>>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth").finish_non_exhaustive()
    }
}

impl OAuth {
    /// A client. Provider URLs come from the operator's config, so private addresses are
    /// allowed (a company's own OpenID provider on its network).
    pub fn new() -> Result<OAuth, herald_tls::Error> {
        Ok(OAuth {
            outbound: Outbound::new(true, Vec::new())?,
            discovered: Mutex::new(None),
        })
    }

    /// Sends one request on the current runtime, from a blocking thread.
    fn call(&self, request: HttpRequest) -> Result<HttpResponse, OutboundError> {
        let (parts, body) = request.into_parts();
        let url = parts.uri.to_string();
        let headers = parts
            .headers
            .iter()
            .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
            .collect();
        let response = tokio::runtime::Handle::current().block_on(self.outbound.send(
            parts.method,
            &url,
            headers,
            Bytes::from(body),
            LIMITS,
        ))?;
        let mut builder = openidconnect::http::Response::builder().status(response.status);
        if let Some(kind) = response.content_type {
            builder = builder.header(openidconnect::http::header::CONTENT_TYPE, kind);
        }
        builder
            .body(response.body.to_vec())
            .map_err(|error| OutboundError::Failed {
                url,
                reason: error.to_string(),
            })
    }

    /// The provider's discovery document and keys, fetched at most hourly.
    fn metadata(&self, config: &GoogleConfig) -> Result<CoreProviderMetadata, OAuthError> {
        let mut cached = self
            .discovered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, metadata)) = cached.as_ref()
            && at.elapsed() < DISCOVERY_TTL
        {
            return Ok(metadata.clone());
        }
        let issuer = IssuerUrl::new(config.issuer.clone()).map_err(provider)?;
        let http = |request| self.call(request);
        let metadata = CoreProviderMetadata::discover(&issuer, &http).map_err(provider)?;
        *cached = Some((Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    /// Forgets the discovery document (after a key the cached set lacks).
    fn forget(&self) {
        *self
            .discovered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// Starts an OpenID Connect flow returning to `redirect`.
    pub fn google_start(&self, config: &GoogleConfig, redirect: &str) -> Result<Started, OAuthError> {
        let client = CoreClient::from_provider_metadata(
            self.metadata(config)?,
            ClientId::new(config.client_id.clone()),
            Some(ClientSecret::new(config.client_secret.clone())),
        )
        .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).map_err(provider)?);
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".to_owned()))
            .set_pkce_challenge(challenge)
            .url();
        Ok(Started {
            url: url.to_string(),
            state: state.secret().clone(),
            verifier: verifier.secret().clone(),
            nonce: nonce.secret().clone(),
        })
    }

    /// Finishes an OpenID Connect flow: exchanges the code, verifies the ID token
    /// (signature, issuer, audience, expiry, nonce, access token hash) and answers its
    /// email when the provider says it is verified.
    pub fn google_finish(
        &self,
        config: &GoogleConfig,
        redirect: &str,
        code: &str,
        verifier: String,
        nonce: &str,
    ) -> Result<Vec<String>, OAuthError> {
        let client = CoreClient::from_provider_metadata(
            self.metadata(config)?,
            ClientId::new(config.client_id.clone()),
            Some(ClientSecret::new(config.client_secret.clone())),
        )
        .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).map_err(provider)?);
        let http = |request| self.call(request);
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(provider)?
            .set_pkce_verifier(PkceCodeVerifier::new(verifier))
            .request(&http)
            .map_err(provider)?;
        let id_token = token
            .id_token()
            .ok_or_else(|| provider("the token response has no ID token"))?;
        let checker = client.id_token_verifier().set_allowed_algs([
            CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
            CoreJwsSigningAlgorithm::EcdsaP256Sha256,
        ]);
        let claims = match id_token.claims(&checker, &Nonce::new(nonce.to_owned())) {
            Ok(claims) => claims,
            Err(error) => {
                // Keys rotate: the next attempt fetches them again.
                self.forget();
                return Err(provider(error));
            }
        };
        if let Some(expected) = claims.access_token_hash() {
            let algorithm = id_token.signing_alg().map_err(provider)?;
            let key = id_token.signing_key(&checker).map_err(provider)?;
            let actual = AccessTokenHash::from_token(token.access_token(), algorithm, key).map_err(provider)?;
            if actual != *expected {
                return Err(provider("the ID token does not match the access token"));
            }
        }
        match (claims.email(), claims.email_verified()) {
            (Some(email), Some(true)) => Ok(vec![email.to_string()]),
            _ => Err(OAuthError::NoVerifiedEmail),
        }
    }

    /// Starts a GitHub flow returning to `redirect`.
    pub fn github_start(&self, config: &GithubConfig, redirect: &str) -> Result<Started, OAuthError> {
        let client = github_client(config, redirect)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state) = client
            .authorize_url(CsrfToken::new_random)
            .add_scope(Scope::new("user:email".to_owned()))
            .set_pkce_challenge(challenge)
            .url();
        Ok(Started {
            url: url.to_string(),
            state: state.secret().clone(),
            verifier: verifier.secret().clone(),
            nonce: String::new(),
        })
    }

    /// Finishes a GitHub flow: exchanges the code, then reads the account's verified
    /// addresses, the primary one first.
    pub fn github_finish(
        &self,
        config: &GithubConfig,
        redirect: &str,
        code: &str,
        verifier: String,
    ) -> Result<Vec<String>, OAuthError> {
        let client = github_client(config, redirect)?;
        let http = |request| self.call(request);
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(verifier))
            .request(&http)
            .map_err(provider)?;
        let url = format!("{}/user/emails", config.api_url);
        let headers = vec![
            (
                "authorization".to_owned(),
                format!("Bearer {}", token.access_token().secret()),
            ),
            ("accept".to_owned(), "application/vnd.github+json".to_owned()),
            ("x-github-api-version".to_owned(), "2022-11-28".to_owned()),
        ];
        let response = tokio::runtime::Handle::current()
            .block_on(
                self.outbound
                    .send(hyper::Method::GET, &url, headers, Bytes::new(), LIMITS),
            )
            .map_err(provider)?;
        if !response.status.is_success() {
            return Err(provider(format!("{url} answered {}", response.status)));
        }
        let mut addresses: Vec<GithubEmail> = serde_json::from_slice(&response.body).map_err(provider)?;
        addresses.retain(|a| a.verified);
        addresses.sort_by_key(|a| !a.primary);
        if addresses.is_empty() {
            return Err(OAuthError::NoVerifiedEmail);
        }
        Ok(addresses.into_iter().map(|a| a.email).collect())
    }
}

/// One entry of GitHub's `/user/emails`.
#[derive(serde::Deserialize)]
struct GithubEmail {
    email: String,
    #[serde(default)]
    primary: bool,
    #[serde(default)]
    verified: bool,
}

type GithubClient = oauth2::basic::BasicClient<
    oauth2::EndpointSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

fn github_client(config: &GithubConfig, redirect: &str) -> Result<GithubClient, OAuthError> {
    Ok(oauth2::basic::BasicClient::new(ClientId::new(config.client_id.clone()))
        .set_client_secret(ClientSecret::new(config.client_secret.clone()))
        .set_auth_type(oauth2::AuthType::RequestBody)
        .set_auth_uri(AuthUrl::new(config.authorize_url.clone()).map_err(provider)?)
        .set_token_uri(TokenUrl::new(config.token_url.clone()).map_err(provider)?)
        .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).map_err(provider)?))
}
