# frozen_string_literal: true

# Request logs through the Ruby SDK: Resend::Logs.list / get. A team of its own makes the
# requests, so its log holds only this test's; bodies come back as the JSON objects that
# were sent and answered, with secrets redacted.

require_relative "test_helper"

class LogsTest < Minitest::Test
  def test_list_and_get_show_the_requests_the_sdk_made
    with_key(team_key("logs")) do
      name = key_name("logged")
      created = Resend::ApiKeys.create({ name: name })
      not_found { Resend::Domains.get(random_id) }

      listed = eventually("both requests logged") do
        page = Resend::Logs.list
        page if page[:data].any? { |l| l["endpoint"] == "/api-keys" } && page[:data].any? { |l| l["response_status"] == 404 }
      end
      assert_equal "list", listed[:object]
      assert_includes [true, false], listed[:has_more]
      entry = listed[:data].find { |l| l["endpoint"] == "/api-keys" && l["method"] == "POST" }
      refute_nil entry, listed[:data].inspect
      assert_uuid entry["id"]
      assert_timestamp entry["created_at"]
      assert_equal 201, entry["response_status"]
      assert_equal "resend-ruby:#{Resend::VERSION}", entry["user_agent"]

      log = Resend::Logs.get(entry["id"])
      assert_equal ["log", entry["id"], "POST", "/api-keys", 201], [log[:object], log[:id], log[:method], log[:endpoint], log[:response_status]]
      assert_kind_of Hash, log[:request_body]
      assert_equal name, log[:request_body]["name"]
      assert_kind_of Hash, log[:response_body]
      assert_equal created[:id], log[:response_body]["id"]
      assert_equal "<redacted>", log[:response_body]["token"]
      refute_includes JSON.generate(log.to_h), created[:token], "the token never reaches the logs"

      missing = listed[:data].find { |l| l["response_status"] == 404 }
      assert_equal "GET", missing["method"]
      assert_equal "not_found", Resend::Logs.get(missing["id"])[:response_body]["name"]

      page = Resend::Logs.list({ limit: 1 })
      assert_equal 1, page[:data].length
      assert_equal true, page[:has_more]
      following = Resend::Logs.list({ limit: 1, after: page[:data][0]["id"] })
      refute_equal ids(page[:data]), ids(following[:data])
      not_found { Resend::Logs.get(random_id) }
    end
    key = Resend::ApiKeys.create({ name: key_name("logs-sending"), permission: "sending_access" })
    with_key(key[:token]) { restricted { Resend::Logs.list } }
    Resend::ApiKeys.remove(key[:id])
  end
end
