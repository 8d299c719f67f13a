# frozen_string_literal: true

# Templates through the Ruby SDK: Resend::Templates.create / get (by id and by alias) /
# list / update(id, params) / publish / duplicate / remove, and Resend::Emails.send and
# Resend::Batch.send with `template` (variables, fallbacks, escaping, what the template
# gives, version pinning), with the refusals. Management runs in teams of their own; sends
# run in the operator's team, whose domains the suite may verify without DNS.

require_relative "test_helper"

class TemplatesTest < Minitest::Test
  RECIPIENT = "someone@recipient.test"
  TEMPLATE_KEYS = %w[alias created_at current_version_id from has_unpublished_versions html id name object
                     published_at reply_to status subject text updated_at variables].freeze
  LIST_KEYS = %w[alias created_at id name published_at status updated_at].freeze
  VARIABLE_KEYS = %w[created_at fallback_value id key type updated_at].freeze

  @domain = nil
  @lock = Mutex.new
  class << self
    def domain
      @lock.synchronize { @domain ||= Compat.verified_domain("templates") }
    end
  end

  def domain
    self.class.domain[:name]
  end

  def sender
    "Compat Sender <hello@#{domain}>"
  end

  def unique_alias(label)
    "rb-#{label}-#{hex(4)}"
  end

  def variables_of(template)
    template["variables"].map { |v| v.values_at("key", "type", "fallback_value") }
  end

  def escape_html(text)
    text.gsub("&", "&amp;").gsub("<", "&lt;").gsub(">", "&gt;").gsub('"', "&quot;").gsub("'", "&#39;")
  end

  # A published template in the operator's team: its id, alias and published version.
  def published_template(label, **params)
    template_alias = unique_alias(label)
    created = Resend::Templates.create({ name: "Rb #{label}", alias: template_alias, **params })
    assert_equal({ "object" => "template", "id" => created[:id] }, body(Resend::Templates.publish(created[:id])))
    got = Resend::Templates.get(created[:id])
    assert_equal "published", got[:status]
    { id: created[:id], alias: template_alias, version: got[:current_version_id] }
  end

  def test_create_get_list_update_remove
    key = team_key("templates")
    wire = raw(:post, "/templates", key: key, json: { name: "Wire", html: "<p>wire</p>" })
    assert_equal 201, wire.status, wire.text
    wire_id = wire.json["id"]
    with_key(key) do
      template_alias = unique_alias("welcome")
      created = Resend::Templates.create({
                                           name: "Welcome", alias: template_alias, from: "Acme <hello@acme.test>",
                                           subject: "Welcome, {{{NAME}}}!", reply_to: "support@acme.test",
                                           html: "<p>Hi {{{NAME}}}, {{{SEATS}}} seats</p>",
                                           text: "Hi {{{NAME}}}, {{{SEATS}}} seats",
                                           variables: [
                                             { key: "NAME", type: "string", fallback_value: "there" },
                                             { key: "SEATS", type: "number", fallback_value: 1 },
                                             { key: "PLAN", type: "string" }
                                           ]
                                         })
      assert_equal({ "object" => "template", "id" => created[:id] }, body(created))
      assert_uuid created[:id]

      got = body(Resend::Templates.get(created[:id]))
      assert_equal TEMPLATE_KEYS, got.keys.sort
      assert_equal ["template", created[:id], "Welcome", template_alias], got.values_at("object", "id", "name", "alias")
      assert_equal ["Acme <hello@acme.test>", "Welcome, {{{NAME}}}!", ["support@acme.test"]], got.values_at("from", "subject", "reply_to")
      assert_equal ["<p>Hi {{{NAME}}}, {{{SEATS}}} seats</p>", "Hi {{{NAME}}}, {{{SEATS}}} seats"], got.values_at("html", "text")
      assert_equal ["draft", nil, false], got.values_at("status", "published_at", "has_unpublished_versions")
      assert_uuid got["current_version_id"]
      assert_timestamp got["created_at"]
      assert_equal got["created_at"], got["updated_at"]
      assert_equal [["NAME", "string", "there"], ["SEATS", "number", 1], ["PLAN", "string", nil]], variables_of(got)
      got["variables"].each do |variable|
        assert_equal VARIABLE_KEYS, variable.keys.sort
        assert_uuid variable["id"]
      end
      assert_equal got, body(Resend::Templates.get(template_alias))

      listed = Resend::Templates.list
      assert_equal ["list", false], [listed[:object], listed[:has_more]]
      assert_equal [created[:id], wire_id], ids(listed[:data]), "newest first"
      assert_equal LIST_KEYS, listed[:data][0].keys.sort
      assert_equal({ "id" => created[:id], "name" => "Welcome", "status" => "draft", "published_at" => nil,
                     "created_at" => got["created_at"], "updated_at" => got["updated_at"], "alias" => template_alias },
                   listed[:data][0])
      first = Resend::Templates.list({ limit: 1 })
      assert_equal [true, [created[:id]]], [first[:has_more], ids(first[:data])]
      second = Resend::Templates.list({ limit: 1, after: created[:id] })
      assert_equal [false, [wire_id]], [second[:has_more], ids(second[:data])]
      assert_equal [created[:id]], ids(Resend::Templates.list({ limit: 1, before: wire_id })[:data])
      unprocessable { Resend::Templates.list({ limit: 101 }) }

      new_alias = unique_alias("renamed")
      updated = Resend::Templates.update(created[:id], {
                                           name: "Welcome aboard", alias: new_alias,
                                           reply_to: ["a@acme.test", "b@acme.test"],
                                           variables: [{ key: "NAME", type: "string", fallback_value: "friend" }]
                                         })
      assert_equal({ "object" => "template", "id" => created[:id] }, body(updated))
      edited = body(Resend::Templates.get(new_alias))
      assert_equal ["Welcome aboard", new_alias, ["a@acme.test", "b@acme.test"]], edited.values_at("name", "alias", "reply_to")
      assert_equal [["NAME", "string", "friend"]], variables_of(edited)
      assert_equal got["variables"][0]["id"], edited["variables"][0]["id"], "a kept key keeps its id"
      assert_equal got["html"], edited["html"]
      assert_equal got["current_version_id"], edited["current_version_id"], "a draft is edited in place"
      assert_operator parse_time(edited["updated_at"]), :>=, parse_time(got["updated_at"])
      not_found("Template not found") { Resend::Templates.get(template_alias) }

      removed = Resend::Templates.remove(new_alias)
      assert_equal({ "object" => "template", "id" => created[:id], "deleted" => true }, body(removed))
      not_found { Resend::Templates.get(created[:id]) }
      not_found { Resend::Templates.remove(created[:id]) }
      assert_equal [wire_id], ids(Resend::Templates.list[:data])
      not_found { Resend::Templates.get(random_id) }
      not_found { Resend::Templates.update(random_id, { name: "x" }) }
    end
  end

  def test_publish_versions_and_duplicate
    with_key(team_key("templates-versions")) do
      template_alias = unique_alias("receipt")
      created = Resend::Templates.create({ name: "Receipt", alias: template_alias, subject: "Receipt", html: "<p>v1</p>" })
      assert_equal({ "object" => "template", "id" => created[:id] }, body(Resend::Templates.publish(template_alias)))
      v1 = Resend::Templates.get(created[:id])
      assert_equal ["published", false], [v1[:status], v1[:has_unpublished_versions]]
      assert_timestamp v1[:published_at]
      assert_equal v1[:published_at], Resend::Templates.list[:data][0]["published_at"]

      Resend::Templates.update(template_alias, { html: "<p>v2</p>" })
      drafted = Resend::Templates.get(template_alias)
      assert_equal ["published", true, "<p>v2</p>", v1[:published_at]],
                   [drafted[:status], drafted[:has_unpublished_versions], drafted[:html], drafted[:published_at]]
      refute_equal v1[:current_version_id], drafted[:current_version_id]
      Resend::Templates.update(created[:id], { text: "v2 text" })
      assert_equal drafted[:current_version_id], Resend::Templates.get(created[:id])[:current_version_id]

      Resend::Templates.publish(created[:id])
      v2 = body(Resend::Templates.get(created[:id]))
      assert_equal ["published", false, drafted[:current_version_id], "<p>v2</p>", "v2 text"],
                   v2.values_at("status", "has_unpublished_versions", "current_version_id", "html", "text")
      Resend::Templates.publish(created[:id])
      assert_equal v2, body(Resend::Templates.get(created[:id])), "nothing new to publish changes nothing"

      copy = Resend::Templates.duplicate(template_alias)
      assert_equal({ "object" => "template", "id" => copy[:id] }, body(copy))
      refute_equal created[:id], copy[:id]
      duplicate = Resend::Templates.get(copy[:id])
      assert_equal ["Receipt (copy)", nil, "draft", nil], [duplicate[:name], duplicate[:alias], duplicate[:status], duplicate[:published_at]]
      assert_equal ["<p>v2</p>", "Receipt", "v2 text"], [duplicate[:html], duplicate[:subject], duplicate[:text]]
      assert_equal [copy[:id], created[:id]], ids(Resend::Templates.list[:data])
      not_found { Resend::Templates.publish(random_id) }
      not_found { Resend::Templates.duplicate("no-such-alias") }
    end
  end

  def test_refused_templates
    with_key(team_key("templates-refused")) do
      missing_field("name") { Resend::Templates.create({ html: "<p>x</p>" }) }
      missing_field("html") { Resend::Templates.create({ name: "No html" }) }
      unprocessable("Invalid `html` field: `{{{` is never closed by `}}}` at line 2, column 6") do
        Resend::Templates.create({ name: "Unclosed", html: "<p>\n  Hi {{{NAME</p>" })
      end
      %w[FIRST_NAME EMAIL contact].each do |reserved|
        unprocessable("Invalid `variables[0].key` field: #{reserved} is reserved; herald fills it in") do
          Resend::Templates.create({ name: "Reserved", html: "<p>x</p>", variables: [{ key: reserved, type: "string" }] })
        end
      end
      many = Array.new(51) { |i| { key: "VAR_#{i}", type: "string" } }
      unprocessable("Invalid `variables` field: at most 50 variables, got 51") do
        Resend::Templates.create({ name: "Too many", html: "<p>x</p>", variables: many })
      end
      unprocessable(/\AInvalid `variables\[0\].fallback_value` field: the variable is a number/) do
        Resend::Templates.create({ name: "Typed", html: "<p>x</p>",
                                   variables: [{ key: "SEATS", type: "number", fallback_value: "many" }] })
      end
      template_alias = unique_alias("taken")
      Resend::Templates.create({ name: "Owner", alias: template_alias, html: "<p>x</p>" })
      conflict("A template with the alias #{template_alias.upcase} already exists") do
        Resend::Templates.create({ name: "Same", alias: template_alias.upcase, html: "<p>x</p>" })
      end
      assert_equal ["Owner"], Resend::Templates.list[:data].map { |t| t["name"] }, "nothing refused was created"
    end
  end

  def test_send_with_a_template
    template = published_template(
      "receipt",
      from: "{{{SHOP}}} <shop@#{domain}>",
      subject: "Receipt for {{{NAME}}}",
      reply_to: ["support@#{domain}"],
      html: '<p title="{{{NAME}}}">Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.</p>',
      text: "Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.",
      variables: [
        { key: "SHOP", type: "string", fallback_value: "Compat Shop" },
        { key: "NAME", type: "string" },
        { key: "PRICE", type: "number" },
        { key: "CITY", type: "string", fallback_value: "Paris" }
      ]
    )
    name = "<b>\"Ann\" & 'Co'</b>"
    sent = Resend::Emails.send({ to: RECIPIENT, template: { id: template[:id], variables: { NAME: name, PRICE: 499 } } })
    assert_uuid sent[:id]
    got = Resend::Emails.get(sent[:id])
    assert_equal ["Compat Shop <shop@#{domain}>", [RECIPIENT], "Receipt for #{name}", ["support@#{domain}"]],
                 [got[:from], got[:to], got[:subject], got[:reply_to]]
    assert_equal "<p title=\"#{escape_html(name)}\">Hi #{escape_html(name)}, you paid 499 for your order in Paris.</p>", got[:html]
    assert_equal "Hi #{name}, you paid 499 for your order in Paris.", got[:text]
    assert_equal({ "id" => template[:id], "version_id" => template[:version] }, got[:template])

    # By alias; the send's own from and subject win, and an empty subject counts as absent.
    own = Resend::Emails.send({ from: sender, to: RECIPIENT, subject: "",
                                template: { id: template[:alias], variables: { NAME: "Bo", PRICE: 2.5, CITY: "Oslo", PRODUCT: "tea" } } })
    own_got = Resend::Emails.get(own[:id])
    assert_equal [sender, "Receipt for Bo", '<p title="Bo">Hi Bo, you paid 2.5 for tea in Oslo.</p>'],
                 [own_got[:from], own_got[:subject], own_got[:html]]

    # The published version keeps sending until the draft is published.
    Resend::Templates.update(template[:id], { html: "<p>v2 {{{NAME}}}</p>" })
    draft_version = Resend::Templates.get(template[:id])[:current_version_id]
    pinned = Resend::Emails.get(Resend::Emails.send({ to: RECIPIENT, template: { id: template[:id], variables: { NAME: "Cy", PRICE: 1 } } })[:id])
    assert_equal '<p title="Cy">Hi Cy, you paid 1 for your order in Paris.</p>', pinned[:html]
    assert_equal({ "id" => template[:id], "version_id" => template[:version] }, pinned[:template])
    Resend::Templates.publish(template[:alias])
    fresh = Resend::Emails.get(Resend::Emails.send({ to: RECIPIENT, template: { id: template[:id], variables: { NAME: "Di", PRICE: 1 } } })[:id])
    assert_equal "<p>v2 Di</p>", fresh[:html]
    assert_equal({ "id" => template[:id], "version_id" => draft_version }, fresh[:template])
  end

  def test_batch_send_with_templates
    template = published_template("batch", from: sender, subject: "Batch {{{NAME}}}", html: "<p>Hi {{{NAME}}}</p>",
                                           variables: [{ key: "NAME", type: "string" }])
    names = ["Ann #{hex(3)}", "Bo #{hex(3)}"]
    result = Resend::Batch.send([
                                  { to: "ann@recipient.test", template: { id: template[:id], variables: { NAME: names[0] } } },
                                  { to: "bo@recipient.test", template: { id: template[:alias], variables: { NAME: names[1] } } }
                                ])
    assert_equal 2, result[:data].length
    result[:data].zip(names).each do |item, name|
      got = Resend::Emails.get(item["id"])
      assert_equal ["Batch #{name}", "<p>Hi #{name}</p>"], [got[:subject], got[:html]]
      assert_equal({ "id" => template[:id], "version_id" => template[:version] }, got[:template])
    end

    unprocessable(/\Aemails\[1\]: Missing template variable `NAME`/) do
      Resend::Batch.send([{ to: RECIPIENT, template: { id: template[:id], variables: { NAME: "Strict" } } },
                          { to: RECIPIENT, template: { id: template[:id] } }])
    end
    permissive = Resend::Batch.send([{ to: RECIPIENT, template: { id: template[:id], variables: { NAME: "Eve" } } },
                                     { to: RECIPIENT, template: { id: random_id } }],
                                    options: { batch_validation: "permissive" })
    assert_equal 1, permissive[:data].length
    assert_equal [{ "index" => 1, "message" => "Template not found" }], permissive[:errors]
  end

  def test_refused_template_sends
    template = published_template("refusals", from: sender, subject: "Hello {{{NAME}}}", html: "<p>Hello {{{NAME}}}</p>",
                                              variables: [{ key: "NAME", type: "string" },
                                                          { key: "SEATS", type: "number", fallback_value: 1 }])
    send = ->(**extra) { Resend::Emails.send({ to: RECIPIENT, template: { id: template[:id], variables: { NAME: "Ann" } } }.merge(extra)) }

    unprocessable(/cannot be sent with `template`/) { send.call(html: "<p>mine</p>") }
    unprocessable(/cannot be sent with `template`/) { send.call(text: "mine") }
    unprocessable(/\AMissing template variable `NAME`/) { send.call(template: { id: template[:id] }) }
    unprocessable("Invalid `template.variables.SEATS` field: the template declares it a number") do
      send.call(template: { id: template[:id], variables: { NAME: "Ann", SEATS: "many" } })
    end
    unprocessable("Invalid `subject` field: must not contain CR, LF or NUL") do
      send.call(template: { id: template[:id], variables: { NAME: "Ann\r\nBcc: victim@recipient.test" } })
    end
    not_found("Template not found") { send.call(template: { id: random_id }) }
    not_found("Template not found") { send.call(template: { id: "no-such-alias" }) }
    missing_field("template.id") { send.call(template: { variables: { NAME: "Ann" } }) }
    draft = Resend::Templates.create({ name: "Rb draft", from: sender, subject: "Draft", html: "<p>d</p>" })
    unprocessable(/not published/) { send.call(template: { id: draft[:id] }) }

    # A sending key may send with a template, not manage templates.
    api_key = Resend::ApiKeys.create({ name: key_name("templates-sending"), permission: "sending_access" })
    sent = nil
    with_key(api_key[:token]) do
      sent = Resend::Emails.send({ to: RECIPIENT, template: { id: template[:alias], variables: { NAME: "Key" } } })
      restricted { Resend::Templates.list }
      restricted { Resend::Templates.get(template[:id]) }
      restricted { Resend::Templates.create({ name: "No", html: "<p>no</p>" }) }
    end
    assert_equal "<p>Hello Key</p>", Resend::Emails.get(sent[:id])[:html]
    Resend::ApiKeys.remove(api_key[:id])
  end
end
