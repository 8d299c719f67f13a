# frozen_string_literal: true

# A team's audience through the Ruby SDK: Resend::Contacts (by id and by address, with
# segments, topics and properties; and `audience_id`, which the SDK sends to the legacy
# /audiences/{id}/contacts), Resend::Segments, Resend::Contacts::Segments, Resend::Topics,
# Resend::Contacts::Topics, Resend::ContactProperties and Resend::Contacts::Imports (a
# multipart upload the SDK builds itself). Every test runs in a team of its own: a contact's
# topics list every topic of its team, and the lists must show only the test's own items.
#
# What this SDK puts on the wire that others do not: the identifier inside the PATCH bodies
# (`id` or `email` for contacts, `id` for contact properties, `topic_id` for topics), the
# identifier in the query of Contacts::Segments.list (`?contact_id=` / `?email=`), contact
# addresses unencoded in the path, and no body on POST /contacts/{c}/segments/{s}.

require_relative "test_helper"

class AudienceTest < Minitest::Test
  CONTACT_KEYS = %w[created_at email first_name id last_name unsubscribed].freeze

  def completed_import(import_id)
    eventually("import #{import_id} completed") do
      current = Resend::Contacts::Imports.get(import_id)
      assert_includes %w[queued in_progress completed], current[:status], current.inspect
      current if current[:status] == "completed"
    end
  end

  def csv(*lines)
    "#{lines.join("\n")}\n"
  end

  def test_contacts_create_get_list_update_remove
    with_key(team_key("contacts")) do
      email = "Rb.#{hex(4)}@Compat.Herald.test"
      created = Resend::Contacts.create({ email: email, first_name: "Ann", last_name: "Lee" })
      assert_equal({ "object" => "contact", "id" => created[:id] }, body(created))
      assert_uuid created[:id]
      conflict { Resend::Contacts.create({ email: email.downcase.sub("rb.", "Rb.") }) }
      second = Resend::Contacts.create({ email: "two.#{email}", unsubscribed: true })

      by_id = body(Resend::Contacts.get(id: created[:id]))
      assert_timestamp by_id.delete("created_at")
      assert_equal({ "object" => "contact", "id" => created[:id], "email" => email, "first_name" => "Ann",
                     "last_name" => "Lee", "unsubscribed" => false, "properties" => {} }, by_id)
      # By address: the SDK puts it into the path as it is.
      assert_equal created[:id], Resend::Contacts.get(email: email)[:id]
      assert_equal created[:id], Resend::Contacts.get(id: email)[:id]

      listed = Resend::Contacts.list
      assert_equal ["list", false], [listed[:object], listed[:has_more]]
      assert_equal [second[:id], created[:id]], ids(listed[:data]), "newest first"
      assert_equal CONTACT_KEYS, listed[:data][1].keys.sort
      page = Resend::Contacts.list({ limit: 1 })
      assert_equal [true, [second[:id]]], [page[:has_more], ids(page[:data])]
      rest = Resend::Contacts.list({ limit: 1, after: second[:id] })
      assert_equal [false, [created[:id]]], [rest[:has_more], ids(rest[:data])]

      # The SDK sends the identifier in the body too; it changes nothing.
      updated = Resend::Contacts.update({ email: email, unsubscribed: true, last_name: nil })
      assert_equal({ "object" => "contact", "id" => created[:id] }, body(updated))
      after = Resend::Contacts.get(id: created[:id])
      assert_equal [true, nil, "Ann", email], [after[:unsubscribed], after[:last_name], after[:first_name], after[:email]]
      Resend::Contacts.update({ id: created[:id], first_name: "Anna" })
      assert_equal "Anna", Resend::Contacts.get(email: email)[:first_name]

      removed = Resend::Contacts.remove(email: email)
      assert_equal({ "object" => "contact", "contact" => email, "id" => created[:id], "deleted" => true }, body(removed))
      not_found { Resend::Contacts.get(id: created[:id]) }
      removed = Resend::Contacts.remove(id: second[:id])
      assert_equal [second[:id], true], [removed[:contact], removed[:deleted]]
      assert_empty Resend::Contacts.list[:data]
      not_found { Resend::Contacts.get(email: unique_address("nobody")) }
      not_found { Resend::Contacts.update({ id: random_id, first_name: "x" }) }
      missing_field("email") { Resend::Contacts.create({ first_name: "No address" }) }
      unprocessable { Resend::Contacts.create({ email: "not an address" }) }
      assert_raises(ArgumentError) { Resend::Contacts.get({}) }
    end
  end

  def test_contacts_with_segments_topics_and_properties
    with_key(team_key("contacts-audience")) do
      vip = Resend::Segments.create({ name: "VIP" })
      trial = Resend::Segments.create({ name: "Trial" })
      news = Resend::Topics.create({ name: "News", default_subscription: "opt_out" })
      Resend::ContactProperties.create({ key: "plan", type: "string", fallback_value: "free" })
      Resend::ContactProperties.create({ key: "seats", type: "number" })
      Resend::ContactProperties.create({ key: "nickname", type: "string" })

      email = unique_address("full")
      created = Resend::Contacts.create({
                                          email: email, first_name: "Ada",
                                          segments: [{ id: vip[:id] }, trial[:id]],
                                          topics: [{ id: news[:id], subscription: "opt_in" }],
                                          properties: { seats: 3 }
                                        })
      assert_equal({ "object" => "contact", "id" => created[:id] }, body(created))
      outsider = Resend::Contacts.create({ email: unique_address("outsider") })

      contact = Resend::Contacts.get(id: created[:id])
      assert_equal [email, "Ada", nil, false], [contact[:email], contact[:first_name], contact[:last_name], contact[:unsubscribed]]
      # Every defined property with a value, or its fallback; values always as strings.
      assert_equal({ "plan" => { "type" => "string", "value" => "free" }, "seats" => { "type" => "number", "value" => "3" } },
                   contact[:properties])

      memberships = Resend::Contacts::Segments.list({ contact_id: created[:id] })
      assert_equal ["list", false], [memberships[:object], memberships[:has_more]]
      assert_equal [vip[:id], trial[:id]].sort, ids(memberships[:data]).sort
      vip_entry = memberships[:data].find { |s| s["id"] == vip[:id] }
      assert_equal %w[created_at id name], vip_entry.keys.sort
      assert_equal "VIP", vip_entry["name"]
      assert_equal [vip[:id], trial[:id]].sort, ids(Resend::Contacts::Segments.list({ email: email })[:data]).sort
      assert_equal 1, Resend::Contacts::Segments.list({ contact_id: created[:id], limit: 1 })[:data].length

      # A segment's contacts: GET /contacts?segment_id=.
      in_vip = Resend::Contacts.list({ segment_id: vip[:id] })
      assert_equal ["list", false, [created[:id]]], [in_vip[:object], in_vip[:has_more], ids(in_vip[:data])]
      assert_equal [created[:id], outsider[:id]].sort, ids(Resend::Contacts.list[:data]).sort

      topics = Resend::Contacts::Topics.list({ id: created[:id] })
      assert_equal ["list", false, 1], [topics[:object], topics[:has_more], topics[:data].length]
      topic = topics[:data][0]
      assert_timestamp topic.delete("created_at")
      assert_equal({ "id" => news[:id], "name" => "News", "description" => nil, "subscription" => "opt_in" }, topic)

      # PATCH properties: a value replaces, nil removes.
      updated = Resend::Contacts.update({ id: created[:id], properties: { plan: "pro", seats: nil, nickname: "Countess" } })
      assert_equal({ "object" => "contact", "id" => created[:id] }, body(updated))
      assert_equal({ "plan" => { "type" => "string", "value" => "pro" }, "nickname" => { "type" => "string", "value" => "Countess" } },
                   Resend::Contacts.get(email: email)[:properties])
      Resend::Contacts.update({ email: email, properties: { plan: nil, seats: 12 } })
      assert_equal({ "plan" => { "type" => "string", "value" => "free" }, "seats" => { "type" => "number", "value" => "12" },
                     "nickname" => { "type" => "string", "value" => "Countess" } },
                   Resend::Contacts.get(id: created[:id])[:properties])
      [{ unknown_key: "x" }, { seats: "lots" }].each do |properties|
        unprocessable { Resend::Contacts.update({ id: created[:id], properties: properties }) }
        unprocessable { Resend::Contacts.create({ email: unique_address("refused"), properties: properties }) }
      end
      refused = unique_address("refused")
      not_found { Resend::Contacts.create({ email: refused, segments: [{ id: random_id }] }) }
      not_found { Resend::Contacts.create({ email: refused, topics: [{ id: random_id, subscription: "opt_in" }] }) }
      not_found { Resend::Contacts.get(email: refused) }
    end
  end

  def test_contacts_with_audience_id_go_to_the_legacy_paths
    with_key(team_key("contacts-legacy")) do
      audience = Resend::Segments.create({ name: "Legacy #{hex(4)}" })
      email = unique_address("legacy")
      # POST /audiences/{id}/contacts (the SDK leaves `properties` out, `audience_id` in).
      created = Resend::Contacts.create({ audience_id: audience[:id], email: email, first_name: "Lin", properties: { x: 1 } })
      assert_equal({ "object" => "contact", "id" => created[:id] }, body(created))
      listed = Resend::Contacts.list({ audience_id: audience[:id] })
      assert_equal ["list", [created[:id]]], [listed[:object], ids(listed[:data])]
      via_audience = Resend::Contacts.get(audience_id: audience[:id], email: email)
      assert_equal body(Resend::Contacts.get(id: created[:id])), body(via_audience)
      assert_equal "Lin", via_audience[:first_name]
      updated = Resend::Contacts.update({ audience_id: audience[:id], id: created[:id], last_name: "Wu" })
      assert_equal({ "object" => "contact", "id" => created[:id] }, body(updated))
      assert_equal "Wu", Resend::Contacts.get(id: created[:id])[:last_name]
      removed = Resend::Contacts.remove(audience_id: audience[:id], id: created[:id])
      assert_equal({ "object" => "contact", "contact" => created[:id], "id" => created[:id], "deleted" => true }, body(removed))
      not_found { Resend::Contacts.get(id: created[:id]) }
      # Resend::Audiences is the SDK's deprecated name for Segments.
      assert_same Resend::Segments, Resend::Audiences
    end
  end

  def test_segments_create_get_list_remove
    key = team_key("segments")
    wire = raw(:post, "/segments", key: key, json: { name: "Wire" })
    assert_equal 201, wire.status, wire.text
    with_key(key) do
      name = "Newsletter #{hex(4)}"
      created = Resend::Segments.create({ name: name })
      assert_equal({ "object" => "segment", "id" => created[:id], "name" => name }, body(created))
      assert_uuid created[:id]
      segment = body(Resend::Segments.get(created[:id]))
      assert_timestamp segment["created_at"]
      assert_equal({ "object" => "segment", "id" => created[:id], "name" => name, "created_at" => segment["created_at"] }, segment)

      listed = Resend::Segments.list
      assert_equal ["list", false], [listed[:object], listed[:has_more]]
      assert_equal [created[:id], wire.json["id"]], ids(listed[:data]), "newest first"
      assert_equal({ "id" => created[:id], "name" => name, "created_at" => segment["created_at"] }, listed[:data][0])
      first = Resend::Segments.list({ limit: 1 })
      assert_equal [true, [created[:id]]], [first[:has_more], ids(first[:data])]
      second = Resend::Segments.list({ limit: 1, after: created[:id] })
      assert_equal [false, [wire.json["id"]]], [second[:has_more], ids(second[:data])]
      assert_equal [created[:id]], ids(Resend::Segments.list({ limit: 1, before: wire.json["id"] })[:data])
      unprocessable { Resend::Segments.list({ limit: 101 }) }

      removed = Resend::Segments.remove(created[:id])
      assert_equal({ "object" => "segment", "id" => created[:id], "deleted" => true }, body(removed))
      not_found { Resend::Segments.get(created[:id]) }
      assert_equal [wire.json["id"]], ids(Resend::Segments.list[:data])
      not_found { Resend::Segments.get(random_id) }
      unprocessable { Resend::Segments.get("not-a-segment") }
      missing_field("name") { Resend::Segments.create({}) }
    end
  end

  def test_contact_segments_add_list_remove
    with_key(team_key("contact-segments")) do
      a, b, c = %w[A B C].map { |name| Resend::Segments.create({ name: name }) }
      email = unique_address("member")
      contact = Resend::Contacts.create({ email: email })
      assert_empty Resend::Contacts::Segments.list({ contact_id: contact[:id] })[:data]

      added = Resend::Contacts::Segments.add({ contact_id: contact[:id], segment_id: a[:id] })
      assert_equal({ "object" => "contact_segment", "id" => a[:id], "contact_id" => contact[:id], "segment_id" => a[:id] },
                   body(added))
      by_email = Resend::Contacts::Segments.add({ email: email, segment_id: b[:id] })
      assert_equal [b[:id], contact[:id]], [by_email[:id], by_email[:contact_id]]
      Resend::Contacts::Segments.add({ contact_id: contact[:id], segment_id: c[:id] })
      listed = Resend::Contacts::Segments.list({ contact_id: contact[:id] })
      assert_equal [a[:id], b[:id], c[:id]].sort, ids(listed[:data]).sort
      assert_equal [contact[:id]], ids(Resend::Contacts.list({ segment_id: b[:id] })[:data])

      removed = Resend::Contacts::Segments.remove({ contact_id: contact[:id], segment_id: a[:id] })
      assert_equal({ "object" => "contact_segment", "id" => a[:id], "contact_id" => contact[:id], "segment_id" => a[:id],
                     "deleted" => true }, body(removed))
      removed = Resend::Contacts::Segments.remove({ email: email, segment_id: b[:id] })
      assert_equal [b[:id], true], [removed[:id], removed[:deleted]]
      assert_equal [c[:id]], ids(Resend::Contacts::Segments.list({ email: email })[:data])
      assert_empty Resend::Contacts.list({ segment_id: a[:id] })[:data]
      # A deleted segment leaves its contacts' lists.
      Resend::Segments.remove(c[:id])
      assert_empty Resend::Contacts::Segments.list({ contact_id: contact[:id] })[:data]

      not_found { Resend::Contacts::Segments.add({ contact_id: contact[:id], segment_id: random_id }) }
      not_found { Resend::Contacts::Segments.add({ contact_id: random_id, segment_id: a[:id] }) }
      assert_raises(ArgumentError) { Resend::Contacts::Segments.add({ contact_id: contact[:id] }) }
    end
  end

  def test_contact_topics_list_and_update
    with_key(team_key("contact-topics")) do
      weekly = Resend::Topics.create({ name: "Weekly", default_subscription: "opt_in", description: "Every Monday" })
      offers = Resend::Topics.create({ name: "Offers", default_subscription: "opt_out" })
      email = unique_address("topics")
      contact = Resend::Contacts.create({ email: email })
      subscriptions = lambda do |where|
        listed = Resend::Contacts::Topics.list(where)
        assert_equal ["list", false], [listed[:object], listed[:has_more]]
        listed[:data].to_h { |t| [t["id"], t] }
      end

      before = subscriptions.call({ id: contact[:id] })
      assert_equal [weekly[:id], offers[:id]].sort, before.keys.sort
      assert_equal ["Weekly", "Every Monday", "opt_in"], before[weekly[:id]].values_at("name", "description", "subscription")
      assert_equal [nil, "opt_out"], before[offers[:id]].values_at("description", "subscription")
      assert_equal 1, Resend::Contacts::Topics.list({ id: contact[:id], limit: 1 })[:data].length

      choices = [{ "id" => weekly[:id], "subscription" => "opt_out" }, { "id" => offers[:id], "subscription" => "opt_in" }]
      # The SDK sends the bare array.
      updated = Resend::Contacts::Topics.update({ id: contact[:id], topics: choices })
      assert_equal %i[contact_id id object topics], updated.keys.sort
      assert_equal ["contact_topics", contact[:id], contact[:id]], [updated[:object], updated[:id], updated[:contact_id]]
      assert_equal choices.sort_by { |t| t["id"] }, updated[:topics].sort_by { |t| t["id"] }
      after = subscriptions.call({ email: email })
      assert_equal ["opt_out", "opt_in"], [after[weekly[:id]]["subscription"], after[offers[:id]]["subscription"]]

      Resend::Contacts::Topics.update({ email: email, topics: [{ id: weekly[:id], subscription: "opt_in" }] })
      after = subscriptions.call({ id: contact[:id] })
      assert_equal "opt_in", after[weekly[:id]]["subscription"]
      assert_equal "opt_in", after[offers[:id]]["subscription"], "a topic not sent is kept"

      not_found { Resend::Contacts::Topics.update({ id: contact[:id], topics: [{ id: random_id, subscription: "opt_in" }] }) }
      unprocessable { Resend::Contacts::Topics.update({ id: contact[:id], topics: [{ id: weekly[:id], subscription: "maybe" }] }) }
      not_found { Resend::Contacts::Topics.list({ id: random_id }) }
    end
  end

  def test_topics_create_get_list_update_remove
    key = team_key("topics")
    wire = raw(:post, "/topics", key: key, json: { name: "Wire", default_subscription: "opt_out", visibility: "public" })
    assert_equal 201, wire.status, wire.text
    with_key(key) do
      created = Resend::Topics.create({ name: "Product", default_subscription: "opt_in", description: "Product news" })
      assert_equal({ "object" => "topic", "id" => created[:id] }, body(created))
      topic = body(Resend::Topics.get(created[:id]))
      assert_timestamp topic["created_at"]
      assert_equal({ "object" => "topic", "id" => created[:id], "name" => "Product", "description" => "Product news",
                     "default_subscription" => "opt_in", "visibility" => "private", "created_at" => topic["created_at"] }, topic)
      public = Resend::Topics.get(wire.json["id"])
      assert_equal [nil, "public", "opt_out"], [public[:description], public[:visibility], public[:default_subscription]]

      listed = Resend::Topics.list
      assert_equal ["list", false], [listed[:object], listed[:has_more]]
      assert_equal [created[:id], wire.json["id"]], ids(listed[:data]), "newest first"
      assert_equal topic.reject { |k, _| k == "object" }, listed[:data][0]
      page = Resend::Topics.list({ limit: 1 })
      assert_equal [true, [created[:id]]], [page[:has_more], ids(page[:data])]
      assert_equal [wire.json["id"]], ids(Resend::Topics.list({ limit: 1, after: created[:id] })[:data])

      # The SDK PATCHes /topics/{topic_id} with `topic_id` in the body too.
      updated = Resend::Topics.update({ topic_id: created[:id], name: "Products", description: "All product news" })
      assert_equal({ "object" => "topic", "id" => created[:id] }, body(updated))
      Resend::Topics.update({ topic_id: created[:id], visibility: "public" })
      after = Resend::Topics.get(created[:id])
      assert_equal ["Products", "All product news", "public", "opt_in"],
                   [after[:name], after[:description], after[:visibility], after[:default_subscription]]
      unprocessable { Resend::Topics.update({ topic_id: created[:id], default_subscription: "opt_out" }) }
      assert_equal "opt_in", Resend::Topics.get(created[:id])[:default_subscription]

      removed = Resend::Topics.remove(created[:id])
      assert_equal({ "object" => "topic", "id" => created[:id], "deleted" => true }, body(removed))
      not_found { Resend::Topics.get(created[:id]) }
      assert_equal [wire.json["id"]], ids(Resend::Topics.list[:data])

      missing_field("default_subscription") { Resend::Topics.create({ name: "No default" }) }
      missing_field("name") { Resend::Topics.create({ default_subscription: "opt_in" }) }
      unprocessable { Resend::Topics.create({ name: "Bad", default_subscription: "sometimes" }) }
      unprocessable { Resend::Topics.create({ name: "Bad", default_subscription: "opt_in", visibility: "secret" }) }
      not_found { Resend::Topics.get(random_id) }
      unprocessable { Resend::Topics.get("not-a-topic") }
    end
  end

  def test_contact_properties_create_get_list_update_remove
    key = team_key("contact-properties")
    with_key(key) do
      company = Resend::ContactProperties.create({ key: "company", type: "string", fallback_value: "Acme" })
      assert_equal({ "object" => "contact_property", "id" => company[:id] }, body(company))
      assert_uuid company[:id]
      score = Resend::ContactProperties.create({ key: "score", type: "number", fallback_value: 0 })
      nickname = Resend::ContactProperties.create({ key: "nickname", type: "string" })

      got = body(Resend::ContactProperties.get(company[:id]))
      assert_timestamp got["created_at"]
      assert_equal({ "object" => "contact_property", "id" => company[:id], "key" => "company", "type" => "string",
                     "fallback_value" => "Acme", "created_at" => got["created_at"] }, got)
      scored = Resend::ContactProperties.get(score[:id])
      assert_equal ["number", 0], [scored[:type], scored[:fallback_value]]
      assert_nil Resend::ContactProperties.get(nickname[:id])[:fallback_value]

      listed = Resend::ContactProperties.list
      assert_equal ["list", false], [listed[:object], listed[:has_more]]
      assert_equal %w[nickname score company], listed[:data].map { |p| p["key"] }, "newest first"
      assert_equal got.reject { |k, _| k == "object" }, listed[:data][2]
      page = Resend::ContactProperties.list({ limit: 1, after: nickname[:id] })
      assert_equal [true, ["score"]], [page[:has_more], page[:data].map { |p| p["key"] }]

      # The SDK sends {"id", "fallback_value"}.
      updated = Resend::ContactProperties.update({ id: company[:id], fallback_value: "Initech" })
      assert_equal({ "object" => "contact_property", "id" => company[:id] }, body(updated))
      assert_equal "Initech", Resend::ContactProperties.get(company[:id])[:fallback_value]
      Resend::ContactProperties.update({ id: company[:id], fallback_value: nil })
      assert_nil Resend::ContactProperties.get(company[:id])[:fallback_value]
      unprocessable { Resend::ContactProperties.update({ id: score[:id], fallback_value: "ten" }) }
      unprocessable { Resend::ContactProperties.update({ id: company[:id], key: "renamed" }) }
      unprocessable { Resend::ContactProperties.update({ id: company[:id], type: "number" }) }
      assert_raises(ArgumentError) { Resend::ContactProperties.update({ fallback_value: "x" }) }

      conflict { Resend::ContactProperties.create({ key: "company", type: "string" }) }
      [{ key: "has space", type: "string" }, { key: "k" * 51, type: "string" },
       { key: "count", type: "number", fallback_value: "ten" }, { key: "flag", type: "boolean" }].each do |params|
        unprocessable { Resend::ContactProperties.create(params) }
      end
      missing_field("key") { Resend::ContactProperties.create({ type: "string" }) }

      removed = Resend::ContactProperties.remove(company[:id])
      assert_equal({ "object" => "contact_property", "id" => company[:id], "deleted" => true }, body(removed))
      not_found { Resend::ContactProperties.get(company[:id]) }
      not_found { Resend::ContactProperties.get(random_id) }
      unprocessable { Resend::Contacts.create({ email: unique_address("removed-key"), properties: { company: "Acme" } }) }
    end
  end

  def test_import_with_default_columns_then_poll_and_list
    with_key(team_key("imports")) do
      existing_email = unique_address("import-existing")
      existing = Resend::Contacts.create({ email: existing_email, first_name: "Old" })
      a = unique_address("import-a")
      b = unique_address("import-b")
      file = csv("email,first_name,last_name,unsubscribed", "#{a},Ann,Lee,false", "not-an-address,Bad,Row,false",
                 "#{b},Bo,Ek,true", "#{existing_email},New,Name,false")
      created = Resend::Contacts::Imports.create({ file: file })
      assert_equal({ "object" => "contact_import", "id" => created[:id] }, body(created))
      assert_uuid created[:id]

      done = completed_import(created[:id])
      assert_equal ["contact_import", created[:id]], [done[:object], done[:id]]
      assert_timestamp done[:created_at]
      assert_timestamp done[:completed_at]
      # on_conflict defaults to upsert: the existing address is updated.
      assert_equal({ "total" => 4, "created" => 2, "updated" => 1, "skipped" => 0, "failed" => 1 }, done[:counts])
      assert_equal 1, done[:errors_total]
      assert_equal 1, done[:errors].length
      assert_equal [3, 2], done[:errors][0].values_at("line", "row"), "the file's third line, its second row"
      assert_kind_of String, done[:errors][0]["reason"]

      ann = Resend::Contacts.get(email: a)
      assert_equal ["Ann", "Lee", false], [ann[:first_name], ann[:last_name], ann[:unsubscribed]]
      assert_equal ["Bo", true], [Resend::Contacts.get(email: b)[:first_name], Resend::Contacts.get(email: b)[:unsubscribed]]
      again = Resend::Contacts.get(email: existing_email)
      assert_equal [existing[:id], "New", "Name"], [again[:id], again[:first_name], again[:last_name]]

      listed = Resend::Contacts::Imports.list
      assert_equal ["list", false], [listed[:object], listed[:has_more]]
      assert_equal [{ "id" => created[:id], "status" => "completed", "created_at" => done[:created_at],
                      "completed_at" => done[:completed_at], "counts" => done[:counts] }], listed[:data]
      assert_equal [created[:id]], ids(Resend::Contacts::Imports.list({ status: "completed" })[:data])
      assert_empty Resend::Contacts::Imports.list({ status: "in_progress" })[:data]
      not_found { Resend::Contacts::Imports.get(random_id) }
      assert_raises(ArgumentError) { Resend::Contacts::Imports.create({}) }
    end
  end

  def test_import_from_an_io_with_a_column_map_segments_topics_and_skip
    require "stringio"
    with_key(team_key("imports-mapped")) do
      segment = Resend::Segments.create({ name: "Imported" })
      topic = Resend::Topics.create({ name: "Digest", default_subscription: "opt_out" })
      Resend::ContactProperties.create({ key: "plan", type: "string" })
      Resend::ContactProperties.create({ key: "seats", type: "number" })
      existing_email = unique_address("mapped-existing")
      existing = Resend::Contacts.create({ email: existing_email, first_name: "Old" })
      fresh = unique_address("mapped-new")

      # An IO for the file; segment ids as strings (the SDK wraps them as [{"id"}]).
      created = Resend::Contacts::Imports.create({
                                                   file: StringIO.new(csv("E-mail,Given,Plan,Seats", "#{fresh},Cy,pro,5",
                                                                          "#{existing_email},Changed,basic,1")),
                                                   column_map: { email: "E-mail", first_name: "Given",
                                                                 properties: { plan: { column: "Plan", type: "string" },
                                                                               seats: { column: "Seats", type: "number" } } },
                                                   on_conflict: "skip",
                                                   segments: [segment[:id]],
                                                   topics: [{ id: topic[:id], subscription: "opt_in" }]
                                                 })
      done = completed_import(created[:id])
      assert_equal({ "total" => 2, "created" => 1, "updated" => 0, "skipped" => 1, "failed" => 0 }, done[:counts])
      assert_equal [[], 0], [done[:errors], done[:errors_total]]

      cy = Resend::Contacts.get(email: fresh)
      assert_equal "Cy", cy[:first_name]
      assert_equal({ "plan" => { "type" => "string", "value" => "pro" }, "seats" => { "type" => "number", "value" => "5" } },
                   cy[:properties])
      assert_equal [segment[:id]], ids(Resend::Contacts::Segments.list({ contact_id: cy[:id] })[:data])
      assert_equal [[topic[:id], "opt_in"]],
                   Resend::Contacts::Topics.list({ id: cy[:id] })[:data].map { |t| [t["id"], t["subscription"]] }
      skipped = Resend::Contacts.get(email: existing_email)
      assert_equal [existing[:id], "Old", {}], [skipped[:id], skipped[:first_name], skipped[:properties]]
      # A column map given as a JSON string goes through as it is.
      json_map = Resend::Contacts::Imports.create({ file: csv("Mail", unique_address("json-map")),
                                                    column_map: '{"email":"Mail"}' })
      assert_equal 1, completed_import(json_map[:id])[:counts]["created"]
    end
  end

  def test_the_audience_belongs_to_one_team_and_sending_keys_are_refused
    segment = topic = prop = contact = sending = nil
    with_key(team_key("audience-owner")) do
      segment = Resend::Segments.create({ name: "Mine" })
      topic = Resend::Topics.create({ name: "Mine", default_subscription: "opt_in" })
      prop = Resend::ContactProperties.create({ key: "mine", type: "string" })
      contact = Resend::Contacts.create({ email: unique_address("owned") })
      sending = Resend::ApiKeys.create({ name: key_name("sending"), permission: "sending_access" })
    end
    with_key(team_key("audience-other")) do
      not_found { Resend::Segments.get(segment[:id]) }
      not_found { Resend::Topics.get(topic[:id]) }
      not_found { Resend::ContactProperties.get(prop[:id]) }
      not_found { Resend::Contacts.get(id: contact[:id]) }
      not_found { Resend::Contacts::Segments.add({ contact_id: contact[:id], segment_id: segment[:id] }) }
      assert_empty Resend::Segments.list[:data]
    end
    with_key(sending[:token]) do
      restricted { Resend::Segments.list }
      restricted { Resend::Topics.list }
      restricted { Resend::ContactProperties.list }
      restricted { Resend::Contacts.list }
      restricted { Resend::Contacts::Imports.list }
      restricted { Resend::Contacts::Imports.create({ file: csv("email", unique_address("nope")) }) }
      restricted { Resend::Segments.create({ name: "Nope" }) }
      restricted { Resend::Contacts.create({ email: unique_address("nope") }) }
      restricted { Resend::Contacts::Segments.list({ contact_id: contact[:id] }) }
      restricted { Resend::Contacts::Topics.list({ id: contact[:id] }) }
    end
  end
end
