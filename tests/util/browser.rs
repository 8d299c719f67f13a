//! Driving Debian's `chromium` through `chromedriver` (both installed by
//! `scripts/deps --test`) with a WebDriver client on rustls: start, connect, fill and
//! submit forms, wait for pages and text, and save screenshots into
//! `HERALD_SCREENSHOTS` (default `target/dashboard-screenshots`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// The password the browser tests' users sign in with.
pub const PASSWORD: &str = "a long and unguessable passphrase";

/// `chromedriver` on a free loopback port, killed when dropped, with the browser's
/// profile in a directory of its own that goes with it (chromium's default profile
/// directories under `/tmp` would stay behind, one per run).
pub struct Driver {
    child: Child,
    port: u16,
    profile: tempfile::TempDir,
}

impl Driver {
    /// Starts it.
    pub fn start() -> Driver {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (install it with scripts/deps --test)");
        let profile = tempfile::tempdir().expect("a profile directory");
        Driver { child, port, profile }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A WebDriver session on `driver`'s headless chromium.
pub async fn connect(driver: &Driver) -> Client {
    let profile = format!("--user-data-dir={}", driver.profile.path().display());
    let capabilities = json!({
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900", profile],
        }
    });
    let capabilities = capabilities.as_object().expect("object").clone();
    // chromedriver takes a moment to listen.
    for _ in 0..100 {
        if let Ok(client) = ClientBuilder::rustls()
            .expect("rustls")
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
        {
            return client;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not answer");
}

pub fn screenshots() -> PathBuf {
    let dir = std::env::var_os("HERALD_SCREENSHOTS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/dashboard-screenshots"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).expect("screenshot directory");
    dir
}

pub async fn shot(client: &Client, name: &str) {
    let png = client.screenshot().await.expect("screenshot");
    std::fs::write(screenshots().join(format!("{name}.png")), png).expect("write screenshot");
}

/// A screenshot of the element at `css` alone (for a part below the fold).
pub async fn shot_of(client: &Client, css: &str, name: &str) {
    let element = client.find(Locator::Css(css)).await.expect("the element");
    let png = element.screenshot().await.expect("screenshot");
    std::fs::write(screenshots().join(format!("{name}.png")), png).expect("write screenshot");
}

pub async fn fill(client: &Client, name: &str, value: &str) {
    let field = client
        .find(Locator::Css(&format!("input[name=\"{name}\"]")))
        .await
        .unwrap_or_else(|e| panic!("a field named {name}: {e}"));
    field.clear().await.expect("clear");
    field.send_keys(value).await.expect("type");
}

pub async fn submit(client: &Client, form: &str) {
    click(client, Locator::Css(&format!("{form} button[type=\"submit\"]"))).await;
}

/// Clicks the element `locator` finds; fails naming it when there is none.
pub async fn click(client: &Client, locator: Locator<'_>) {
    client
        .find(locator)
        .await
        .unwrap_or_else(|e| panic!("{locator:?}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("clicking {locator:?}: {e}"));
}

/// The text of the element at `css`, waiting up to 10 s for it (a form's submission
/// navigates after the click returns).
pub async fn text_of(client: &Client, css: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let found = client
            .wait()
            .at_most(left.max(Duration::from_millis(100)))
            .for_element(Locator::Css(css))
            .await;
        let error = match found {
            Ok(found) => match found.text().await {
                Ok(text) => return text,
                Err(error) => error,
            },
            Err(error) => error,
        };
        // A navigation (a form's answer arriving, htmx swapping the page) aborts a find
        // or a read under way ("aborted by navigation", a stale element): look again on
        // the new page, until the time is up.
        if std::time::Instant::now() >= deadline {
            let url = client.current_url().await.map(|u| u.to_string()).unwrap_or_default();
            let source = client.source().await.unwrap_or_default();
            panic!("{css} on {url}: {error}\n{source}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Signs `email` in with [`PASSWORD`] on the sign-in page and waits until the browser
/// has left it (for the emails list, or the second factor's page).
pub async fn sign_in(client: &Client, base: &str, email: &str) {
    client
        .goto(&format!("{base}/dashboard/login"))
        .await
        .expect("login page");
    fill(client, "email", email).await;
    fill(client, "password", PASSWORD).await;
    submit(client, "form").await;
    // The click returns before the answer's page has loaded: a navigation started now
    // would race the sign-in's own redirect.
    wait_for_path(client, |path| path != "/dashboard/login", "a page after the sign-in's").await;
}

/// Waits (a form's submission navigates after the click returns) until the browser is
/// at `path`; fails with the page's source after 10 s.
pub async fn expect_path(client: &Client, path: &str) {
    wait_for_path(client, |at| at.ends_with(path), path).await;
}

/// Waits up to 10 s until the browser's path is one `wanted` takes; fails with `what`
/// and the page's source.
async fn wait_for_path(client: &Client, wanted: impl Fn(&str) -> bool, what: &str) {
    for _ in 0..100 {
        let url = client.current_url().await.expect("url");
        if wanted(url.path()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let url = client.current_url().await.expect("url");
    let source = client.source().await.unwrap_or_default();
    panic!("wanted {what}, at {url}\n{source}");
}

/// Waits up to 10 s for the element at `css` to contain `needle` (a page that had the
/// element before a form was sent shows the answer's only once it has loaded).
pub async fn wait_for_text(client: &Client, css: &str, needle: &str) {
    for _ in 0..100 {
        if let Ok(element) = client.find(Locator::Css(css)).await
            && element.text().await.is_ok_and(|t| t.contains(needle))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let source = client.source().await.unwrap_or_default();
    panic!("{css} never showed {needle:?}\n{source}");
}
