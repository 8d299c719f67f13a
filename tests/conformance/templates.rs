//! What every [`TemplateStore`] does, run on the RocksDB one and the PostgreSQL one: a
//! team's templates are found by id and by alias in any case (what a send names one by), in
//! their own team only; their list items page newest first and are their summaries,
//! rewritten with them; they are counted per team (what the per-team limit is checked
//! against); an alias follows its template through every change and is freed when it goes;
//! a deleted template is gone every way; and erasing a team leaves none of its templates
//! and every other team's.

use herald::storage::page::{Cursor, PageRequest};
use herald::templates::{
    PostgresTemplates, RocksTemplates, Template, TemplateStore, TemplateSummary, Variable, VariableType, Version,
};
use herald_queue::{Id, Store};

use crate::conformance::{ids_of, page, pages_go_newest_first, postgres, rocksdb};

/// Passes of `erase_team` a team of a few templates may take, at most.
const ERASE_PASSES_MAX: usize = 1_000;

/// A version saying `html`; `ids` is where ids and times come from.
fn version(ids: &Store, html: &str) -> Version {
    Version {
        id: ids.next_id(),
        from: Some("Acme <news@example.com>".into()),
        subject: Some("Hello {{{NAME}}}".into()),
        reply_to: Vec::new(),
        html: html.into(),
        text: None,
        variables: Vec::new(),
        mjml: None,
        created_at: ids.now(),
    }
}

/// A variable `key` of type `kind` with `fallback_value`.
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

/// A new template of `team_id` (a draft), as the templates service makes one.
fn template(ids: &Store, team_id: Id, name: &str, alias: Option<&str>) -> Template {
    let draft = version(ids, &format!("<p>{name}</p>"));
    Template {
        id: ids.next_id(),
        team_id,
        name: name.into(),
        alias: alias.map(Into::into),
        published: None,
        published_at: None,
        draft: Some(draft),
        history: Vec::new(),
        created_at: ids.now(),
        updated_at: ids.now(),
    }
}

/// The ids on `team_id`'s page from `request`, and whether more lie beyond it.
fn listed(templates: &dyn TemplateStore, team_id: Id, request: &PageRequest) -> (Vec<Id>, bool) {
    let (page, more) = templates.page(team_id, request).expect("page");
    (ids_of(&page, |s| s.id), more)
}

/// What every [`TemplateStore`] does: `ids` is where ids and times come from.
fn template_store_conformance(templates: &dyn TemplateStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    absent_templates_read_as_none(templates, ids, team);
    let made = templates_are_found_by_id_and_by_alias_in_their_team(templates, ids, team, other);
    list_items_page_newest_first(templates, team, &made);
    a_published_template_reads_published_with_its_list_item(templates, ids, &made[0]);
    an_alias_follows_its_template_through_changes(templates, ids, &made[1]);
    a_deleted_template_is_gone_every_way_alone(templates, &made, other);
    an_erased_team_keeps_no_template_and_others_keep_theirs(templates, ids, &made, other);
}

/// Nothing is found where nothing was written, and a team with nothing has nothing to
/// erase.
fn absent_templates_read_as_none(templates: &dyn TemplateStore, ids: &Store, team: Id) {
    assert!(templates.get(team, ids.next_id()).expect("get").is_none());
    assert!(templates.by_alias(team, "welcome").expect("by alias").is_none());
    assert_eq!(listed(templates, team, &page(10, Cursor::Start)), (Vec::new(), false));
    assert_eq!(templates.count(team).expect("count"), 0);
    assert!(!templates.erase_team(team).expect("erase"), "nothing is left");
}

/// Five templates of `team` (one without an alias) and one of `other` under an alias
/// `team` uses too: each is found by id and by alias in any case, in its own team only,
/// and each team counts its own. Returns `team`'s, oldest first.
fn templates_are_found_by_id_and_by_alias_in_their_team(
    templates: &dyn TemplateStore,
    ids: &Store,
    team: Id,
    other: Id,
) -> Vec<Template> {
    let made: Vec<Template> = (0..5)
        .map(|n| {
            let alias = format!("alias-{n}");
            template(ids, team, &format!("Template {n}"), (n != 3).then_some(alias.as_str()))
        })
        .collect();
    for one in &made {
        templates.put(one, None).expect("put");
    }
    let namesake = template(ids, other, "Theirs", Some("alias-2"));
    templates.put(&namesake, None).expect("put");

    for one in &made {
        assert_eq!(templates.get(team, one.id).expect("get").as_ref(), Some(one));
        if let Some(alias) = &one.alias {
            assert_eq!(templates.by_alias(team, alias).expect("by alias").as_ref(), Some(one));
        }
    }
    let wanted = &made[2];
    assert!(
        templates.get(other, wanted.id).expect("get").is_none(),
        "a team sees its own only"
    );
    assert!(templates.get(team, namesake.id).expect("get").is_none());
    assert_eq!(
        templates.by_alias(team, "ALIAS-2").expect("by alias").as_ref(),
        Some(wanted),
        "an alias is found in any case"
    );
    assert_eq!(
        templates.by_alias(other, "alias-2").expect("by alias"),
        Some(namesake.clone()),
        "an alias is a team's own"
    );
    assert!(templates.by_alias(other, "alias-1").expect("by alias").is_none());
    assert!(templates.by_alias(team, "alias-9").expect("by alias").is_none());
    assert_eq!(templates.count(team).expect("count"), 5);
    assert_eq!(templates.count(other).expect("count"), 1);
    let (theirs, more) = templates.page(other, &page(10, Cursor::Start)).expect("page");
    assert_eq!((theirs, more), (vec![namesake.summary()], false));
    made
}

/// Pages of list items keep the cursor cases of [`pages_go_newest_first`], and each item
/// is the template's summary.
fn list_items_page_newest_first(templates: &dyn TemplateStore, team: Id, made: &[Template]) {
    pages_go_newest_first(|request| listed(templates, team, request), &ids_of(made, |t| t.id));
    let (whole, more) = templates.page(team, &page(5, Cursor::Start)).expect("page");
    assert!(!more);
    let summaries: Vec<TemplateSummary> = made.iter().rev().map(Template::summary).collect();
    assert_eq!(whole, summaries);
}

/// Publishing rewrites the template and its list item together, and is not another
/// template.
fn a_published_template_reads_published_with_its_list_item(
    templates: &dyn TemplateStore,
    ids: &Store,
    before: &Template,
) {
    let published = Template {
        published: before.draft.clone(),
        published_at: Some(ids.now()),
        draft: None,
        name: "Published".into(),
        updated_at: ids.now(),
        ..before.clone()
    };
    templates.put(&published, Some(before)).expect("put");
    let team = before.team_id;
    assert_eq!(templates.get(team, before.id).expect("get").as_ref(), Some(&published));
    let alias = before.alias.as_deref().expect("an alias");
    assert_eq!(
        templates.by_alias(team, alias).expect("by alias").as_ref(),
        Some(&published)
    );
    let (items, _) = templates.page(team, &page(10, Cursor::Start)).expect("page");
    let item = items.iter().find(|s| s.id == before.id).expect("listed");
    assert_eq!(*item, published.summary());
    assert!(item.published, "the list says so");
    assert_eq!(
        templates.count(team).expect("count"),
        5,
        "a change is not another template"
    );

    // A new draft over the published version, with variables and its history, newest
    // first: every part of every version reads back as written, in order.
    let edited = Template {
        draft: Some(Version {
            reply_to: vec!["a@example.com".into(), "b@example.com".into()],
            text: Some("Edited".into()),
            mjml: Some("<mjml></mjml>".into()),
            variables: vec![
                variable(ids, "NAME", VariableType::String, Some(serde_json::json!("friend"))),
                variable(ids, "COUNT", VariableType::Number, Some(serde_json::json!(3))),
                variable(ids, "PLAIN", VariableType::String, None),
            ],
            ..version(ids, "<p>Edited {{{NAME}}}</p>")
        }),
        history: vec![
            Version {
                variables: vec![variable(ids, "OLD", VariableType::Number, Some(serde_json::json!(1.5)))],
                ..version(ids, "<p>Older</p>")
            },
            version(ids, "<p>Oldest</p>"),
        ],
        updated_at: ids.now(),
        ..published.clone()
    };
    templates.put(&edited, Some(&published)).expect("put");
    assert_eq!(templates.get(team, before.id).expect("get"), Some(edited.clone()));
    assert_eq!(templates.by_alias(team, alias).expect("by alias"), Some(edited.clone()));
    let (items, _) = templates.page(team, &page(10, Cursor::Start)).expect("page");
    assert_eq!(items.iter().find(|s| s.id == before.id), Some(&edited.summary()));
}

/// An alias renamed, changed only in case, dropped and taken back: each time the
/// template is found by its alias of the moment alone, and a freed alias can be taken
/// by another template.
fn an_alias_follows_its_template_through_changes(templates: &dyn TemplateStore, ids: &Store, before: &Template) {
    let team = before.team_id;
    let found = |alias: &str| templates.by_alias(team, alias).expect("by alias");
    assert_eq!(found("alias-1"), Some(before.clone()), "read before the change");

    let renamed = Template {
        alias: Some("renamed".into()),
        ..before.clone()
    };
    templates.put(&renamed, Some(before)).expect("put");
    assert_eq!(found("renamed"), Some(renamed.clone()));
    assert!(found("alias-1").is_none(), "the old alias goes");

    let recased = Template {
        alias: Some("Renamed".into()),
        ..renamed.clone()
    };
    templates.put(&recased, Some(&renamed)).expect("put");
    assert_eq!(found("renamed"), Some(recased.clone()), "a change of case keeps it");
    assert_eq!(found("RENAMED"), Some(recased.clone()));

    let dropped = Template {
        alias: None,
        ..recased.clone()
    };
    templates.put(&dropped, Some(&recased)).expect("put");
    assert!(found("renamed").is_none(), "no alias, nothing found by the last one");
    assert_eq!(templates.get(team, before.id).expect("get"), Some(dropped.clone()));

    let taker = template(ids, team, "Taker", Some("renamed"));
    templates.put(&taker, None).expect("put");
    assert_eq!(found("renamed"), Some(taker.clone()), "a freed alias is free");
    assert_eq!(templates.count(team).expect("count"), 6);
    templates.delete(&taker).expect("delete");
    assert!(found("renamed").is_none(), "deleted with its template");

    let restored = Template {
        alias: Some("alias-1".into()),
        ..dropped.clone()
    };
    templates.put(&restored, Some(&dropped)).expect("put");
    assert_eq!(found("alias-1"), Some(restored));
    assert!(found("renamed").is_none());
    assert_eq!(templates.count(team).expect("count"), 5);
}

/// A deleted template is gone by id, by alias (read just before), from pages and from
/// the count; the team's others and another team's template under the same alias stay.
fn a_deleted_template_is_gone_every_way_alone(templates: &dyn TemplateStore, made: &[Template], other: Id) {
    let gone = &made[2];
    let team = gone.team_id;
    assert_eq!(
        templates.by_alias(team, "alias-2").expect("by alias").as_ref(),
        Some(gone),
        "read before the delete"
    );
    templates.delete(gone).expect("delete");
    assert!(templates.get(team, gone.id).expect("get").is_none());
    assert!(templates.by_alias(team, "alias-2").expect("by alias").is_none());
    assert!(
        templates.by_alias(other, "alias-2").expect("by alias").is_some(),
        "another team's alias stays"
    );
    assert_eq!(templates.count(team).expect("count"), 4);
    assert_eq!(templates.count(other).expect("count"), 1);
    assert_eq!(
        listed(templates, team, &page(10, Cursor::Start)),
        (vec![made[4].id, made[3].id, made[1].id, made[0].id], false)
    );
    assert_eq!(
        templates.by_alias(team, "alias-4").expect("by alias").as_ref(),
        Some(&made[4])
    );

    // Without an alias, a delete takes the template alone.
    templates.delete(&made[3]).expect("delete");
    assert!(templates.get(team, made[3].id).expect("get").is_none());
    assert_eq!(templates.count(team).expect("count"), 3);
    assert_eq!(
        templates.by_alias(team, "alias-0").expect("by alias").map(|t| t.id),
        Some(made[0].id)
    );
}

/// Erasing a team, pass by pass until it answers that none is left, leaves none of its
/// templates by id, by alias, in a page or in its count, and every other team's as they
/// were, its alias the same as one of the erased team's.
fn an_erased_team_keeps_no_template_and_others_keep_theirs(
    templates: &dyn TemplateStore,
    ids: &Store,
    made: &[Template],
    other: Id,
) {
    let team = made[0].team_id;
    let left: Vec<Template> = [4, 1, 0]
        .iter()
        .map(|&n| templates.get(team, made[n].id).expect("get").expect("still there"))
        .collect();
    let theirs = templates.by_alias(other, "alias-2").expect("by alias").expect("theirs");
    let mut passes = 0;
    while templates.erase_team(team).expect("erase") {
        passes += 1;
        assert!(passes < ERASE_PASSES_MAX, "erasing never ends");
    }
    assert!(!templates.erase_team(team).expect("erase"), "none is left");
    for one in &left {
        assert!(
            templates.get(team, one.id).expect("get").is_none(),
            "{} erased",
            one.name
        );
    }
    for alias in ["alias-0", "alias-1", "alias-4"] {
        assert!(templates.by_alias(team, alias).expect("by alias").is_none(), "{alias}");
    }
    assert_eq!(templates.count(team).expect("count"), 0);
    assert_eq!(listed(templates, team, &page(10, Cursor::Start)), (Vec::new(), false));

    assert_eq!(templates.get(other, theirs.id).expect("get"), Some(theirs.clone()));
    assert_eq!(
        templates.by_alias(other, "alias-2").expect("by alias"),
        Some(theirs.clone())
    );
    assert_eq!(templates.count(other).expect("count"), 1);
    assert_eq!(
        listed(templates, other, &page(10, Cursor::Start)),
        (vec![theirs.id], false)
    );

    // An erased team's alias is free in it again.
    let again = template(ids, team, "Again", Some("alias-0"));
    templates.put(&again, None).expect("put");
    assert_eq!(templates.by_alias(team, "alias-0").expect("by alias"), Some(again));
    assert_eq!(templates.count(team).expect("count"), 1);
}

#[test]
fn rocksdb_templates_keep_the_contract() {
    let (_dir, store) = rocksdb();
    template_store_conformance(&RocksTemplates::new(store.clone()), &store);
}

#[test]
fn postgres_templates_keep_the_contract() {
    let (_dir, store) = rocksdb();
    template_store_conformance(&PostgresTemplates::new(postgres()), &store);
}
