//! Users with their invitations and sessions, templates with their versions, and images
//! copied and read back equal, every way the stores find them.

use herald::images::{Format, Image};
use herald::storage::page::{Cursor, PageRequest};
use herald::templates::{Template, Variable, VariableType, Version};
use herald::users::model::Session;
use herald::users::{Role, User};
use herald_queue::{Id, Store};

use crate::{Copying, count};

/// Every item in one page.
fn all() -> PageRequest {
    PageRequest {
        limit: 100,
        cursor: Cursor::Start,
    }
}

/// A user of `team_id` at `email`: signed up with a password, a second factor and
/// recovery codes, or invited (none of them yet).
fn user(ids: &Store, team_id: Id, email: &str, invited: bool) -> User {
    User {
        id: ids.next_id(),
        team_id,
        email: email.into(),
        role: if invited { Role::Member } else { Role::Owner },
        password_hash: (!invited).then(|| "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into()),
        totp_secret: (!invited).then(|| vec![1, 2, 3, 4, 5]),
        recovery_codes: if invited {
            Vec::new()
        } else {
            vec!["ab".repeat(32), "cd".repeat(32)]
        },
        created_at: ids.now(),
    }
}

/// A session of `user`, enrolling a second factor.
fn session(ids: &Store, user: &User) -> Session {
    Session {
        team_id: user.team_id,
        user_id: user.id,
        created_at: ids.now(),
        last_seen: ids.now(),
        mfa_passed: true,
        csrf: format!("csrf-{}", ids.next_id()),
        pending_totp: Some(vec![9, 8, 7]),
    }
}

/// Users of two teams (one erased after its user was invited), their invitations and
/// sessions come out of PostgreSQL as they went in: by id, by address in any case, by
/// team, by invitation and by session token; an invitation whose user is gone is not
/// copied, and a session is, as both stores keep it.
#[test]
fn users_invitations_and_sessions_are_copied_as_they_were() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let (team, erased) = (ids.next_id(), ids.next_id());
    let owner = user(ids, team, "Owner@Example.com", false);
    let invited = user(ids, team, "invited@example.com", true);
    let gone = user(ids, erased, "gone@example.com", true);
    let expires_at = ids.now().saturating_add(std::time::Duration::from_secs(3600));
    assert!(local.users.insert(&owner, None).expect("insert"));
    assert!(
        local
            .users
            .insert(&invited, Some(("invited-token", expires_at)))
            .expect("insert")
    );
    assert!(
        local
            .users
            .insert(&gone, Some(("gone-token", expires_at)))
            .expect("insert")
    );
    let (owners, gones) = (session(ids, &owner), session(ids, &gone));
    local.users.put_session("owner-session", &owners).expect("session");
    local.users.put_session("gone-session", &gones).expect("session");
    assert!(!local.users.erase_team(erased).expect("erase"));

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "users"), 2);
    assert_eq!(count(&copied, "invitations"), 1, "the erased user's is not copied");
    assert_eq!(count(&copied, "sessions"), 2);

    for made in [&owner, &invited] {
        assert_eq!(shared.users.get(team, made.id).expect("get").as_ref(), Some(made));
        let address = made.email.to_uppercase();
        assert_eq!(shared.users.by_email(&address).expect("by email").as_ref(), Some(made));
    }
    assert_eq!(
        shared.users.team_users(team).expect("team users"),
        vec![owner, invited.clone()]
    );
    assert!(shared.users.team_users(erased).expect("team users").is_empty());
    assert_eq!(
        shared.users.invited("invited-token", ids.now()).expect("invited"),
        Some(invited)
    );
    assert_eq!(
        shared.users.invited("invited-token", expires_at).expect("invited"),
        None,
        "it expires when it did"
    );
    assert_eq!(shared.users.invited("gone-token", ids.now()).expect("invited"), None);
    assert_eq!(shared.users.session("owner-session").expect("session"), Some(owners));
    assert_eq!(shared.users.session("gone-session").expect("session"), Some(gones));
    assert_eq!(shared.users.session("no such session").expect("session"), None);
}

/// A version saying `html` with `variables`.
fn version(ids: &Store, html: &str, variables: Vec<Variable>) -> Version {
    Version {
        id: ids.next_id(),
        from: Some("Acme <news@example.com>".into()),
        subject: Some("Hello {{{NAME}}}".into()),
        reply_to: vec!["help@example.com".into(), "sales@example.com".into()],
        html: html.into(),
        text: Some(format!("text of {html}")),
        variables,
        mjml: Some("<mjml></mjml>".into()),
        created_at: ids.now(),
    }
}

/// A variable `key`.
fn variable(ids: &Store, key: &str, kind: VariableType, fallback_value: Option<serde_json::Value>) -> Variable {
    Variable {
        id: ids.next_id(),
        key: key.into(),
        kind,
        fallback_value,
        created_at: ids.now(),
        updated_at: ids.now(),
    }
}

/// Templates with every kind of version (published, draft, history, each with
/// variables) and alias (one renamed, one without) come out of PostgreSQL as they went
/// in: by id, by alias in any case (not by the alias given up), listed and counted.
#[test]
fn templates_with_their_versions_and_aliases_are_copied_as_they_were() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let (team, other) = (ids.next_id(), ids.next_id());
    let name = || variable(ids, "NAME", VariableType::String, Some(serde_json::json!("friend")));
    let age = || variable(ids, "AGE", VariableType::Number, Some(serde_json::json!(42)));
    let full = Template {
        id: ids.next_id(),
        team_id: team,
        name: "Welcome".into(),
        alias: Some("welcome-old".into()),
        published: Some(version(ids, "<p>published</p>", vec![name(), age()])),
        published_at: Some(ids.now()),
        draft: Some(version(ids, "<p>draft</p>", vec![name()])),
        history: vec![
            version(ids, "<p>before</p>", vec![age()]),
            version(ids, "<p>first</p>", Vec::new()),
        ],
        created_at: ids.now(),
        updated_at: ids.now(),
    };
    local.templates.put(&full, None).expect("put");
    let renamed = Template {
        alias: Some("Welcome".into()),
        ..full.clone()
    };
    local.templates.put(&renamed, Some(&full)).expect("rename");
    let plain = Template {
        id: ids.next_id(),
        team_id: team,
        name: "Plain".into(),
        alias: None,
        published: None,
        published_at: None,
        draft: Some(version(ids, "<p>plain</p>", Vec::new())),
        history: Vec::new(),
        created_at: ids.now(),
        updated_at: ids.now(),
    };
    local.templates.put(&plain, None).expect("put");
    let theirs = Template {
        id: ids.next_id(),
        team_id: other,
        alias: Some("welcome".into()),
        ..plain.clone()
    };
    local.templates.put(&theirs, None).expect("put");

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "templates"), 3);

    for made in [&renamed, &plain, &theirs] {
        let found = shared.templates.get(made.team_id, made.id).expect("get");
        assert_eq!(found.as_ref(), Some(made));
    }
    let by_alias = |team_id, alias| shared.templates.by_alias(team_id, alias).expect("by alias");
    assert_eq!(by_alias(team, "WELCOME"), Some(renamed));
    assert_eq!(by_alias(team, "welcome-old"), None, "the alias given up stays free");
    assert_eq!(by_alias(other, "welcome"), Some(theirs));
    assert_eq!(
        shared.templates.page(team, &all()).expect("page"),
        local.templates.page(team, &all()).expect("page")
    );
    assert_eq!(shared.templates.count(team).expect("count"), 2);
    assert_eq!(shared.templates.count(other).expect("count"), 1);
}

/// An image of `team_id` with `bytes`.
fn image(ids: &Store, team_id: Id, format: Format, bytes: &[u8]) -> Image {
    Image {
        id: ids.next_id(),
        team_id,
        secret: rand::random(),
        name: format!("{format:?}.img"),
        format,
        bytes: bytes.len() as u64,
        created_at: ids.now(),
    }
}

/// Images (one larger than a block of either store) come out of PostgreSQL as they went
/// in: listed, counted and served with their bytes; a removed one is not copied.
#[test]
fn images_with_their_bytes_are_copied_as_they_were() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let (team, other) = (ids.next_id(), ids.next_id());
    let large: Vec<u8> = (0..200_000u32).map(|n| n as u8).collect();
    let contents: Vec<(Id, Format, Vec<u8>)> = vec![
        (team, Format::Png, b"\x89PNG\r\n\x1a\none".to_vec()),
        (team, Format::Webp, [b"RIFF\0\0\0\0WEBP".as_slice(), &large].concat()),
        (team, Format::Jpeg, vec![0xff, 0xd8, 0xff, 0xe0, 2]),
        (other, Format::Gif, b"GIF89a theirs".to_vec()),
    ];
    let made: Vec<(Image, Vec<u8>)> = contents
        .into_iter()
        .map(|(team_id, format, bytes)| {
            let one = image(ids, team_id, format, &bytes);
            local.images.put(&one, &bytes).expect("put");
            (one, bytes)
        })
        .collect();
    let removed = &made[2].0;
    assert!(local.images.delete(team, &removed.secret).expect("delete"));

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "images"), 3);

    assert_eq!(
        shared.images.newest(team, 10).expect("newest"),
        vec![made[1].0.clone(), made[0].0.clone()]
    );
    assert_eq!(
        shared.images.newest(other, 10).expect("newest"),
        vec![made[3].0.clone()]
    );
    assert_eq!(shared.images.count(team, 10).expect("count"), 2);
    for (one, bytes) in made.iter().filter(|(one, _)| one.id != removed.id) {
        let served = shared.images.served(one.team_id, &one.secret).expect("served");
        assert_eq!(
            served.map(|(format, bytes)| (format, bytes.to_vec())),
            Some((one.format, bytes.clone()))
        );
    }
    assert_eq!(shared.images.served(team, &removed.secret).expect("served"), None);
}
