//! A small OpenID Connect and GitHub-style OAuth 2 provider on `127.0.0.1`, for the
//! dashboard's Google and GitHub sign-in: discovery, a JWKS with a fresh RSA key, an
//! authorization endpoint that approves at once as the identity the test chose, a token
//! endpoint that checks the client's secret, the redirect URI and the PKCE verifier and
//! signs RS256 ID tokens (with the nonce it was given), and `/user/emails`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{KeyPair as _, RSA_PKCS1_SHA256};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

use super::lock;

/// The client id and secret herald is configured with.
pub const CLIENT_ID: &str = "herald-test-client";
/// See [`CLIENT_ID`].
pub const CLIENT_SECRET: &str = "herald-test-secret";

/// Who the provider says the person is.
#[derive(Debug, Clone)]
pub struct Person {
    /// Addresses with whether each is verified; the first is the primary one.
    pub emails: Vec<(String, bool)>,
}

struct Grant {
    challenge: String,
    redirect_uri: String,
    nonce: Option<String>,
    person: Person,
}

struct State {
    person: Person,
    grants: HashMap<String, Grant>,
    tokens: HashMap<String, Person>,
    /// Token requests refused, with why.
    refusals: Vec<String>,
}

/// A running provider.
pub struct IdentityProvider {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl IdentityProvider {
    /// Starts on an ephemeral port, signing in as `email` (verified) until told otherwise.
    pub async fn start(email: &str) -> IdentityProvider {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the provider");
        let addr = listener.local_addr().expect("addr");
        let key = Arc::new(KeyPair::generate(KeySize::Rsa2048).expect("an RSA key"));
        let state = Arc::new(Mutex::new(State {
            person: Person {
                emails: vec![(email.to_owned(), true)],
            },
            grants: HashMap::new(),
            tokens: HashMap::new(),
            refusals: Vec::new(),
        }));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (state, key) = (Arc::clone(&shared), Arc::clone(&key));
                let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let (state, key) = (Arc::clone(&state), Arc::clone(&key));
                    async move { Ok::<_, hyper::Error>(answer(addr, &state, &key, request).await) }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        IdentityProvider { addr, state }
    }

    /// The issuer URL (also the base of the GitHub-style endpoints).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The config sections that point herald at this provider.
    pub fn config(&self) -> String {
        let url = self.url();
        format!(
            "[dashboard.google]\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"{CLIENT_SECRET}\"\nissuer = \"{url}\"\n\n\
             [dashboard.github]\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"{CLIENT_SECRET}\"\n\
             authorize_url = \"{url}/login/oauth/authorize\"\ntoken_url = \"{url}/login/oauth/access_token\"\napi_url = \"{url}/api\"\n"
        )
    }

    /// Who the next sign-in is.
    pub fn sign_in_as(&self, person: Person) {
        lock(&self.state).person = person;
    }

    /// Token requests refused so far, with why.
    pub fn refusals(&self) -> Vec<String> {
        lock(&self.state).refusals.clone()
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().expect("header"));
    response
}

fn query(request: &Request<hyper::body::Incoming>) -> HashMap<String, String> {
    form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

async fn answer(
    addr: SocketAddr,
    state: &Mutex<State>,
    key: &KeyPair,
    request: Request<hyper::body::Incoming>,
) -> Response<Full<Bytes>> {
    let issuer = format!("http://{addr}");
    match request.uri().path() {
        "/.well-known/openid-configuration" => json_response(
            StatusCode::OK,
            &json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "jwks_uri": format!("{issuer}/jwks"),
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "code_challenge_methods_supported": ["S256"],
            }),
        ),
        "/jwks" => {
            let public = key.public_key();
            json_response(
                StatusCode::OK,
                &json!({ "keys": [{
                    "kty": "RSA", "alg": "RS256", "use": "sig", "kid": "test-key",
                    "n": URL_SAFE_NO_PAD.encode(public.modulus().big_endian_without_leading_zero()),
                    "e": URL_SAFE_NO_PAD.encode(public.exponent().big_endian_without_leading_zero()),
                }]}),
            )
        }
        "/authorize" | "/login/oauth/authorize" => {
            let params = query(&request);
            let openid = request.uri().path() == "/authorize";
            let scope_ok = if openid {
                params.get("scope").is_some_and(|s| s.split(' ').any(|s| s == "openid"))
            } else {
                params.get("scope").is_some_and(|s| s.contains("user:email"))
            };
            if params.get("client_id").map(String::as_str) != Some(CLIENT_ID)
                || params.get("code_challenge_method").map(String::as_str) != Some("S256")
                || !scope_ok
                || (openid && !params.contains_key("nonce"))
            {
                return json_response(StatusCode::BAD_REQUEST, &json!({ "error": "invalid_request" }));
            }
            let code = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>());
            let redirect_uri = params.get("redirect_uri").cloned().unwrap_or_default();
            let mut state = lock(state);
            let person = state.person.clone();
            state.grants.insert(
                code.clone(),
                Grant {
                    challenge: params.get("code_challenge").cloned().unwrap_or_default(),
                    redirect_uri: redirect_uri.clone(),
                    nonce: params.get("nonce").cloned(),
                    person,
                },
            );
            let back = format!(
                "{redirect_uri}?code={code}&state={}",
                form_urlencoded::byte_serialize(params.get("state").map_or("", String::as_str).as_bytes())
                    .collect::<String>()
            );
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::FOUND;
            response
                .headers_mut()
                .insert("location", back.parse().expect("location"));
            response
        }
        "/token" | "/login/oauth/access_token" => {
            let basic = request
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = request
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let form: HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
            match token(&issuer, state, key, basic.as_deref(), &form) {
                Ok(answer) => json_response(StatusCode::OK, &answer),
                Err(why) => {
                    lock(state).refusals.push(why.clone());
                    json_response(
                        StatusCode::BAD_REQUEST,
                        &json!({ "error": "invalid_grant", "error_description": why }),
                    )
                }
            }
        }
        "/api/user/emails" => {
            let bearer = request
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or_default()
                .to_owned();
            let Some(person) = lock(state).tokens.get(&bearer).cloned() else {
                return json_response(StatusCode::UNAUTHORIZED, &json!({ "message": "Bad credentials" }));
            };
            let emails: Vec<Value> = person
                .emails
                .iter()
                .enumerate()
                .map(|(i, (email, verified))| json!({ "email": email, "primary": i == 0, "verified": verified, "visibility": null }))
                .collect();
            json_response(StatusCode::OK, &Value::Array(emails))
        }
        _ => json_response(StatusCode::NOT_FOUND, &json!({ "error": "not_found" })),
    }
}

/// The token endpoint: the client's credentials (HTTP Basic for OpenID, in the form for
/// GitHub), the code once, the same redirect URI, and the PKCE verifier.
fn token(
    issuer: &str,
    state: &Mutex<State>,
    key: &KeyPair,
    basic: Option<&str>,
    form: &HashMap<String, String>,
) -> Result<Value, String> {
    let (id, secret) = match basic.and_then(|b| b.strip_prefix("Basic ")) {
        Some(encoded) => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| e.to_string())?;
            let text = String::from_utf8(decoded).map_err(|e| e.to_string())?;
            let (id, secret) = text.split_once(':').ok_or("no colon in Basic")?;
            (id.to_owned(), secret.to_owned())
        }
        None => (
            form.get("client_id").cloned().unwrap_or_default(),
            form.get("client_secret").cloned().unwrap_or_default(),
        ),
    };
    if id != CLIENT_ID || secret != CLIENT_SECRET {
        return Err("wrong client credentials".into());
    }
    let code = form.get("code").ok_or("no code")?;
    let mut state = lock(state);
    let grant = state.grants.remove(code).ok_or("unknown or spent code")?;
    if form.get("redirect_uri") != Some(&grant.redirect_uri) {
        return Err("redirect_uri differs".into());
    }
    let verifier = form.get("code_verifier").ok_or("no code_verifier")?;
    if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != grant.challenge {
        return Err("code_verifier does not match the challenge".into());
    }
    let access_token = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 24]>());
    state.tokens.insert(access_token.clone(), grant.person.clone());
    let Some(nonce) = grant.nonce else {
        return Ok(json!({ "access_token": access_token, "token_type": "bearer", "scope": "user:email" }));
    };
    let (email, verified) = grant.person.emails.first().cloned().unwrap_or_default();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_secs();
    let digest = Sha256::digest(access_token.as_bytes());
    let claims = json!({
        "iss": issuer, "sub": format!("sub-{email}"), "aud": CLIENT_ID, "iat": now, "exp": now + 300,
        "nonce": nonce, "email": email, "email_verified": verified,
        "at_hash": URL_SAFE_NO_PAD.encode(&digest[..16]),
    });
    let header = json!({ "alg": "RS256", "kid": "test-key", "typ": "JWT" });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; key.public_modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "cannot sign")?;
    let id_token = format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature));
    Ok(json!({ "access_token": access_token, "token_type": "Bearer", "expires_in": 3600, "id_token": id_token }))
}
