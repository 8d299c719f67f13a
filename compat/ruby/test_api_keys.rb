# frozen_string_literal: true

# API keys through the Ruby SDK: Resend::ApiKeys.create / list / update / remove, and SDK
# calls made with the tokens they hand out.

require_relative "test_helper"

class ApiKeysTest < Minitest::Test
  def find(key_id)
    Resend::ApiKeys.list[:data].find { |k| k["id"] == key_id }
  end

  def test_create_returns_an_id_and_a_token_that_works_at_once
    created = Resend::ApiKeys.create({ name: key_name("create") })
    assert_uuid created[:id]
    assert created[:token].start_with?("re_"), created[:token]
    assert_operator created[:token].length, :>=, 20
    with_key(created[:token]) { assert_equal "list", Resend::Domains.list[:object] }
    wire = raw(:post, "/api-keys", json: { name: key_name("status") })
    assert_equal 201, wire.status, wire.text
    Resend::ApiKeys.remove(wire.json["id"])
    Resend::ApiKeys.remove(created[:id])
  end

  def test_list_shows_keys_without_their_tokens_and_update_renames
    name = key_name("list")
    created = Resend::ApiKeys.create({ name: name, permission: "full_access" })
    listed = Resend::ApiKeys.list
    assert_equal "list", listed[:object]
    assert_includes [true, false], listed[:has_more]
    key = find(created[:id])
    refute_nil key, "the new key is listed"
    assert_equal [name, "full_access", nil], [key["name"], key["permission"], key["domain_id"]]
    assert_timestamp key["created_at"]
    assert(key["last_used_at"].nil? || key["last_used_at"].match?(TIMESTAMP_RE))
    refute key.key?("token")
    refute_includes JSON.generate(listed.to_h), created[:token]
    assert_operator listed[:data].length, :>=, 2, "the bootstrap key is listed too"
    page = Resend::ApiKeys.list({ limit: 1 })
    assert_equal 1, page[:data].length
    assert_equal true, page[:has_more]

    renamed = key_name("renamed")
    # The SDK sends only {"name"} to PATCH /api-keys/{id}.
    updated = Resend::ApiKeys.update({ id: created[:id], name: renamed })
    assert_equal({ "object" => "api_key", "id" => created[:id] }, body(updated))
    assert_equal renamed, find(created[:id])["name"]
    Resend::ApiKeys.remove(created[:id])
  end

  def test_remove_deletes_the_key_and_its_token_stops_working
    created = Resend::ApiKeys.create({ name: key_name("remove") })
    with_key(created[:token]) { Resend::Domains.list }
    removed = Resend::ApiKeys.remove(created[:id])
    assert_equal({ "object" => "api_key", "id" => created[:id], "deleted" => true }, body(removed))
    with_key(created[:token]) do
      assert_resend_error(Resend::Error, 403, "API key is invalid") { Resend::Domains.list }
    end
    not_found { Resend::ApiKeys.remove(created[:id]) }
    assert_nil find(created[:id])
  end

  def test_sending_access_key_bound_to_a_domain_is_restricted_elsewhere
    domain = Resend::Domains.create({ name: unique_domain("sending-key") })
    created = Resend::ApiKeys.create({ name: key_name("sending"), permission: "sending_access", domain_id: domain[:id] })
    assert created[:token].start_with?("re_")
    listed = find(created[:id])
    assert_equal ["sending_access", domain[:id]], [listed["permission"], listed["domain_id"]]
    with_key(created[:token]) do
      restricted { Resend::Domains.list }
      restricted { Resend::Domains.get(domain[:id]) }
      restricted { Resend::ApiKeys.list }
      restricted { Resend::ApiKeys.create({ name: key_name("nested") }) }
    end
    Resend::ApiKeys.remove(created[:id])

    any = Resend::ApiKeys.create({ name: key_name("sending-any"), permission: "sending_access" })
    assert_nil find(any[:id])["domain_id"]
    with_key(any[:token]) { restricted { Resend::Domains.list } }
    Resend::ApiKeys.remove(any[:id])
  end

  def test_refusals
    missing_field("name") { Resend::ApiKeys.create({}) }
    missing_field("name") { Resend::ApiKeys.create({ name: "   " }) }
    domain = Resend::Domains.create({ name: unique_domain("full-with-domain") })
    unprocessable { Resend::ApiKeys.create({ name: key_name("full"), permission: "full_access", domain_id: domain[:id] }) }
    unprocessable { Resend::ApiKeys.create({ name: key_name("perm"), permission: "everything" }) }
    not_found { Resend::ApiKeys.remove(random_id) }
    not_found { Resend::ApiKeys.update({ id: random_id, name: "x" }) }
  end
end
