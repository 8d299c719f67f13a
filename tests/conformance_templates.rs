//! [`TemplateStore`] as a contract: the suite any implementation must pass, run here
//! against the RocksDB one on a real store in a temp directory. A team's templates by id
//! and by alias (what a send names one by), pages of their list items, and their count
//! (what the per-team limit is checked against).

// The suite writes no events, so the outbox helper goes unused here.
#[allow(dead_code)]
#[path = "util/conformance.rs"]
mod conformance;

use conformance::{ids_of, page, pages_go_newest_first, rocksdb};
use herald::storage::page::{Cursor, PageRequest};
use herald::templates::{RocksTemplates, Template, TemplateStore, TemplateSummary, Version};
use herald_queue::{Id, Store};

/// A version saying `html`.
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

/// What every [`TemplateStore`] does: `ids` is where ids and times come from.
fn template_store_conformance(templates: &dyn TemplateStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    absent_templates_read_as_none(templates, ids, team);
    let made = templates_are_found_by_id_and_by_alias_in_their_team(templates, ids, team, other);
    list_items_page_newest_first(templates, team, &made);
    a_published_template_reads_published_with_its_list_item(templates, ids, &made[0]);
    an_alias_follows_its_template_through_changes(templates, ids, &made[1]);
    a_deleted_template_is_gone_every_way_alone(templates, &made, other);
    an_erased_team_keeps_no_template_and_others_keep_theirs(templates, ids);
}

/// Erasing a team leaves none of its templates, by id, by alias or in a page, and every
/// other team's as they were.
fn an_erased_team_keeps_no_template_and_others_keep_theirs(templates: &dyn TemplateStore, ids: &Store) {
    let (leaving, staying) = (ids.next_id(), ids.next_id());
    let gone = template(ids, leaving, "Gone", Some("same-alias"));
    let kept = template(ids, staying, "Kept", Some("same-alias"));
    templates.put(&gone, None).expect("put");
    templates.put(&kept, None).expect("put");
    while templates.erase_team(leaving).expect("erase") {}
    assert!(templates.get(leaving, gone.id).expect("get").is_none());
    assert!(templates.by_alias(leaving, "same-alias").expect("by alias").is_none());
    assert_eq!(templates.count(leaving).expect("count"), 0);
    assert!(
        templates
            .page(leaving, &page(10, Cursor::Start))
            .expect("page")
            .0
            .is_empty()
    );
    assert_eq!(
        templates
            .by_alias(staying, "same-alias")
            .expect("by alias")
            .map(|t| t.id),
        Some(kept.id)
    );
    assert_eq!(templates.count(staying).expect("count"), 1);
}

/// Nothing is found where nothing was written.
fn absent_templates_read_as_none(templates: &dyn TemplateStore, ids: &Store, team: Id) {
    assert!(templates.get(team, ids.next_id()).expect("get").is_none());
    assert!(templates.by_alias(team, "welcome").expect("by alias").is_none());
    assert_eq!(
        templates.page(team, &page(10, Cursor::Start)).expect("page"),
        (Vec::new(), false)
    );
    assert_eq!(templates.count(team).expect("count"), 0);
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

    let wanted = &made[2];
    assert_eq!(templates.get(team, wanted.id).expect("get").as_ref(), Some(wanted));
    assert!(
        templates.get(other, wanted.id).expect("get").is_none(),
        "a team sees its own only"
    );
    assert_eq!(
        templates.by_alias(team, "alias-2").expect("by alias").as_ref(),
        Some(wanted)
    );
    assert_eq!(
        templates.by_alias(team, "ALIAS-2").expect("by alias").as_ref(),
        Some(wanted),
        "an alias is found in any case"
    );
    assert_eq!(
        templates.by_alias(other, "alias-2").expect("by alias"),
        Some(namesake),
        "an alias is a team's own"
    );
    assert!(templates.by_alias(team, "alias-9").expect("by alias").is_none());
    assert_eq!(templates.count(team).expect("count"), 5);
    assert_eq!(templates.count(other).expect("count"), 1);
    made
}

/// Pages of list items keep the cursor cases of [`pages_go_newest_first`], and each item
/// is the template's summary.
fn list_items_page_newest_first(templates: &dyn TemplateStore, team: Id, made: &[Template]) {
    let listed = |request: &PageRequest| {
        let (page, more) = templates.page(team, request).expect("page");
        (ids_of(&page, |s| s.id), more)
    };
    pages_go_newest_first(listed, &ids_of(made, |t| t.id));
    let (whole, _) = templates.page(team, &page(5, Cursor::Start)).expect("page");
    let summaries: Vec<TemplateSummary> = made.iter().rev().map(Template::summary).collect();
    assert_eq!(whole, summaries);
}

/// Publishing rewrites the template and its list item together.
fn a_published_template_reads_published_with_its_list_item(
    templates: &dyn TemplateStore,
    ids: &Store,
    before: &Template,
) {
    let published = Template {
        published: before.draft.clone(),
        published_at: Some(ids.now()),
        draft: None,
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
    let (listed, _) = templates.page(team, &page(10, Cursor::Start)).expect("page");
    let item = listed.iter().find(|s| s.id == before.id).expect("listed");
    assert_eq!(*item, published.summary());
    assert!(item.published, "the list says so");
    assert_eq!(
        templates.count(team).expect("count"),
        5,
        "a change is not another template"
    );
}

/// An alias renamed, changed only in case, dropped and taken back: each time the
/// template is found by its alias of the moment alone, and a freed alias can be taken
/// by another template.
fn an_alias_follows_its_template_through_changes(templates: &dyn TemplateStore, ids: &Store, before: &Template) {
    let team = before.team_id;
    let found = |alias: &str| templates.by_alias(team, alias).expect("by alias");

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
    templates.delete(&taker).expect("delete");

    let restored = Template {
        alias: Some("alias-1".into()),
        ..dropped.clone()
    };
    templates.put(&restored, Some(&dropped)).expect("put");
    assert_eq!(found("alias-1"), Some(restored));
    assert!(found("renamed").is_none());
    assert_eq!(templates.count(team).expect("count"), 5);
}

/// A deleted template is gone by id, by alias, from pages and from the count; the
/// team's others and another team's template under the same alias stay.
fn a_deleted_template_is_gone_every_way_alone(templates: &dyn TemplateStore, made: &[Template], other: Id) {
    let gone = &made[2];
    let team = gone.team_id;
    templates.delete(gone).expect("delete");
    assert!(templates.get(team, gone.id).expect("get").is_none());
    assert!(templates.by_alias(team, "alias-2").expect("by alias").is_none());
    assert!(
        templates.by_alias(other, "alias-2").expect("by alias").is_some(),
        "another team's alias stays"
    );
    assert_eq!(templates.count(team).expect("count"), 4);
    assert_eq!(templates.count(other).expect("count"), 1);
    let (left, more) = templates.page(team, &page(10, Cursor::Start)).expect("page");
    assert_eq!(
        ids_of(&left, |s| s.id),
        vec![made[4].id, made[3].id, made[1].id, made[0].id]
    );
    assert!(!more);
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

/// The RocksDB templates pass the suite.
#[test]
fn rocksdb_templates_keep_the_contract() {
    let (_dir, store) = rocksdb();
    template_store_conformance(&RocksTemplates::new(store.clone()), &store);
}
