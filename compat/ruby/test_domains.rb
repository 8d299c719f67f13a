# frozen_string_literal: true

# Domains through the Ruby SDK: Resend::Domains.create / get / list / update / verify /
# remove. Resend::Domains.update sends the `id` in the body too; verify sends no body.

require_relative "test_helper"

class DomainsTest < Minitest::Test
  CAPABILITIES = { "sending" => "enabled", "receiving" => "disabled" }.freeze
  # `tracking_subdomain` is there only when the domain has one (Resend's SDK types make it optional).
  LIST_ITEM_FIELDS = %w[capabilities click_tracking created_at id name open_tracking region status].freeze

  def create(label, **options)
    name = unique_domain(label)
    [name, Resend::Domains.create({ name: name, **options })]
  end

  # The records herald asks the owner to publish, for return-path label `return_path`.
  def assert_records(domain, return_path)
    records = domain["records"]
    assert_equal 3, records.length, records.inspect
    records.each do |record|
      assert_equal "Auto", record["ttl"]
      assert_equal "not_started", record["status"]
    end
    dkim = records.select { |r| r["record"] == "DKIM" }
    assert_equal 1, dkim.length
    assert_equal ["TXT", "herald._domainkey"], [dkim[0]["type"], dkim[0]["name"]]
    assert dkim[0]["value"].start_with?("v=DKIM1; k=rsa; p="), dkim[0]["value"]
    mx = records.find { |r| r["record"] == "SPF" && r["type"] == "MX" }
    assert_equal [return_path, "mail.herald.test", 10], [mx["name"], mx["value"], mx["priority"]]
    spf = records.find { |r| r["record"] == "SPF" && r["type"] == "TXT" }
    assert_equal [return_path, "v=spf1 a:mail.herald.test ~all"], [spf["name"], spf["value"]]
    dmarc = domain["dmarc"]
    assert_equal ["_dmarc", "TXT", true], [dmarc["name"], dmarc["type"], dmarc["recommended"]]
    assert dmarc["value"].start_with?("v=DMARC1;"), dmarc["value"]
  end

  def test_create_returns_the_domain_with_its_records_and_headers
    name, created = create("create")
    assert_kind_of Resend::Response, created
    domain = body(created)
    assert_uuid created[:id]
    assert_equal "domain", created[:object]
    assert_equal name, created[:name]
    assert_equal "not_started", created[:status]
    assert_timestamp created[:created_at]
    assert_equal "us-east-1", created[:region]
    assert_equal false, created[:open_tracking]
    assert_equal false, created[:click_tracking]
    assert_equal CAPABILITIES, created[:capabilities]
    assert_records domain, "send"
    # Resend::Response hands the headers back, lower-cased.
    assert header(created.headers, "content-type").start_with?("application/json")
    assert_rate_limit_headers created.headers
    # The SDK ignores the status; 201 on the wire.
    wire = raw(:post, "/domains", json: { name: unique_domain("status") })
    assert_equal 201, wire.status, wire.text
  end

  def test_create_passes_every_option_through
    _, created = create("options", region: "sa-east-1", custom_return_path: "bounces",
                                   open_tracking: true, click_tracking: true, tls: "enforced")
    assert_equal "sa-east-1", created[:region]
    assert_equal true, created[:open_tracking]
    assert_equal true, created[:click_tracking]
    assert_records body(created), "bounces"
    got = Resend::Domains.get(created[:id])
    assert_equal "enforced", got[:tls]
    assert_equal "bounces", got[:custom_return_path]
    %w[eu-west-1 ap-northeast-1].each do |region|
      assert_equal region, create("region", region: region)[1][:region]
    end
    unprocessable { create("bad-region", region: "mars-1") }
  end

  def test_get_returns_the_full_domain
    name, created = create("get")
    got = Resend::Domains.get(created[:id])
    assert_equal ["domain", created[:id], name, "not_started"], [got[:object], got[:id], got[:name], got[:status]]
    assert_equal created[:created_at], got[:created_at]
    assert_equal created[:records], got[:records]
    assert_equal CAPABILITIES, got[:capabilities]
    assert_records body(got), "send"
  end

  def test_list_newest_first_and_paginated
    created = %w[list-1 list-2 list-3].map { |label| create(label)[1] }
    listed = Resend::Domains.list
    assert_equal "list", listed[:object]
    assert_equal false, listed[:has_more], "without a limit, every domain"
    seen = ids(listed[:data])
    positions = created.map { |d| seen.index(d[:id]) }
    refute_includes positions, nil
    assert_operator positions[2], :<, positions[1]
    assert_operator positions[1], :<, positions[0]
    item = listed[:data][positions[2]]
    assert_empty LIST_ITEM_FIELDS - item.keys, item.keys.inspect
    refute item.key?("records")
    refute item.key?("tracking_subdomain")
    assert_equal [created[2][:name], "not_started", created[2][:created_at], CAPABILITIES],
                 [item["name"], item["status"], item["created_at"], item["capabilities"]]

    page = Resend::Domains.list({ limit: 2 })
    assert_equal 2, page[:data].length
    assert_equal true, page[:has_more]
    after = Resend::Domains.list({ limit: 2, after: created[2][:id] })
    assert_equal 2, after[:data].length
    assert_equal created[1][:id], after[:data][0]["id"], "continues right after the cursor"
    before = Resend::Domains.list({ limit: 1, before: created[1][:id] })
    assert_equal [created[2][:id]], ids(before[:data])
    unprocessable { Resend::Domains.list({ limit: 101 }) }
  end

  def test_update_changes_tracking_and_tls
    _, created = create("update")
    # The SDK sends {"id", ...} to PATCH /domains/{id}.
    updated = Resend::Domains.update({ id: created[:id], open_tracking: true, click_tracking: true, tls: "enforced" })
    assert_equal({ "object" => "domain", "id" => created[:id] }, body(updated))
    got = Resend::Domains.get(created[:id])
    assert_equal [true, true, "enforced"], [got[:open_tracking], got[:click_tracking], got[:tls]]
    Resend::Domains.update({ id: created[:id], click_tracking: false })
    again = Resend::Domains.get(created[:id])
    assert_equal [true, false, "enforced"], [again[:open_tracking], again[:click_tracking], again[:tls]]
  end

  def test_verify_starts_verification
    _, created = create("verify")
    verified = Resend::Domains.verify(created[:id])
    assert_equal({ "object" => "domain", "id" => created[:id] }, body(verified))
    got = Resend::Domains.get(created[:id])
    refute_equal "not_started", got[:status]
    # Skipping DNS (the operator's key only) verifies at once.
    _, other = create("verify-skip")
    verify_without_dns(other[:id])
    got = Resend::Domains.get(other[:id])
    assert_equal "verified", got[:status]
    assert_includes ids(Resend::Domains.list[:data]), other[:id]
    assert_equal "verified", Resend::Domains.list[:data].find { |d| d["id"] == other[:id] }["status"]
  end

  def test_remove_deletes_the_domain
    name, created = create("remove")
    removed = Resend::Domains.remove(created[:id])
    assert_equal({ "object" => "domain", "id" => created[:id], "deleted" => true }, body(removed))
    not_found { Resend::Domains.get(created[:id]) }
    not_found { Resend::Domains.remove(created[:id]) }
    refute_includes ids(Resend::Domains.list[:data]), created[:id]
    again = Resend::Domains.create({ name: name })
    refute_equal created[:id], again[:id]
  end

  def test_refusals
    unknown = random_id
    not_found { Resend::Domains.get(unknown) }
    not_found { Resend::Domains.update({ id: unknown, open_tracking: true }) }
    not_found { Resend::Domains.verify(unknown) }
    not_found { Resend::Domains.remove(unknown) }
    unprocessable { Resend::Domains.get("not-a-uuid") }
    missing_field("name") { Resend::Domains.create({}) }
    missing_field("name") { Resend::Domains.create({ name: "" }) }
    ["not a domain", "localhost"].each { |name| unprocessable { Resend::Domains.create({ name: name }) } }
    name, = create("twice")
    unprocessable(/#{Regexp.escape(name)}/) { Resend::Domains.create({ name: name }) }
  end
end
