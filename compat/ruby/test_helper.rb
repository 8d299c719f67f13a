# frozen_string_literal: true

# Shared by the Ruby SDK tests (RubyGems `resend` 1.10.0, loaded from its source with -I).
# The SDK reads its base URL from RESEND_BASE_URL once, when it is loaded
# (Resend::Request::BASE_URL), and joins it with relative paths ("emails"), so `run` gives
# it with a trailing slash. The key is Resend.api_key, which may be a Proc: the suite sets
# one that reads a thread-local override, so `with_key` works per thread.

require "json"
require "net/http"
require "securerandom"
require "time"
require "uri"
require "minitest/autorun"
require "resend"

BASE_URL = ENV.fetch("RESEND_BASE_URL", "")
API_KEY = ENV.fetch("RESEND_API_KEY", "")
abort "RESEND_BASE_URL and RESEND_API_KEY must be set (compat/ruby/run test)" if BASE_URL.empty? || API_KEY.empty?
abort "RESEND_BASE_URL must end with / (the SDK appends relative paths)" unless BASE_URL.end_with?("/")

Resend.api_key = -> { Thread.current[:herald_compat_key] || API_KEY }

UUID_RE = /\A[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\z/.freeze
# Resend's resource timestamps: `2023-04-03 22:13:42.674981+00`.
TIMESTAMP_RE = /\A\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\+00\z/.freeze

# What a raw request answered.
RawResponse = Struct.new(:status, :headers, :text, :json)

module Compat
  module_function

  def hex(bytes)
    SecureRandom.hex(bytes)
  end

  # A domain name no other test (of any SDK suite) uses.
  def unique_domain(label)
    "rb-#{label}-#{hex(5)}.compat.herald.test"
  end

  def unique_address(label)
    "rb-#{label}-#{hex(5)}@compat.herald.test"
  end

  def key_name(label)
    "rb-#{label}-#{hex(4)}"
  end

  def random_id
    SecureRandom.uuid
  end

  # A raw request to herald, bypassing the SDK. `key: nil` sends no Authorization.
  def raw(method, path, key: API_KEY, json: nil, headers: {})
    uri = URI.join(BASE_URL, path.delete_prefix("/"))
    request = Net::HTTPGenericRequest.new(method.to_s.upcase, !json.nil?, true, uri)
    request["User-Agent"] = "herald-compat"
    request["Authorization"] = "Bearer #{key}" unless key.nil?
    headers.each { |name, value| request[name] = value }
    unless json.nil?
      request["Content-Type"] = "application/json"
      request.body = JSON.generate(json)
    end
    response = Net::HTTP.start(uri.host, uri.port, read_timeout: 30) { |http| http.request(request) }
    parsed = begin
      JSON.parse(response.body.to_s)
    rescue JSON::ParserError
      nil
    end
    RawResponse.new(response.code.to_i, response.to_hash.transform_values(&:first), response.body.to_s, parsed)
  end

  # The first key of a new team of its own (operator-only `POST /teams`).
  def team_key(label)
    response = raw(:post, "/teams", json: { name: key_name(label) })
    raise "POST /teams: #{response.status} #{response.text}" unless response.status == 201

    response.json.fetch("api_key").fetch("token")
  end

  # Marks a domain verified without DNS (`{"skip_dns": true}`, which only the operator's key
  # may send; the SDK's Domains.verify sends no body, so this one goes raw).
  def verify_without_dns(domain_id)
    response = raw(:post, "/domains/#{domain_id}/verify", json: { skip_dns: true })
    raise "verify #{domain_id}: #{response.status} #{response.text}" unless response.status == 200
    raise "verify answered #{response.text}" unless response.json == { "object" => "domain", "id" => domain_id }
  end

  # A new domain of the operator's team, verified: its name and id.
  def verified_domain(label)
    name = unique_domain(label)
    created = Resend::Domains.create({ name: name })
    verify_without_dns(created[:id])
    { name: name, id: created[:id] }
  end

  # Polls the block until it answers something truthy, or fails after `seconds`.
  def eventually(what, seconds: 30, every: 0.1)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    loop do
      found = yield
      return found if found
      raise Minitest::Assertion, "#{what}: not within #{seconds} s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep every
    end
  end

  # Parses a Resend timestamp (`2026-11-22 09:00:00.123+00`) or an ISO one (`…T…Z`).
  def parse_time(text)
    Time.parse(text.sub(/\+00\z/, "+00:00"))
  end

  def iso(time)
    time.utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ")
  end
end

module CompatAssertions
  include Compat

  # Runs the block with `key` as the SDK's API key (for this thread).
  def with_key(key)
    previous = Thread.current[:herald_compat_key]
    Thread.current[:herald_compat_key] = key
    yield
  ensure
    Thread.current[:herald_compat_key] = previous
  end

  # An SDK answer as plain JSON data (string keys all the way down). Resend::Response keys
  # its top level by symbol and leaves nested objects as HTTParty parsed them (strings).
  def body(answer)
    assert_kind_of Resend::Response, answer
    JSON.parse(JSON.generate(answer.to_h))
  end

  def ids(items)
    items.map { |item| item["id"] }
  end

  # The SDK's error for a non-2xx answer: Resend::Error::ERRORS picks the class by the body's
  # `statusCode` (401, 400 and 422 InvalidRequestError, 404 NotFoundError, 429
  # RateLimitExceededError, 500 InternalServerError; others, 403 and 409 among them, the
  # base Resend::Error). The exception's message is the body's `message`; the status is kept
  # in @code (no reader), the response's headers in #headers. The Resend error `name` is not
  # exposed by this SDK, so where it matters the message tells (and raw tests check names).
  def assert_resend_error(klass, status, message = nil)
    error = assert_raises(Resend::Error) { yield }
    assert_instance_of klass, error, "#{error.class}: #{error.message}"
    assert_equal status, error.instance_variable_get(:@code), error.message
    assert_kind_of String, error.message
    refute_empty error.message
    case message
    when nil then nil
    when Regexp then assert_match message, error.message
    else assert_equal message, error.message
    end
    error
  end

  def not_found(message = nil, &block)
    assert_resend_error(Resend::Error::NotFoundError, 404, message, &block)
  end

  def unprocessable(message = nil, &block)
    assert_resend_error(Resend::Error::InvalidRequestError, 422, message, &block)
  end

  def conflict(message = nil, &block)
    assert_resend_error(Resend::Error, 409, message, &block)
  end

  def restricted(&block)
    assert_resend_error(Resend::Error::InvalidRequestError, 401, "This API key is restricted to only send emails", &block)
  end

  def missing_field(field, &block)
    unprocessable("Missing `#{field}` field.", &block)
  end

  def assert_uuid(value)
    assert_match UUID_RE, value
  end

  def assert_timestamp(value)
    assert_match TIMESTAMP_RE, value
  end

  def assert_recent(text, within: 60)
    age = Time.now - parse_time(text)
    assert_operator age, :>, -5, "#{text} is in the future"
    assert_operator age, :<, within, "#{text} is not recent"
  end

  # One header's value from Resend::Response#headers (lower-case names; each value an Array,
  # as HTTParty keeps them, although the SDK's comments show strings), from an error's
  # #headers (HTTParty's own object) or from a raw answer.
  def header(headers, name)
    value = headers[name]
    value.is_a?(Array) ? value.join(", ") : value
  end

  # The four RateLimit headers, present and sensible.
  def assert_rate_limit_headers(headers)
    lower = headers.to_h.to_h { |k, v| [k.to_s.downcase, v.is_a?(Array) ? v.join(", ") : v] }
    %w[limit remaining reset policy].each { |name| assert lower.key?("ratelimit-#{name}"), "ratelimit-#{name} missing: #{lower.keys}" }
    assert_match(/\A\d+\z/, lower["ratelimit-limit"])
    assert_match(/\A\d+\z/, lower["ratelimit-remaining"])
    assert_match(/\A\d+\z/, lower["ratelimit-reset"])
    assert_operator lower["ratelimit-remaining"].to_i, :<=, lower["ratelimit-limit"].to_i
    assert_match(/\A\d+;w=\d+/, lower["ratelimit-policy"])
    assert_equal lower["ratelimit-limit"], lower["ratelimit-policy"].split(";").first
  end
end

module Minitest
  class Test
    include CompatAssertions
    make_my_diffs_pretty!
  end
end
