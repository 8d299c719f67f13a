# frozen_string_literal: true

# Webhooks through the Ruby SDK: Resend::Webhooks.create / get / list / update / remove,
# and Resend::Webhooks.verify (Svix headers, HMAC-SHA256, 5 minutes' tolerance) on requests
# herald really signs and delivers. The suite's herald refuses private endpoints except
# 127.0.0.2, so managed endpoints are a public address literal (no DNS), and the delivery
# test listens on 127.0.0.2. Listing and delivery run in teams of their own.

require_relative "test_helper"
require "base64"
require "socket"

class WebhooksTest < Minitest::Test
  SECRET_RE = %r{\Awhsec_[A-Za-z0-9+/]+={0,2}\z}.freeze

  def unique_endpoint(label)
    "https://93.184.216.34/rb-#{label}-#{hex(5)}"
  end

  def test_create_answers_a_signing_secret_and_get_shows_the_webhook
    endpoint = unique_endpoint("create")
    created = Resend::Webhooks.create({ endpoint: endpoint, events: ["email.sent", "email.bounced"] })
    assert_equal %i[id object signing_secret], created.keys.sort
    assert_equal "webhook", created[:object]
    assert_uuid created[:id]
    assert_match SECRET_RE, created[:signing_secret]
    assert_equal 32, Base64.strict_decode64(created[:signing_secret].delete_prefix("whsec_")).bytesize

    webhook = body(Resend::Webhooks.get(created[:id]))
    assert_timestamp webhook.delete("created_at")
    assert_equal({ "object" => "webhook", "id" => created[:id], "endpoint" => endpoint,
                   "events" => ["email.sent", "email.bounced"], "status" => "enabled",
                   "signing_secret" => created[:signing_secret] }, webhook)
    wire = raw(:post, "/webhooks", json: { endpoint: unique_endpoint("wire"), events: ["email.sent"] })
    assert_equal 201, wire.status, wire.text
    Resend::Webhooks.remove(wire.json["id"])
    Resend::Webhooks.remove(created[:id])
  end

  def test_list_pages_newest_first_without_secrets
    with_key(team_key("webhooks-list")) do
      endpoints = Array.new(3) { |n| unique_endpoint("list-#{n}") }
      made = endpoints.map { |e| Resend::Webhooks.create({ endpoint: e, events: ["domain.created"] })[:id] }
      listed = Resend::Webhooks.list
      assert_equal ["list", false], [listed[:object], listed[:has_more]]
      assert_equal endpoints.reverse, listed[:data].map { |w| w["endpoint"] }
      assert_equal %w[created_at endpoint events id status], listed[:data][0].keys.sort
      first = Resend::Webhooks.list({ limit: 2 })
      assert_equal [true, [made[2], made[1]]], [first[:has_more], ids(first[:data])]
      second = Resend::Webhooks.list({ limit: 2, after: made[1] })
      assert_equal [false, [made[0]]], [second[:has_more], ids(second[:data])]
      assert_equal [made[2]], ids(Resend::Webhooks.list({ limit: 2, before: made[1] })[:data])
    end
  end

  def test_update_changes_endpoint_events_and_status_and_remove_deletes
    created = Resend::Webhooks.create({ endpoint: unique_endpoint("update"), events: ["email.sent"] })
    # The SDK takes `webhook_id` out of the params and PATCHes the rest.
    updated = Resend::Webhooks.update({ webhook_id: created[:id], status: "disabled" })
    assert_equal({ "object" => "webhook", "id" => created[:id] }, body(updated))
    endpoint = unique_endpoint("updated")
    Resend::Webhooks.update({ webhook_id: created[:id], endpoint: endpoint, events: ["email.delivered", "email.opened"] })
    webhook = Resend::Webhooks.get(created[:id])
    assert_equal ["disabled", endpoint, ["email.delivered", "email.opened"], created[:signing_secret]],
                 [webhook[:status], webhook[:endpoint], webhook[:events], webhook[:signing_secret]]
    Resend::Webhooks.update({ webhook_id: created[:id], status: "enabled" })
    assert_equal "enabled", Resend::Webhooks.get(created[:id])[:status]

    removed = Resend::Webhooks.remove(created[:id])
    assert_equal({ "object" => "webhook", "id" => created[:id], "deleted" => true }, body(removed))
    not_found { Resend::Webhooks.get(created[:id]) }
    not_found { Resend::Webhooks.remove(created[:id]) }
    not_found { Resend::Webhooks.update({ webhook_id: created[:id], status: "enabled" }) }
  end

  def test_refusals
    endpoint = unique_endpoint("errors")
    missing_field("events") { Resend::Webhooks.create({ endpoint: endpoint }) }
    missing_field("endpoint") { Resend::Webhooks.create({ events: ["email.sent"] }) }
    [[], ["email.exploded"]].each do |events|
      unprocessable { Resend::Webhooks.create({ endpoint: endpoint, events: events }) }
    end
    unprocessable(/refused/) { Resend::Webhooks.create({ endpoint: "http://169.254.169.254/latest", events: ["email.sent"] }) }
    unprocessable { Resend::Webhooks.get("nope") }
    created = Resend::Webhooks.create({ endpoint: unique_endpoint("team"), events: ["email.sent"] })
    unprocessable { Resend::Webhooks.update({ webhook_id: created[:id], status: "paused" }) }
    with_key(team_key("webhooks-other")) do
      not_found { Resend::Webhooks.get(created[:id]) }
      assert_empty Resend::Webhooks.list[:data]
    end
    key = Resend::ApiKeys.create({ name: key_name("sending"), permission: "sending_access" })
    with_key(key[:token]) do
      restricted { Resend::Webhooks.list }
      restricted { Resend::Webhooks.get(created[:id]) }
      restricted { Resend::Webhooks.create({ endpoint: unique_endpoint("sending"), events: ["email.sent"] }) }
    end
    Resend::ApiKeys.remove(key[:id])
    Resend::Webhooks.remove(created[:id])
  end

  # A receiver on 127.0.0.2 (the one private address the suite's herald delivers to): records
  # each request's headers and raw body; answers 500 to the first try of each `svix-id`.
  class Receiver
    Request = Struct.new(:headers, :body)
    attr_reader :requests, :url

    def initialize
      @server = TCPServer.new("127.0.0.2", 0)
      @url = "http://127.0.0.2:#{@server.addr[1]}/hook"
      @requests = []
      @seen = {}
      @lock = Mutex.new
      @thread = Thread.new { loop { serve(@server.accept) } }
    end

    def serve(client)
      head = +""
      head << client.readpartial(1) until head.end_with?("\r\n\r\n")
      lines = head.split("\r\n")
      headers = lines.drop(1).to_h { |line| line.split(":", 2).then { |k, v| [k.downcase, v.to_s.strip] } }
      payload = client.read(headers.fetch("content-length", "0").to_i)
      status = @lock.synchronize do
        @requests << Request.new(headers, payload)
        first = !@seen.key?(headers["svix-id"])
        @seen[headers["svix-id"]] = true
        first ? 500 : 200
      end
      text = status == 200 ? "ok" : "try again"
      client.write("HTTP/1.1 #{status} X\r\nContent-Length: #{text.bytesize}\r\nConnection: close\r\n\r\n#{text}")
    rescue IOError, SystemCallError
      nil
    ensure
      client&.close
    end

    def close
      @thread.kill
      @server.close
    end
  end

  def svix(request)
    { svix_id: request.headers["svix-id"], svix_timestamp: request.headers["svix-timestamp"],
      svix_signature: request.headers["svix-signature"] }
  end

  def test_signed_deliveries_verify_with_the_sdk
    receiver = Receiver.new
    with_key(team_key("webhooks-delivery")) do
      webhook = Resend::Webhooks.create({ endpoint: receiver.url, events: ["domain.created"] })
      secret = webhook[:signing_secret]
      name = unique_domain("hooked")
      domain = Resend::Domains.create({ name: name })

      eventually("a first try and a retry") { receiver.requests.length >= 2 }
      first, again = receiver.requests.first(2)
      assert_equal first.headers["svix-id"], again.headers["svix-id"], "a retry keeps the message id"
      assert_equal first.body, again.body
      [first, again].each do |request|
        assert_equal request.headers["webhook-id"], request.headers["svix-id"]
        assert_equal request.headers["webhook-signature"], request.headers["svix-signature"]
        assert_equal true, Resend::Webhooks.verify(payload: request.body, headers: svix(request), webhook_secret: secret)
        payload = JSON.parse(request.body)
        assert_equal "domain.created", payload["type"]
        assert_equal [domain[:id], name], [payload["data"]["id"], payload["data"]["name"]]
      end

      # What the SDK refuses: another body, another secret, an old timestamp.
      error = assert_raises(RuntimeError) do
        Resend::Webhooks.verify(payload: "#{first.body} ", headers: svix(first), webhook_secret: secret)
      end
      assert_equal "No matching signature found", error.message
      other = "whsec_#{Base64.strict_encode64("\x07" * 32)}"
      assert_raises(RuntimeError) { Resend::Webhooks.verify(payload: first.body, headers: svix(first), webhook_secret: other) }
      stale = svix(first).merge(svix_timestamp: (Time.now.to_i - 600).to_s)
      error = assert_raises(RuntimeError) { Resend::Webhooks.verify(payload: first.body, headers: stale, webhook_secret: secret) }
      assert_match(/Timestamp outside tolerance window/, error.message)
      assert_in_delta Time.now.to_i, first.headers["svix-timestamp"].to_i, 60
    end
  ensure
    receiver&.close
  end
end
