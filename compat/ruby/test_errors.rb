# frozen_string_literal: true

# Errors and headers as the Ruby SDK sees them. The SDK decides that an answer is an error
# by the `statusCode` in its JSON body (not the HTTP status), raises the class
# Resend::Error::ERRORS gives for it with the body's `message`, and keeps the response's
# headers on the exception and on Resend::Response. So herald's error bodies must carry
# `statusCode` equal to the HTTP status, and every answer must be JSON (the SDK raises
# InternalServerError "Resend API returned an unexpected response" otherwise).

require_relative "test_helper"

class ErrorsTest < Minitest::Test
  def test_wrong_api_key_gets_403_invalid_api_key
    with_key("re_#{hex(16)}") do
      [-> { Resend::Domains.list }, -> { Resend::ApiKeys.list },
       -> { Resend::Domains.create({ name: unique_domain("wrong-key") }) },
       -> { Resend::Emails.send({ from: "a@b.test", to: "c@d.test", subject: "x", text: "x" }) }].each do |call|
        # 403 is not in Resend::Error::ERRORS: the base class.
        assert_resend_error(Resend::Error, 403, "API key is invalid") { call.call }
      end
    end
  end

  def test_missing_api_key_gets_401_missing_api_key
    # The SDK sends `Authorization: Bearer <key>` whatever the key; an empty one is the
    # closest it gets to sending none. (A nil key fails in the SDK before any request.)
    with_key("") do
      assert_resend_error(Resend::Error::InvalidRequestError, 401, /\AMissing API key in the authorization header/) do
        Resend::Domains.list
      end
    end
    %w[/domains /api-keys /emails].each do |path|
      response = raw(:get, path, key: nil)
      assert_equal 401, response.status
      assert response.headers["content-type"].start_with?("application/json")
      assert_equal [401, "missing_api_key"], response.json.values_at("statusCode", "name")
    end
  end

  def test_error_bodies_carry_status_code_name_and_message
    # What the SDK reads (statusCode, message), and the name it does not expose, raw.
    [[:get, "/domains/#{random_id}", 404, "not_found"],
     [:get, "/domains/not-a-uuid", 422, "invalid_parameter"],
     [:post, "/domains", 422, "missing_required_field"],
     [:get, "/no-such-route", 404, "not_found"],
     [:put, "/domains", 405, "method_not_allowed"],
     [:post, "/emails", 403, "validation_error",
      { from: "a@#{unique_domain('nowhere')}", to: "b@recipient.test", subject: "x", text: "x" }]].each do |method, path, status, name, json|
      response = raw(method, path, json: json || (method == :post ? {} : nil))
      assert_equal status, response.status, "#{method} #{path}: #{response.text}"
      assert response.headers["content-type"].start_with?("application/json")
      assert_equal [status, name], response.json.values_at("statusCode", "name"), response.text
      assert_kind_of String, response.json["message"]
    end
    sending = Resend::ApiKeys.create({ name: key_name("errors-sending"), permission: "sending_access" })
    response = raw(:get, "/domains", key: sending[:token])
    assert_equal [401, 401, "restricted_api_key"], [response.status, *response.json.values_at("statusCode", "name")]
    Resend::ApiKeys.remove(sending[:id])
  end

  def test_unknown_ids_and_routes_raise_not_found_error
    not_found { Resend::Domains.get(random_id) }
    not_found { Resend::Segments.get(random_id) }
    not_found { Resend::Logs.get(random_id) }
    error = not_found { Resend::Request.new("no-such-route", {}, "get").perform }
    assert_kind_of Resend::Error::ServerError, error, "the SDK's hierarchy: NotFoundError < ServerError"
    # 405 is not in Resend::Error::ERRORS either.
    assert_resend_error(Resend::Error, 405, "/domains supports POST, GET only") { Resend::Request.new("domains", {}, "put").perform }
  end

  # What this SDK offers and herald does not implement answers a clean 404, which the SDK
  # raises as NotFoundError naming the route (not a misleading 422 from a route that takes
  # the name for an id).
  def test_sdk_methods_herald_lacks_raise_not_found_error
    id = random_id
    not_found(%r{\ANo route for GET /emails/receiving}) { Resend::Emails::Receiving.list }
    not_found("No route for GET /emails/#{id}/attachments") { Resend::Emails::Attachments.list(email_id: id) }
    not_found("No route for POST /emails/#{id}/share") { Resend::Emails.share(id) }
    not_found(%r{\ANo route for POST /domains/claim}) { Resend::Domains::Claims.create({ name: unique_domain("claim") }) }
    not_found("No route for GET /events") { Resend::Events.list }
    not_found("No route for GET /automations") { Resend::Automations.list }
    not_found("No route for GET /oauth/grants") { Resend::OAuthGrants.list }
  end

  # A 429 is Resend::Error::RateLimitExceededError, which reads ratelimit-limit / -remaining /
  # -reset and retry-after into attributes of its own. A team of its own with a limit of 2 a
  # minute (`rate_limit`, which the operator may set on a team) gets there on its third request.
  def test_a_rate_limited_team_gets_rate_limit_exceeded_error
    response = raw(:post, "/teams", json: { name: key_name("rate-limited"), rate_limit: "2/min" })
    assert_equal 201, response.status, response.text
    with_key(response.json["api_key"]["token"]) do
      2.times { Resend::Domains.list }
      error = assert_resend_error(Resend::Error::RateLimitExceededError, 429) { Resend::Domains.list }
      assert_equal [2, 0], [error.rate_limit_limit, error.rate_limit_remaining]
      assert_includes 1..60, error.rate_limit_reset
      assert_includes 1..60, error.retry_after
      assert_equal "2;w=60", header(error.headers, "ratelimit-policy")
    end
    limited = raw(:get, "/domains", key: response.json["api_key"]["token"])
    assert_equal [429, 429, "rate_limit_exceeded"], [limited.status, *limited.json.values_at("statusCode", "name")]
  end

  def test_responses_and_errors_carry_the_rate_limit_headers
    listed = Resend::Domains.list
    assert header(listed.headers, "content-type").start_with?("application/json")
    assert_rate_limit_headers listed.headers
    assert_equal "1000;w=1", header(listed.headers, "ratelimit-policy"), "the configured 1000/s"
    error = not_found { Resend::Domains.get(random_id) }
    assert_rate_limit_headers error.headers
    created = raw(:post, "/api-keys", json: { name: key_name("headers") })
    assert_equal 201, created.status
    assert_rate_limit_headers created.headers
    Resend::ApiKeys.remove(created.json["id"])
  end
end
