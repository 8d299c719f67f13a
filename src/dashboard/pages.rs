//! The dashboard's pages: askama templates (`templates/dashboard/`), checked at compile
//! time, every value HTML-escaped by the engine.

use askama::Template;

/// What every signed-in page shows around its content: the navigation (with the current
/// page), the session's CSRF token for its forms, and who is signed in.
pub struct Chrome<'a> {
    /// The navigation's current page.
    pub nav: &'a str,
    /// The session's CSRF token.
    pub csrf: &'a str,
    /// The signed-in user.
    pub email: &'a str,
    /// Its role.
    pub role: &'a str,
}

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
    /// Whether sign-in with Google is configured.
    pub google: bool,
    /// Whether sign-in with GitHub is configured.
    pub github: bool,
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
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
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
    /// The email's id.
    pub id: String,
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
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
    /// The page's emails.
    pub rows: Vec<EmailRow>,
    /// The cursor of the next page.
    pub next: Option<String>,
    /// The status filter (empty: any).
    pub status: &'a str,
    /// The search over recipients and subject.
    pub query: &'a str,
    /// The first day shown (`YYYY-MM-DD`, UTC; empty: any).
    pub since: &'a str,
    /// The last day shown.
    pub until: &'a str,
    /// The sending domain filter.
    pub domain: &'a str,
    /// The API key filter (an id).
    pub key: &'a str,
    /// The tag filter (`name` or `name:value`).
    pub tag: &'a str,
    /// The team's API keys: (id, name).
    pub keys: Vec<(String, String)>,
    /// The statuses to filter by.
    pub statuses: &'a [&'a str],
    /// The filters as a query string, for the next page and the export.
    pub kept: &'a str,
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
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
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
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
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
    /// The region its mail leaves from.
    pub region: String,
    /// The regions it may be moved to.
    pub regions: Vec<String>,
    /// The EHLO name its mail is sent with.
    pub ehlo: String,
    /// Its region's source addresses.
    pub sources: Vec<SourceRow>,
    /// What just succeeded.
    pub notice: Option<&'a str>,
    /// What just failed.
    pub error: Option<String>,
}

/// One source address of a domain's region.
pub struct SourceRow {
    /// The address.
    pub address: String,
    /// Connections open, of the limit (`3 / 100`); `—` outside the operator's team
    /// (they count every team's mail).
    pub connections: String,
    /// Messages sent today (UTC), every team's; `—` outside the operator's team.
    pub sent_today: String,
    /// Its warm-up: `day 3 of 10: 200 a day`, or `no daily limit`.
    pub warmup: String,
}

/// One event of an email's timeline.
pub struct EventRow {
    /// Its kind.
    pub kind: String,
    /// When.
    pub at: String,
    /// Its details, as JSON.
    pub detail: String,
}

/// One delivery attempt.
pub struct AttemptRow {
    /// When it ended.
    pub at: String,
    /// Its recipients.
    pub recipients: String,
    /// The MX host.
    pub host: String,
    /// The TLS version.
    pub tls: String,
    /// The reply.
    pub reply: String,
}

/// `GET /dashboard/emails/{id}`.
#[derive(Template)]
#[template(path = "dashboard/email.html")]
pub struct Email<'a> {
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
    /// The email's id.
    pub id: String,
    /// Its subject.
    pub subject: String,
    /// Its latest event.
    pub status: String,
    /// Its sender.
    pub from: String,
    /// Its recipients.
    pub to: String,
    /// When it was accepted.
    pub sent: String,
    /// Its Message-ID.
    pub message_id: String,
    /// Its timeline.
    pub events: Vec<EventRow>,
    /// Its delivery attempts.
    pub attempts: Vec<AttemptRow>,
    /// Its HTML, shown in a sandboxed frame and as source.
    pub html: Option<String>,
    /// Its text.
    pub text: Option<String>,
    /// The API request that created it (its log's id), when sent over the API.
    pub log: Option<String>,
    /// Its main header fields, as sent.
    pub headers: Vec<(&'static str, String)>,
    /// Whether the preview may load remote images (asked for on the page).
    pub images: bool,
}

/// One row of the API logs page.
pub struct LogRow {
    /// The API key's name (or id, when deleted).
    pub key: String,
    /// The log's id.
    pub id: String,
    /// The path.
    pub path: String,
    /// The status.
    pub status: u16,
    /// The status's class digit.
    pub class: u16,
    /// The method.
    pub method: String,
    /// When.
    pub at: String,
    /// The user agent.
    pub agent: String,
}

/// `GET /dashboard/logs`.
#[derive(Template)]
#[template(path = "dashboard/logs.html")]
pub struct Logs<'a> {
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
    /// The status filter (`""`, `2xx`, `errors`).
    pub filter: &'a str,
    /// The page's logs.
    pub rows: Vec<LogRow>,
    /// The method filter (empty: any).
    pub method: &'a str,
    /// The API key filter (an id).
    pub key: &'a str,
    /// The user agent filter (a part of it).
    pub agent: &'a str,
    /// The team's API keys: (id, name).
    pub keys: Vec<(String, String)>,
}

/// `GET /dashboard/logs/{id}`.
#[derive(Template)]
#[template(path = "dashboard/log.html")]
pub struct Log<'a> {
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
    /// The method.
    pub method: String,
    /// The path.
    pub path: String,
    /// The status.
    pub status: u16,
    /// The status's class digit.
    pub class: u16,
    /// When.
    pub at: String,
    /// Time to answer.
    pub duration: u64,
    /// The key used.
    pub key: String,
    /// The user agent.
    pub agent: String,
    /// The request body (redacted).
    pub request: String,
    /// The response body (redacted).
    pub response: String,
    /// The emails the request created (its response's ids), when it sent email.
    pub emails: Vec<String>,
}

/// One row of the API keys page.
pub struct KeyRow {
    /// The one domain it may send from (a name), if bound.
    pub domain: String,
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its permission.
    pub permission: String,
    /// When it was created.
    pub created: String,
    /// When it was last used.
    pub last_used: String,
}

/// `GET /dashboard/api-keys`.
#[derive(Template)]
#[template(path = "dashboard/keys.html")]
pub struct Keys<'a> {
    /// The team's domains for the form: (id, name).
    pub domains: Vec<(String, String)>,
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
    /// Whether the user may create and delete keys.
    pub can_manage: bool,
    /// The team's keys.
    pub keys: Vec<KeyRow>,
    /// A token just made (shown once).
    pub token: Option<String>,
    /// What just failed.
    pub error: Option<String>,
}

/// One row of the Suppressions page.
pub struct SuppressionRow {
    /// Its id.
    pub id: String,
    /// The address.
    pub email: String,
    /// Why.
    pub origin: String,
    /// When it was added.
    pub created: String,
}

/// `GET /dashboard/suppressions`.
#[derive(Template)]
#[template(path = "dashboard/suppressions.html")]
pub struct Suppressions<'a> {
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
    /// Whether the user may add and remove entries.
    pub can_manage: bool,
    /// The search.
    pub query: String,
    /// The entries.
    pub rows: Vec<SuppressionRow>,
    /// What just failed.
    pub error: Option<String>,
}

/// One member of the Team page.
pub struct MemberRow {
    /// The address.
    pub email: String,
    /// The role.
    pub role: String,
    /// Whether TOTP is on.
    pub mfa: bool,
    /// Whether the invitation is not yet taken.
    pub invited: bool,
}

/// `GET /dashboard/team`.
#[derive(Template)]
#[template(path = "dashboard/team.html")]
pub struct Team<'a> {
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
    /// Whether the user may invite (owners).
    pub can_manage: bool,
    /// The members.
    pub members: Vec<MemberRow>,
    /// An invitation link just made (shown once).
    pub invitation: Option<String>,
    /// The team's plan, or `None`: unlimited.
    pub plan: Option<String>,
    /// Today's and this month's sending against the plan.
    pub usage: Vec<UsageRow>,
    /// What just failed.
    pub error: Option<String>,
}

/// One period of a team's sending against its plan.
pub struct UsageRow {
    /// `Today (UTC)` or `This month (UTC)`.
    pub period: &'static str,
    /// Emails counted.
    pub used: u64,
    /// The allowance, or `unlimited`.
    pub limit: String,
    /// When the count starts again.
    pub resets: String,
}

/// One endpoint of the Webhooks page.
pub struct HookRow {
    /// Its id.
    pub id: String,
    /// Its URL.
    pub endpoint: String,
    /// The events it gets.
    pub events: String,
    /// Enabled or disabled.
    pub status: String,
    /// When it was added.
    pub created: String,
}

/// `GET /dashboard/webhooks`.
#[derive(Template)]
#[template(path = "dashboard/webhooks.html")]
pub struct Webhooks<'a> {
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
    /// The team's endpoints.
    pub hooks: Vec<HookRow>,
    /// Whether the user may add endpoints.
    pub can_manage: bool,
    /// Every event type, for the form.
    pub kinds: Vec<&'static str>,
    /// The endpoint typed before a failure.
    pub endpoint: String,
    /// What just failed.
    pub error: Option<String>,
}

/// One message of an endpoint.
pub struct MessageRow {
    /// Its event's id.
    pub event_id: String,
    /// The event's kind.
    pub kind: String,
    /// Pending, delivered or failed.
    pub state: String,
    /// Attempts made.
    pub attempts: u32,
    /// When the next attempt is due.
    pub next: String,
    /// The last attempt's answer.
    pub last: String,
}

/// `GET /dashboard/webhooks/{id}`.
#[derive(Template)]
#[template(path = "dashboard/webhook.html")]
pub struct Webhook<'a> {
    /// The page's frame: navigation, CSRF token, the signed-in user.
    pub chrome: Chrome<'a>,
    /// Whether the user may enable, disable and replay.
    pub can_manage: bool,
    /// Its id.
    pub id: String,
    /// Its URL.
    pub endpoint: String,
    /// The events it gets.
    pub events: String,
    /// Enabled or disabled.
    pub status: String,
    /// Its latest messages.
    pub messages: Vec<MessageRow>,
    /// What just succeeded.
    pub notice: Option<&'a str>,
    /// What just failed.
    pub error: Option<String>,
    /// Every event type, for the form, with whether it is subscribed.
    pub kinds: Vec<(&'static str, bool)>,
    /// A signing secret just made, shown once.
    pub secret: Option<String>,
}

/// One deliverability check as shown.
pub struct InsightRow {
    /// `pass`, `warn`, `fail` or `skip`.
    pub status: &'static str,
    /// What is checked.
    pub title: &'static str,
    /// What was found.
    pub detail: String,
    /// What to do.
    pub fix: Option<String>,
}

/// The deliverability panel of an email (what htmx swaps into its page).
#[derive(Template)]
#[template(path = "dashboard/insights_panel.html")]
pub struct InsightsPanel {
    /// The checks.
    pub checks: Vec<InsightRow>,
    /// How many passed.
    pub passed: usize,
    /// How many are worth improving.
    pub warnings: usize,
    /// How many to fix.
    pub failed: usize,
}

/// `GET /dashboard/emails/{id}/insights` without htmx: the panel as a page.
#[derive(Template)]
#[template(path = "dashboard/insights.html")]
pub struct Insights<'a> {
    /// The page's frame.
    pub chrome: Chrome<'a>,
    /// The email's id.
    pub id: String,
    /// The checks.
    pub checks: Vec<InsightRow>,
    /// How many passed.
    pub passed: usize,
    /// How many are worth improving.
    pub warnings: usize,
    /// How many to fix.
    pub failed: usize,
}

/// One row of the Contacts page.
pub struct ContactRow {
    /// Its id.
    pub id: String,
    /// Its address.
    pub email: String,
    /// First and last name.
    pub name: String,
    /// Whether it is unsubscribed from everything.
    pub unsubscribed: bool,
    /// When it was added.
    pub added: String,
}

/// One recent import.
pub struct ImportRow {
    /// Its id.
    pub id: String,
    /// Where it is.
    pub status: &'static str,
    /// Rows read.
    pub total: u64,
    /// Contacts created.
    pub created: u64,
    /// Contacts updated.
    pub updated: u64,
    /// Rows refused.
    pub failed: u64,
    /// When it was uploaded.
    pub at: String,
}

/// `GET /dashboard/contacts`.
#[derive(Template)]
#[template(path = "dashboard/contacts.html")]
pub struct Contacts<'a> {
    /// The page's frame.
    pub chrome: Chrome<'a>,
    /// Whether the user may add, edit, delete and import.
    pub can_manage: bool,
    /// The page's contacts.
    pub rows: Vec<ContactRow>,
    /// The cursor of the next page.
    pub next: Option<String>,
    /// The team's segments: (id, name).
    pub segments: Vec<(String, String)>,
    /// The segment filter (an id).
    pub segment: &'a str,
    /// The unsubscribed filter (`yes`, `no` or empty).
    pub unsubscribed: &'a str,
    /// The team's topics: (id, name).
    pub topics: Vec<(String, String)>,
    /// The topic filter (an id: contacts subscribed to it).
    pub topic: &'a str,
    /// The search.
    pub query: &'a str,
    /// The filters as a query string.
    pub kept: &'a str,
    /// The latest imports.
    pub imports: Vec<ImportRow>,
    /// What just failed.
    pub error: Option<String>,
}

/// `GET /dashboard/contacts/{id}`.
#[derive(Template)]
#[template(path = "dashboard/contact.html")]
pub struct ContactPage<'a> {
    /// The page's frame.
    pub chrome: Chrome<'a>,
    /// Whether the user may edit and delete.
    pub can_manage: bool,
    /// Its id.
    pub id: String,
    /// Its address.
    pub email: String,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Whether it is unsubscribed from everything.
    pub unsubscribed: bool,
    /// Its segments' names.
    pub segments: Vec<String>,
    /// Its properties: (key, value).
    pub properties: Vec<(String, String)>,
    /// When it was added.
    pub added: String,
    /// What just succeeded.
    pub notice: Option<&'a str>,
    /// What just failed.
    pub error: Option<String>,
}

/// `GET /dashboard/contacts/imports/{id}`.
#[derive(Template)]
#[template(path = "dashboard/import.html")]
pub struct ImportPage<'a> {
    /// The page's frame.
    pub chrome: Chrome<'a>,
    /// Where it is.
    pub status: &'static str,
    /// Whether it has finished (the page stops refreshing).
    pub done: bool,
    /// Rows read.
    pub total: u64,
    /// Contacts created.
    pub created: u64,
    /// Contacts updated.
    pub updated: u64,
    /// Rows left as they were.
    pub skipped: u64,
    /// Rows refused.
    pub failed: u64,
    /// When it was uploaded.
    pub at: String,
    /// Refused rows: (row, line, reason).
    pub errors: Vec<(u64, u64, String)>,
    /// Whether more refused rows exist than shown.
    pub more: bool,
}

/// `GET /dashboard/audience`: segments, topics and contact properties.
#[derive(Template)]
#[template(path = "dashboard/audience.html")]
pub struct Audience<'a> {
    /// The page's frame.
    pub chrome: Chrome<'a>,
    /// Whether the user may add and delete.
    pub can_manage: bool,
    /// Segments: (id, name).
    pub segments: Vec<(String, String)>,
    /// Topics: (id, name, default subscription, visibility).
    pub topics: Vec<(String, String, String, String)>,
    /// Properties: (id, key, type, fallback).
    pub properties: Vec<(String, String, String, String)>,
    /// What just failed.
    pub error: Option<String>,
}

/// One row of the Templates page.
pub struct TemplateRow {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its alias (empty: none).
    pub alias: String,
    /// `published` or `draft`.
    pub status: &'static str,
    /// When it last changed.
    pub updated: String,
}

/// `GET /dashboard/templates`.
#[derive(Template)]
#[template(path = "dashboard/templates.html")]
pub struct Templates<'a> {
    /// The page's frame.
    pub chrome: Chrome<'a>,
    /// Whether the user may create and change templates.
    pub can_manage: bool,
    /// The team's templates.
    pub rows: Vec<TemplateRow>,
    /// What just failed.
    pub error: Option<String>,
}

/// `GET /dashboard/{broadcasts,templates}/{id}/design`: the no-code editor.
#[derive(Template)]
#[template(path = "dashboard/design.html")]
pub struct DesignPage<'a> {
    /// The page's frame (its CSRF token signs the saves).
    pub chrome: Chrome<'a>,
    /// `broadcast` or `template`.
    pub kind: &'static str,
    /// The broadcast's or template's page; saves go to its `/design`.
    pub back: String,
    /// Its name.
    pub name: String,
    /// The stored design, or empty for a new one.
    pub mjml: String,
    /// The merge tags the menu offers.
    pub merge_tags: Vec<String>,
    /// The same, as JSON, for the text toolbar's menu.
    pub merge_tags_json: String,
    /// The team's newest images, as JSON, for the asset manager.
    pub images_json: String,
}

/// One of a template's versions.
pub struct VersionRow {
    /// Its id.
    pub id: String,
    /// `draft`, `published` or `earlier`.
    pub state: &'static str,
    /// When it was made.
    pub created: String,
    /// Whether it was made in the editor.
    pub designed: bool,
    /// Whether the preview shows it.
    pub viewing: bool,
}

/// `GET /dashboard/templates/{id}`.
#[derive(Template)]
#[template(path = "dashboard/template.html")]
pub struct TemplatePage<'a> {
    /// The page's frame.
    pub chrome: Chrome<'a>,
    /// Whether the user may change it.
    pub can_manage: bool,
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its alias.
    pub alias: String,
    /// `published` or `draft`.
    pub status: &'static str,
    /// When it was last published.
    pub published_at: Option<String>,
    /// Whether a draft waits next to the published version.
    pub has_draft: bool,
    /// The current version's sender.
    pub from: String,
    /// Its subject.
    pub subject: String,
    /// Its HTML.
    pub html: String,
    /// The version the preview shows, when one was asked for.
    pub preview_version: Option<String>,
    /// Which version the preview shows: `draft`, `published` or `earlier`.
    pub preview_label: &'static str,
    /// Whether the current version was made in the editor.
    pub designed: bool,
    /// Its versions: the draft, the published one and earlier ones, newest first.
    pub versions: Vec<VersionRow>,
    /// Its text.
    pub text: String,
    /// Its declared variables.
    pub variables: Vec<String>,
    /// The merge tags its HTML may use: its variables and the reserved names.
    pub merge_tags: Vec<String>,
    /// What just succeeded.
    pub notice: Option<&'a str>,
    /// What just failed.
    pub error: Option<String>,
}

/// One row of the Broadcasts page.
pub struct BroadcastRow {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// herald's status.
    pub status: &'static str,
    /// Its segment's name.
    pub segment: String,
    /// Emails made so far.
    pub sent: u64,
    /// When it was created.
    pub created: String,
}

/// `GET /dashboard/broadcasts`.
#[derive(Template)]
#[template(path = "dashboard/broadcasts.html")]
pub struct Broadcasts<'a> {
    /// The page's frame.
    pub chrome: Chrome<'a>,
    /// Whether the user may write and send.
    pub can_manage: bool,
    /// The team's broadcasts.
    pub rows: Vec<BroadcastRow>,
    /// Segments: (id, name).
    pub segments: Vec<(String, String)>,
    /// Topics: (id, name).
    pub topics: Vec<(String, String)>,
    /// The merge tags broadcasts may use.
    pub merge_tags: Vec<String>,
    /// What just failed.
    pub error: Option<String>,
}

/// `GET /dashboard/broadcasts/{id}`.
#[derive(Template)]
#[template(path = "dashboard/broadcast.html")]
pub struct BroadcastPage<'a> {
    /// The page's frame.
    pub chrome: Chrome<'a>,
    /// Whether the user may write and send.
    pub can_manage: bool,
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// herald's status.
    pub status: &'static str,
    /// Whether it is still a draft.
    pub draft: bool,
    /// Whether it is scheduled or sending (the page follows it).
    pub live: bool,
    /// Sender.
    pub from: String,
    /// Subject.
    pub subject: String,
    /// HTML.
    pub html: String,
    /// Whether its HTML was made in the editor.
    pub designed: bool,
    /// Text.
    pub text: String,
    /// Its segment's id.
    pub segment_id: String,
    /// Its topic's id (empty: none).
    pub topic_id: String,
    /// Segments: (id, name).
    pub segments: Vec<(String, String)>,
    /// Topics: (id, name).
    pub topics: Vec<(String, String)>,
    /// When it goes, if scheduled.
    pub scheduled_at: Option<String>,
    /// Contacts read.
    pub total: u64,
    /// Emails made.
    pub sent: u64,
    /// Contacts skipped as unsubscribed.
    pub unsubscribed: u64,
    /// Contacts skipped as suppressed.
    pub suppressed: u64,
    /// Contacts that could not get their email.
    pub failed: u64,
    /// Emails taken back by a cancel.
    pub canceled: u64,
    /// What became of its emails: (label, count, rate).
    pub outcomes: Vec<(&'static str, u64, String)>,
    /// The most clicked links: (URL, clicks, unique clicks).
    pub links: Vec<(String, u64, u64)>,
    /// The latest test email's id, whose insights the review shows.
    pub tested: Option<String>,
    /// The merge tags its HTML may use.
    pub merge_tags: Vec<String>,
    /// The contact the preview is rendered for (an address; empty: fallbacks only).
    pub preview_as: String,
    /// The subject as that contact gets it.
    pub preview_subject: String,
    /// Why the preview could not be rendered for that contact.
    pub preview_error: Option<String>,
    /// A draft's segment members now.
    pub members: u64,
    /// Of them, unsubscribed or opted out of its topic.
    pub skipped_unsubscribed: u64,
    /// Of them, on the suppression list.
    pub skipped_suppressed: u64,
    /// Who would get it.
    pub recipients: u64,
    /// What just succeeded.
    pub notice: Option<&'a str>,
    /// What just failed.
    pub error: Option<String>,
}
