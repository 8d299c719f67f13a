//! The no-code editor in a real browser (Debian's `chromium`, headless, through
//! `chromedriver`): a broadcast built by dragging blocks from GrapesJS's block panel into
//! its canvas, a merge tag inserted at the caret from the menu, the unsubscribe block
//! surviving an attempt to delete it, a fault shown with its line and column, the design
//! saved, previewed as a contact, test-sent to a real sink and sent to a segment with
//! the counts moving; a template designed and published. Nothing on the page or in the
//! canvas points at another host. Screenshots go to `HERALD_SCREENSHOTS`.

mod util;

use std::time::Duration;

use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::browser::{Driver, PASSWORD, click, connect, fill, shot, shot_of, sign_in, submit, text_of, wait_for_text};
use util::sink::{Sink, SinkOptions};
use util::{OPERATOR_KEY, call};

/// Runs `script` in the page and answers its value.
async fn js(client: &Client, script: &str) -> Value {
    client
        .execute(script, vec![])
        .await
        .unwrap_or_else(|e| panic!("{script}: {e}"))
}

/// Waits up to 20 s for `script` to answer `true`.
async fn until(client: &Client, script: &str, what: &str) {
    for _ in 0..200 {
        if js(client, script).await == Value::Bool(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let url = client.current_url().await.map(|u| u.to_string()).unwrap_or_default();
    panic!("{what} never happened ({script}), at {url}");
}

/// Waits until the editor has started and drawn its blocks.
async fn editor_loaded(client: &Client) {
    until(
        client,
        "return !!(window.heraldEditor && document.querySelector('.gjs-block'))",
        "the editor loading",
    )
    .await;
}

/// Drags the block labelled `label` from the block panel onto the canvas, dropping it
/// just inside the bottom of the canvas element that contains `near` (its text). Chromium
/// does not turn WebDriver's pointer actions into HTML drag and drop, so the page is
/// sent the drag events a person's drag makes (`dragstart` on the block, `dragenter`,
/// `dragover` and `drop` in the canvas, `dragend`), carrying one `DataTransfer`, and
/// GrapesJS's own handlers do the rest, as for a person. Then waits until the canvas holds
/// `count` components of type `lands_as`.
/// Clicks the remove button of the asset manager's image `name`, which shows only while
/// the pointer is over the image, as a user's does.
async fn click_remove(client: &Client, name: &str) {
    let asset = format!("//*[contains(@class,'gjs-am-asset-image')][contains(.,'{name}')]");
    let image = client.find(Locator::XPath(&asset)).await.expect("the listed image");
    let hover = MouseActions::new("mouse".into()).then(PointerAction::MoveToElement {
        element: image,
        duration: None,
        x: 0.0,
        y: 0.0,
    });
    client.perform_actions(hover).await.expect("over the image");
    click(
        client,
        Locator::XPath(&format!("{asset}//*[@data-toggle='asset-remove']")),
    )
    .await;
}

async fn drag(client: &Client, label: &str, near: &str, lands_as: &str, count: usize) {
    let script = r#"
        const [label, near, stage] = arguments;
        const frame = document.querySelector('.gjs-frame');
        const doc = frame.contentDocument;
        const fire = (el, type, x, y, view) => el.dispatchEvent(new DragEvent(type, {
            bubbles: true, cancelable: true, composed: true, dataTransfer: window.heraldDrag,
            clientX: x, clientY: y, view }));
        if (stage === 'start') {
            const block = [...document.querySelectorAll('.gjs-block')].find(b => b.textContent.trim() === label);
            if (!block) return 'no block ' + label;
            window.heraldDrag = new DataTransfer();
            window.heraldBlock = block;
            const r = block.getBoundingClientRect();
            fire(block, 'dragstart', r.x + r.width / 2, r.y + r.height / 2, window);
            return 'started';
        }
        const walker = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT);
        let node;
        while ((node = walker.nextNode()) && !node.textContent.includes(near)) {}
        if (!node) return 'no text ' + near;
        const r = node.parentElement.getBoundingClientRect();
        const x = r.x + r.width / 2, y = r.bottom - 2;
        const el = doc.elementFromPoint(x, y);
        if (stage === 'over') {
            fire(el, 'dragenter', x, y, frame.contentWindow);
            fire(el, 'dragover', x, y, frame.contentWindow);
            return 'over';
        }
        fire(el, 'dragover', x, y + 1, frame.contentWindow);
        fire(el, 'drop', x, y + 1, frame.contentWindow);
        fire(window.heraldBlock, 'dragend', x, y + 1, window);
        return 'dropped';
    "#;
    for (stage, answer) in [("start", "started"), ("over", "over"), ("drop", "dropped")] {
        let said = client
            .execute(script, vec![json!(label), json!(near), json!(stage)])
            .await
            .expect("the drag");
        assert_eq!(said, json!(answer), "dragging {label}");
        // GrapesJS follows the drag a moment later (its sorter is rate-limited): wait for
        // it to have the block, then a place to put it, before the next events.
        match stage {
            "start" => {
                until(
                    client,
                    "return !!heraldEditor.getModel().get('dragSource')",
                    "the drag starting",
                )
                .await;
            }
            "over" => {
                until(
                    client,
                    "const d = heraldEditor.Canvas.getFrames()[0].view.droppable; \
                     return !!(d && d.sorter && d.sorter.dropLocationDeterminer.lastMoveData.targetNode)",
                    "a place to drop",
                )
                .await;
            }
            _ => {}
        }
    }
    until(
        client,
        &format!("return heraldEditor.getWrapper().findType('{lands_as}').length === {count}"),
        &format!("the {label} block dropped"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_is_built_by_dragging_blocks_and_sent() {
    let sink = Sink::start(SinkOptions::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = util::relay_to(sink.addr());
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    let base = format!("http://{addr}");
    util::cookies::add_users(addr, &[("ann@example.com", "owner")], PASSWORD).await;
    util::verified_domain(addr, "shop.test").await;
    let segment = util::cookies::segment_with(
        addr,
        "Readers",
        &[("amy@example.net", "Amy"), ("ben@example.net", "Ben")],
    )
    .await;
    let id = call(
        addr,
        Method::POST,
        "/broadcasts",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Winter sale", "segment_id": segment, "from": "Shop <news@shop.test>", "subject": "Winter sale", "html": "<p>x</p>" })),
    )
    .await
    .json()["id"]
        .as_str()
        .expect("id")
        .to_owned();

    let driver = Driver::start();
    let client = connect(&driver).await;
    sign_in(&client, &base, "ann@example.com").await;
    client
        .goto(&format!("{base}/dashboard/broadcasts/{id}/design"))
        .await
        .expect("the editor");
    editor_loaded(&client).await;
    shot(&client, "20-editor-new").await;
    // Blocks dragged in: a button under the first text, a text under the button.
    let types = "return heraldEditor.getWrapper().findType('mj-button').length + ':' + heraldEditor.getWrapper().findType('mj-text').length";
    assert_eq!(
        js(&client, types).await,
        json!("0:3"),
        "the starter: two texts and the footer's"
    );
    drag(&client, "Button", "Write your message", "mj-button", 1).await;
    drag(&client, "Text", "Write your message", "mj-text", 4).await;
    shot(&client, "21-editor-dragged").await;

    // A merge tag at the caret: double-click the new text, go to its end, pick the tag.
    client.enter_frame(0).await.expect("the canvas");
    let text = client
        .find(Locator::XPath("//*[normalize-space(text())='Insert text here']"))
        .await
        .expect("the dropped text");
    let mouse = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement {
            element: text.clone(),
            duration: None,
            x: 0.0,
            y: 0.0,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    client.perform_actions(mouse).await.expect("double-click");
    client
        .active_element()
        .await
        .expect("the text")
        .send_keys(&format!("{}, dear ", Key::End))
        .await
        .ok();
    client.enter_parent_frame().await.expect("the page");
    until(&client, "return !!heraldEditor.getEditing()", "editing the text").await;
    click(&client, Locator::Css("#design-merge option[value=\"FIRST_NAME\"]")).await;
    wait_for_text(&client, "#design-status", "Inserted {{{FIRST_NAME}}}").await;
    let edited = js(&client, "return heraldEditor.getEditing().getEl().textContent").await;
    assert!(
        edited.as_str().is_some_and(|t| t
            .replace('\u{a0}', " ")
            .trim()
            .ends_with("Insert text here, dear {{{FIRST_NAME}}}")),
        "the tag at the caret: {edited}"
    );
    shot(&client, "22-editor-merge-tag").await;
    // Leave the text (its content is kept when editing stops).
    js(&client, "heraldEditor.select(null); return true").await;
    until(
        &client,
        "return heraldEditor.getHtml().includes('{{{FIRST_NAME}}}')",
        "the tag in the design",
    )
    .await;

    // The unsubscribe block stays: neither the delete command nor the key removes it.
    let footer = "heraldEditor.getWrapper().findType('mj-section').find(s => (s.getAttributes()['css-class'] || '').includes('herald-unsubscribe'))";
    js(
        &client,
        &format!(
            "const f = {footer}; heraldEditor.select(f); heraldEditor.runCommand('core:component-delete'); return true"
        ),
    )
    .await;
    client.enter_frame(0).await.expect("the canvas");
    client
        .find(Locator::XPath("//*[contains(text(),'You receive this email')]"))
        .await
        .expect("the footer's text")
        .click()
        .await
        .expect("select it");
    client
        .active_element()
        .await
        .expect("the canvas")
        .send_keys(&Key::Delete.to_string())
        .await
        .ok();
    client.enter_parent_frame().await.expect("the page");
    // A script that empties it (no person can) sees the link come back.
    js(
        &client,
        &format!("const f = {footer}; f.components().at(0).remove(); return true"),
    )
    .await;
    assert_eq!(
        js(
            &client,
            &format!("return !!{footer} && {footer}.get('removable') === false")
        )
        .await,
        json!(true)
    );
    until(
        &client,
        "return heraldEditor.getHtml().includes('RESEND_UNSUBSCRIBE_URL')",
        "the footer kept",
    )
    .await;

    // A fault is shown with its line and column; then the design is saved.
    let good = js(
        &client,
        "const m = heraldEditor.getHtml(); window.heraldGood = m; return m",
    )
    .await;
    js(
        &client,
        "heraldEditor.setComponents('<mjml><mj-body><mj-section><mj-colum><mj-text>x</mj-text></mj-colum></mj-section></mj-body></mjml>'); return true",
    )
    .await;
    click(&client, Locator::Id("design-save")).await;
    wait_for_text(&client, "#design-status", "unknown element <mj-colum>").await;
    assert!(text_of(&client, "#design-status").await.contains("line 1, column"));
    shot(&client, "23-editor-fault").await;
    js(&client, "heraldEditor.setComponents(window.heraldGood); return true").await;
    assert!(good.as_str().expect("mjml").contains("<mj-button"), "{good}");
    click(&client, Locator::Id("design-save")).await;
    wait_for_text(&client, "#design-status", "Saved").await;
    let stored = call(
        addr,
        Method::GET,
        &format!("/broadcasts/{id}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    let html = stored["html"].as_str().expect("html");
    assert!(
        html.contains("{{{FIRST_NAME}}}") && html.contains("RESEND_UNSUBSCRIBE_URL"),
        "{html}"
    );

    // Nothing on the page or in the canvas loads from another host.
    let elsewhere = js(
        &client,
        r#"const here = location.origin;
           const docs = [document, document.querySelector('.gjs-frame').contentDocument];
           const urls = [];
           for (const d of docs) {
             d.querySelectorAll('script[src], link[href], img[src], iframe[src], source[src], video[src], audio[src]')
               .forEach(e => urls.push(e.src || e.href));
             (d.defaultView.performance.getEntriesByType('resource') || []).forEach(e => urls.push(e.name));
           }
           return urls.filter(u => u && !u.startsWith(here) && !u.startsWith('data:') && !u.startsWith('about:'));"#,
    )
    .await;
    assert_eq!(elsewhere, json!([]), "requests to other hosts");

    // The stored design opens again, and previews as a contact.
    client.refresh().await.expect("reload");
    until(
        &client,
        "return !!(window.heraldEditor && heraldEditor.getWrapper().findType('mj-button').length === 1)",
        "the stored design",
    )
    .await;
    shot(&client, "24-editor-stored").await;
    fill(&client, "preview", "amy@example.net").await;
    submit(&client, "#design-preview").await;
    wait_for_text(&client, "#preview-subject", "Winter sale").await;
    assert!(
        client
            .current_url()
            .await
            .expect("url")
            .as_str()
            .contains("preview=amy%40example.net")
    );
    client
        .find(Locator::Css("iframe.preview"))
        .await
        .expect("the preview")
        .enter_frame()
        .await
        .expect("into the preview");
    let shown = text_of(&client, "body").await;
    assert!(
        shown.contains("Insert text here, dear Amy"),
        "the preview as Amy: {shown}"
    );
    // The email's own styles apply (the preview has its own policy): the button's rounded
    // corners come from its inline style alone.
    let styled = js(&client, "const td = [...document.querySelectorAll('td')].filter(td => td.textContent.trim() === 'Button').pop(); return !!td && getComputedStyle(td).borderTopLeftRadius").await;
    assert_eq!(styled, json!("3px"), "the button's inline style");
    client.enter_parent_frame().await.expect("the page");
    shot(&client, "25-broadcast-designed").await;

    // Test send, then send to the segment and watch the counts move.
    fill(&client, "to", "amy@example.net").await;
    submit(&client, "#test-send").await;
    wait_for_text(&client, "#insights", "passed,").await;
    let tested = sink.wait_for(1, Duration::from_secs(30)).await;
    let test_mail = String::from_utf8_lossy(&tested[0].data).into_owned();
    assert!(test_mail.contains("Subject: [Test] Winter sale"), "{test_mail}");
    submit(&client, "#send-broadcast").await;
    wait_for_text(&client, "#broadcast-status", "sent").await;
    let delivered = sink.wait_for(3, Duration::from_secs(30)).await;
    let sent: Vec<String> = delivered[1..]
        .iter()
        .map(|m| String::from_utf8_lossy(&m.data).into_owned())
        .collect();
    assert!(sent.iter().any(|m| m.contains("Amy")) && sent.iter().any(|m| m.contains("Ben")));
    for _ in 0..100 {
        client.refresh().await.expect("reload");
        if text_of(&client, "main").await.contains("Delivered\n2") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        text_of(&client, "#outcomes").await.contains("Delivered\n2"),
        "the counts moved"
    );
    shot(&client, "26-broadcast-designed-sent").await;

    // A template designed in the editor, then published.
    let template = call(
        addr,
        Method::POST,
        "/templates",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Receipt", "html": "<p>Thanks</p>" })),
    )
    .await
    .json()["id"]
        .as_str()
        .expect("template")
        .to_owned();
    client
        .goto(&format!("{base}/dashboard/templates/{template}/design"))
        .await
        .expect("the template editor");
    editor_loaded(&client).await;
    drag(&client, "Image", "Write your message", "mj-image", 1).await;
    // A dropped image opens the asset manager to pick one: take a shot of it and close it.
    wait_for_text(&client, ".gjs-mdl-container", "Select Image").await;
    shot(&client, "27-template-editor-image").await;
    click(&client, Locator::Css(".gjs-mdl-btn-close")).await;
    click(&client, Locator::Id("design-save")).await;
    wait_for_text(&client, "#design-status", "Saved").await;
    shot(&client, "28-template-editor").await;
    click(&client, Locator::Css(".designer-bar .back")).await;
    submit(&client, "form[action$=\"/publish\"]").await;
    wait_for_text(&client, ".notice", "Published").await;
    assert!(text_of(&client, "#versions").await.contains("designed"));
    shot(&client, "29-template-versions").await;
    shot_of(&client, "#versions", "29b-template-versions-list").await;

    client.close().await.expect("close the browser");
    drop(driver);
    assert!(running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_uploaded_in_the_asset_manager_is_placed_and_served() {
    // herald's public address must be where the browser reaches it: a port chosen first.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = util::config(dir.path(), "");
    config.http.listen = format!("127.0.0.1:{port}").parse().expect("an address");
    config.http.public_url = format!("http://127.0.0.1:{port}");
    let running = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    let addr = running.http_addr;
    let base = format!("http://{addr}");
    util::cookies::add_users(addr, &[("mia@example.com", "admin")], PASSWORD).await;
    let template = call(
        addr,
        Method::POST,
        "/templates",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Newsletter", "html": "<p>x</p>" })),
    )
    .await
    .json()["id"]
        .as_str()
        .expect("template")
        .to_owned();
    let file = dir.path().join("checks.png");
    std::fs::write(&file, include_bytes!("util/images/checks.png")).expect("the image file");

    let driver = Driver::start();
    let client = connect(&driver).await;
    sign_in(&client, &base, "mia@example.com").await;
    client
        .goto(&format!("{base}/dashboard/templates/{template}/design"))
        .await
        .expect("the template editor");
    editor_loaded(&client).await;
    // A dropped image opens the asset manager; the file goes in through its uploader.
    drag(&client, "Image", "Write your message", "mj-image", 1).await;
    wait_for_text(&client, ".gjs-mdl-container", "Select Image").await;
    client
        .find(Locator::Css(".gjs-am-file-uploader input[type=file]"))
        .await
        .expect("the uploader")
        .send_keys(&file.display().to_string())
        .await
        .expect("choose the file");
    wait_for_text(&client, "#design-status", "Uploaded checks.png").await;
    until(
        &client,
        "return [...document.querySelectorAll('.gjs-am-asset-image')].some(a => a.textContent.includes('checks.png'))",
        "the upload listed",
    )
    .await;
    shot(&client, "30-editor-image-uploaded").await;
    // Picking it places it in the design, and the canvas shows it from herald.
    click(
        &client,
        Locator::XPath("//*[contains(@class,'gjs-am-asset-image')][contains(.,'checks.png')]//*[contains(@class,'gjs-am-preview')]"),
    )
    .await;
    until(
        &client,
        "const i = heraldEditor.getWrapper().findType('mj-image')[0]; return !!i && (i.getAttributes().src || '').includes('/images/')",
        "the image placed",
    )
    .await;
    click(&client, Locator::Css(".gjs-mdl-btn-close")).await;
    until(
        &client,
        "const img = document.querySelector('.gjs-frame').contentDocument.querySelector('img[src*=\"/images/\"]'); return !!img && img.complete && img.naturalWidth === 160",
        "the image drawn in the canvas",
    )
    .await;
    shot(&client, "31-editor-image-placed").await;
    click(&client, Locator::Id("design-save")).await;
    wait_for_text(&client, "#design-status", "Saved").await;
    let stored = call(
        addr,
        Method::GET,
        &format!("/templates/{template}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    let html = stored["html"].as_str().expect("html");
    let public = format!("http://127.0.0.1:{port}/images/");
    assert!(
        html.contains(&public),
        "the design points at herald's public address: {html}"
    );

    // Removing it from the asset manager asks first; a "no" leaves it listed and served.
    let image_path = html
        .split(&public)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|file| format!("/images/{file}"))
        .expect("the image's address");
    let served = |path: String| async move { call(addr, Method::GET, &path, None, None).await.status };
    client
        .execute("heraldEditor.AssetManager.open(); return true;", vec![])
        .await
        .expect("open the asset manager");
    click_remove(&client, "checks.png").await;
    client.dismiss_alert().await.expect("say no");
    until(
        &client,
        "return [...document.querySelectorAll('.gjs-am-asset-image')].some(a => a.textContent.includes('checks.png'))",
        "the image still listed",
    )
    .await;
    assert_eq!(served(image_path.clone()).await, StatusCode::OK);
    shot(&client, "32-editor-image-remove").await;
    click_remove(&client, "checks.png").await;
    client.accept_alert().await.expect("say yes");
    wait_for_text(&client, "#design-status", "Removed checks.png").await;
    until(
        &client,
        "return ![...document.querySelectorAll('.gjs-am-asset-image')].some(a => a.textContent.includes('checks.png'))",
        "the image no longer listed",
    )
    .await;
    shot(&client, "33-editor-image-removed").await;
    assert_eq!(served(image_path).await, StatusCode::NOT_FOUND);

    client.close().await.expect("close the browser");
    drop(driver);
    assert!(running.shutdown().await);
}
