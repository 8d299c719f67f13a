# frozen_string_literal: true

# Suppressions through the Ruby SDK: Resend::Suppressions.add / list / get / remove (the
# SDK percent-encodes an address into the path) and Resend::Suppressions::Batch.add /
# remove. Listing runs in a team of its own, so other tests' entries never show.

require_relative "test_helper"

class SuppressionsTest < Minitest::Test
  def test_add_get_by_id_and_by_address_remove
    email = unique_address("single")
    added = Resend::Suppressions.add({ email: email })
    assert_equal({ "object" => "suppression", "id" => added[:id] }, body(added))
    assert_uuid added[:id]
    assert_equal added[:id], Resend::Suppressions.add({ email: " #{email.upcase} " })[:id], "lower-cased and trimmed"

    by_id = body(Resend::Suppressions.get(added[:id]))
    assert_timestamp by_id["created_at"]
    assert_equal({ "object" => "suppression", "id" => added[:id], "email" => email, "origin" => "manual",
                   "source_id" => nil, "created_at" => by_id["created_at"] }, by_id)
    assert_equal by_id, body(Resend::Suppressions.get(email))

    removed = Resend::Suppressions.remove(email)
    assert_equal({ "object" => "suppression", "id" => added[:id], "deleted" => true }, body(removed))
    not_found { Resend::Suppressions.get(added[:id]) }
    not_found { Resend::Suppressions.remove(email) }
    not_found { Resend::Suppressions.remove(added[:id]) }
  end

  def test_list_pages_newest_first_and_filters_by_origin
    with_key(team_key("suppressions-list")) do
      emails = Array.new(3) { |n| unique_address("list-#{n}") }
      emails.each { |email| Resend::Suppressions.add({ email: email }) }
      first = Resend::Suppressions.list({ limit: 2 })
      assert_equal ["list", true], [first[:object], first[:has_more]]
      assert_equal [emails[2], emails[1]], first[:data].map { |s| s["email"] }
      assert_equal %w[created_at email id origin source_id], first[:data][0].keys.sort
      second = Resend::Suppressions.list({ limit: 2, after: first[:data][1]["id"] })
      assert_equal [false, [emails[0]]], [second[:has_more], second[:data].map { |s| s["email"] }]
      assert_equal 3, Resend::Suppressions.list[:data].length
      assert_equal 3, Resend::Suppressions.list({ origin: "manual" })[:data].length
      assert_empty Resend::Suppressions.list({ origin: "bounce" })[:data]
      unprocessable { Resend::Suppressions.list({ origin: "whim" }) }
    end
  end

  def test_batch_add_and_remove
    a = unique_address("batch-a")
    b = unique_address("batch-b")
    existing = Resend::Suppressions.add({ email: b })
    added = Resend::Suppressions::Batch.add({ emails: [a, b, a.upcase] })
    assert_equal 2, added[:data].length, "duplicates collapse"
    added[:data].each do |entry|
      assert_equal "suppression", entry["object"]
      assert_uuid entry["id"]
    end
    assert_equal existing[:id], added[:data][1]["id"]

    by_email = Resend::Suppressions::Batch.remove({ emails: [a, unique_address("never")] })
    assert_equal [{ "object" => "suppression", "id" => added[:data][0]["id"], "deleted" => true }], by_email[:data]
    by_id = Resend::Suppressions::Batch.remove({ ids: [existing[:id]] })
    assert_equal [{ "object" => "suppression", "id" => existing[:id], "deleted" => true }], by_id[:data]
    assert_raises(ArgumentError) { Resend::Suppressions::Batch.remove({ emails: [a], ids: [existing[:id]] }) }
  end

  def test_refusals_teams_and_sending_keys
    unprocessable { Resend::Suppressions.add({ email: "not an address" }) }
    missing_field("email") { Resend::Suppressions.add({}) }
    unprocessable { Resend::Suppressions::Batch.add({ emails: Array.new(101) { |n| unique_address("many-#{n}") } }) }
    not_found { Resend::Suppressions.get(unique_address("missing")) }
    assert_raises(ArgumentError) { Resend::Suppressions.get("") }

    email = unique_address("team")
    added = Resend::Suppressions.add({ email: email })
    with_key(team_key("suppressions-other")) do
      not_found { Resend::Suppressions.get(added[:id]) }
      not_found { Resend::Suppressions.get(email) }
    end
    key = Resend::ApiKeys.create({ name: key_name("sending"), permission: "sending_access" })
    with_key(key[:token]) do
      restricted { Resend::Suppressions.list }
      restricted { Resend::Suppressions.add({ email: email }) }
      restricted { Resend::Suppressions::Batch.add({ emails: [email] }) }
    end
    Resend::ApiKeys.remove(key[:id])
    Resend::Suppressions.remove(added[:id])
  end
end
