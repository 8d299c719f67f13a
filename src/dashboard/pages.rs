//! The dashboard's pages: askama templates (`templates/dashboard/`), checked at compile
//! time, every value HTML-escaped by the engine.

use askama::Template;

/// `GET /dashboard/login`.
#[derive(Template)]
#[template(path = "dashboard/login.html")]
pub struct Login<'a> {
    /// The form's CSRF token.
    pub csrf: &'a str,
    /// The address typed before, kept on a failure.
    pub email: &'a str,
    /// Why the last try failed.
    pub error: Option<&'a str>,
}

/// `GET /dashboard/login/mfa`.
#[derive(Template)]
#[template(path = "dashboard/mfa.html")]
pub struct Mfa<'a> {
    /// The form's CSRF token.
    pub csrf: &'a str,
    /// Why the last try failed.
    pub error: Option<&'a str>,
}

/// `GET /dashboard/invite/{token}`.
#[derive(Template)]
#[template(path = "dashboard/invite.html")]
pub struct Invite<'a> {
    /// The form's CSRF token.
    pub csrf: &'a str,
    /// Who is invited.
    pub email: &'a str,
    /// The shortest password.
    pub min: usize,
    /// Why the last try failed.
    pub error: Option<&'a str>,
}

/// `GET /dashboard/profile`.
#[derive(Template)]
#[template(path = "dashboard/profile.html")]
pub struct Profile<'a> {
    /// The navigation's current page.
    pub nav: &'a str,
    /// The session's CSRF token.
    pub csrf: &'a str,
    /// The signed-in user.
    pub email: &'a str,
    /// Its role.
    pub role: &'a str,
    /// The shortest password.
    pub min: usize,
    /// Whether TOTP is on.
    pub mfa: bool,
    /// The secret being enrolled, in base32.
    pub secret: Option<String>,
    /// Its QR code, as a `data:` URL.
    pub qr: String,
    /// Recovery codes just made (shown once).
    pub recovery: Vec<String>,
    /// What just succeeded.
    pub notice: Option<&'a str>,
    /// What just failed.
    pub error: Option<&'a str>,
}

/// One row of the Emails page.
pub struct EmailRow {
    /// Recipients.
    pub to: String,
    /// The latest event.
    pub status: String,
    /// Subject.
    pub subject: String,
    /// When it was accepted.
    pub sent: String,
}

/// `GET /dashboard/emails`.
#[derive(Template)]
#[template(path = "dashboard/emails.html")]
pub struct Emails<'a> {
    /// The navigation's current page.
    pub nav: &'a str,
    /// The session's CSRF token.
    pub csrf: &'a str,
    /// The signed-in user.
    pub email: &'a str,
    /// Its role.
    pub role: &'a str,
    /// The page's emails.
    pub rows: Vec<EmailRow>,
    /// The cursor of the next page.
    pub next: Option<String>,
}
