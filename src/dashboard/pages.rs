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

/// One row of the Domains page.
pub struct DomainRow {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its status.
    pub status: String,
    /// Its region.
    pub region: String,
    /// When it was added.
    pub created: String,
}

/// `GET /dashboard/domains`.
#[derive(Template)]
#[template(path = "dashboard/domains.html")]
pub struct Domains<'a> {
    /// The navigation's current page.
    pub nav: &'a str,
    /// The session's CSRF token.
    pub csrf: &'a str,
    /// The signed-in user.
    pub email: &'a str,
    /// Its role.
    pub role: &'a str,
    /// Whether the user may add, change and delete domains.
    pub can_manage: bool,
    /// The team's domains.
    pub domains: Vec<DomainRow>,
    /// What just failed.
    pub error: Option<String>,
}

/// One DNS record of a domain.
pub struct RecordRow {
    /// What it is for.
    pub record: String,
    /// Its type.
    pub kind: String,
    /// Its host, relative to the domain.
    pub name: String,
    /// Its value.
    pub value: String,
    /// Whether DNS has it.
    pub status: String,
}

/// `GET /dashboard/domains/{id}`.
#[derive(Template)]
#[template(path = "dashboard/domain.html")]
pub struct Domain<'a> {
    /// The navigation's current page.
    pub nav: &'a str,
    /// The session's CSRF token.
    pub csrf: &'a str,
    /// The signed-in user.
    pub email: &'a str,
    /// Its role.
    pub role: &'a str,
    /// Whether the user may change and delete it.
    pub can_manage: bool,
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its status.
    pub status: String,
    /// Its records.
    pub records: Vec<RecordRow>,
    /// The recommended DMARC value.
    pub dmarc: String,
    /// Open tracking.
    pub open_tracking: bool,
    /// Click tracking.
    pub click_tracking: bool,
    /// The tracking subdomain.
    pub tracking_subdomain: String,
    /// Whether delivery requires verified TLS.
    pub tls_enforced: bool,
    /// What just succeeded.
    pub notice: Option<&'a str>,
    /// What just failed.
    pub error: Option<String>,
}
