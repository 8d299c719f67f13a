# frozen_string_literal: true

# Emails through the Ruby SDK: Resend::Emails.send / get / list / update / cancel and
# Resend::Batch.send (strict and permissive), from a domain the suite verifies without DNS.
# The SDK sends `email_id` in the body of update, and no body with cancel; the
# idempotency key and the batch mode go in `options:`.

require_relative "test_helper"
require "base64"

class EmailsTest < Minitest::Test
  PNG = Base64.decode64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

  @domain = nil
  @lock = Mutex.new
  class << self
    # The verified domain every test sends from (made once).
    def domain
      @lock.synchronize { @domain ||= Compat.verified_domain("emails") }
    end
  end

  def domain
    self.class.domain
  end

  def sender
    "Compat Sender <hello@#{domain[:name]}>"
  end

  def subject(label)
    "rb #{label} #{hex(6)}"
  end

  def email(label, **extra)
    { from: sender, to: "someone@recipient.test", subject: subject(label), text: "Body of #{label}" }.merge(extra)
  end

  # The emails with `wanted` as subject among the newest 100 of the team.
  def listed_with_subject(wanted)
    Resend::Emails.list({ limit: 100 })[:data].select { |e| e["subject"] == wanted }
  end

  def test_send_accepts_every_field_and_get_returns_them
    params = {
      from: sender,
      to: ["alice@recipient.test", "bob@recipient.test"],
      cc: "carol@recipient.test",
      bcc: ["dave@recipient.test", "erin@recipient.test"],
      reply_to: "replies@recipient.test",
      subject: subject("every field"),
      html: "<p>Hello <strong>there</strong></p>",
      text: "Hello there",
      headers: { "X-Entity-Ref-ID" => "ref-123", "List-Unsubscribe" => "<mailto:unsubscribe@recipient.test>" },
      tags: [{ name: "category", value: "welcome" }, { name: "user_id", value: "u-42" }]
    }
    sent = Resend::Emails.send(params)
    assert_equal [:id], sent.keys
    assert_uuid sent[:id]

    got = Resend::Emails.get(sent[:id])
    assert_equal ["email", sent[:id], params[:from]], [got[:object], got[:id], got[:from]]
    assert_equal params[:to], got[:to]
    assert_equal ["carol@recipient.test"], got[:cc]
    assert_equal params[:bcc], got[:bcc]
    assert_equal ["replies@recipient.test"], got[:reply_to]
    assert_equal [params[:subject], params[:html], params[:text]], [got[:subject], got[:html], got[:text]]
    assert_equal [{ "name" => "category", "value" => "welcome" }, { "name" => "user_id", "value" => "u-42" }], got[:tags]
    assert_equal "sent", got[:last_event]
    assert_nil got[:scheduled_at]
    assert_equal "<#{sent[:id]}@mail.herald.test>", got[:message_id]
    assert_timestamp got[:created_at]
    assert_recent got[:created_at]
  end

  def test_send_takes_to_as_one_string_and_absent_lists_read_as_null
    params = email("one recipient", to: "single@recipient.test", html: "<p>only html</p>")
    params.delete(:text)
    got = Resend::Emails.get(Resend::Emails.send(params)[:id])
    assert_equal ["single@recipient.test"], got[:to]
    assert_nil got[:cc]
    assert_nil got[:bcc]
    assert_nil got[:reply_to]
    assert_equal "<p>only html</p>", got[:html]
    assert_nil got[:text]
    # String keys work as well as symbols (the SDK just serialises the hash).
    sent = Resend::Emails.send({ "from" => sender, "to" => ["s@recipient.test"], "subject" => "strings", "text" => "x" })
    assert_equal "strings", Resend::Emails.get(sent[:id])[:subject]
  end

  def test_attachments_as_byte_arrays_base64_and_inline_are_accepted
    # The SDK's documented encodings: `file.bytes` (a JSON array of integers) and
    # `Base64.encode64` (which breaks lines every 60 characters), and `content_id` inline.
    params = email(
      "attachments",
      html: '<p>Logo: <img src="cid:logo-1" alt="logo"></p>',
      attachments: [
        { filename: "bytes.txt", content: "hello from Ruby bytes\n".bytes },
        { filename: "binary.bin", content: [0, 1, 2, 253, 254, 255] },
        { filename: "long.txt", content: Base64.encode64("x" * 200), content_type: "text/plain" },
        { filename: "strict.csv", content: Base64.strict_encode64("a,b\n1,2\n"), content_type: "text/csv" },
        { filename: "logo.png", content: PNG.bytes, content_type: "image/png", content_id: "logo-1" }
      ]
    )
    assert_includes Base64.encode64("x" * 200), "\n", "encode64 breaks lines"
    sent = Resend::Emails.send(params)
    assert_uuid sent[:id]
    got = Resend::Emails.get(sent[:id])
    assert_equal [params[:subject], params[:html], "sent"], [got[:subject], got[:html], got[:last_event]]

    # Refused, so the encodings above were decoded, not passed through.
    unprocessable { Resend::Emails.send(email("bad attachment", attachments: [{ filename: "empty.txt" }])) }
    unprocessable(/not valid base64/) { Resend::Emails.send(email("bad base64", attachments: [{ filename: "a.txt", content: "!!not base64**" }])) }
    unprocessable(/attachments\[0\]\.content/) { Resend::Emails.send(email("bad bytes", attachments: [{ filename: "a.bin", content: [300, 1] }])) }
  end

  def test_same_idempotency_key_and_payload_send_once_another_payload_gets_409
    key = "rb-#{random_id}"
    params = email("idempotent")
    first = Resend::Emails.send(params, options: { idempotency_key: key })
    second = Resend::Emails.send(params, options: { idempotency_key: key })
    assert_equal first[:id], second[:id], "the replay answers the first id"
    assert_equal 1, listed_with_subject(params[:subject]).length, "one email was sent"

    other = params.merge(subject: subject("idempotent other"))
    conflict { Resend::Emails.send(other, options: { idempotency_key: key }) }
    assert_empty listed_with_subject(other[:subject])
    refute_equal first[:id], Resend::Emails.send(params, options: { idempotency_key: "rb-#{random_id}" })[:id]
    # An empty key is not sent at all (the SDK drops it).
    refute_equal first[:id], Resend::Emails.send(params, options: { idempotency_key: "" })[:id]
    assert_resend_error(Resend::Error::InvalidRequestError, 400) do
      Resend::Emails.send(params, options: { idempotency_key: "k" * 257 })
    end
  end

  def test_batch_sends_every_email_and_answers_ids_in_order
    emails = [email("batch 0"), email("batch 1", to: ["x@recipient.test", "y@recipient.test"]), email("batch 2")]
    result = Resend::Batch.send(emails)
    assert_equal [:data], result.keys, "strict mode lists no errors"
    batch_ids = ids(result[:data])
    assert_equal 3, batch_ids.uniq.length
    batch_ids.each { |id| assert_uuid id }
    emails.zip(batch_ids).each do |params, id|
      got = Resend::Emails.get(id)
      assert_equal [params[:subject], "sent"], [got[:subject], got[:last_event]]
    end
    assert_equal ["x@recipient.test", "y@recipient.test"], Resend::Emails.get(batch_ids[1])[:to]
  end

  def test_batch_strict_refuses_the_whole_batch_for_one_invalid_email
    emails = [email("strict 0"), email("strict 1", to: "not-an-address"), email("strict 2")]
    [{}, { batch_validation: "strict" }].each do |options|
      unprocessable(/emails\[1\]/) { Resend::Batch.send(emails, options: options) }
    end
    emails.each { |params| assert_empty listed_with_subject(params[:subject]), "nothing was sent" }
    unprocessable { Resend::Batch.send(emails, options: { batch_validation: "lenient" }) }
  end

  def test_batch_permissive_sends_the_valid_emails_and_lists_the_errors
    emails = [email("permissive 0"), email("permissive 1", to: "not-an-address"), email("permissive 2")]
    result = Resend::Batch.send(emails, options: { batch_validation: "permissive" })
    assert_equal 2, result[:data].length
    assert_equal 1, result[:errors].length
    assert_equal 1, result[:errors][0]["index"]
    assert_kind_of String, result[:errors][0]["message"]
    refute_empty result[:errors][0]["message"]
    assert_equal emails[0][:subject], Resend::Emails.get(result[:data][0]["id"])[:subject]
    assert_equal emails[2][:subject], Resend::Emails.get(result[:data][1]["id"])[:subject]
    assert_empty listed_with_subject(emails[1][:subject])
  end

  def test_batch_honours_an_idempotency_key
    key = "rb-batch-#{random_id}"
    emails = [email("batch idem 0"), email("batch idem 1")]
    first = Resend::Batch.send(emails, options: { idempotency_key: key })
    again = Resend::Batch.send(emails, options: { idempotency_key: key, batch_validation: "strict" })
    assert_equal first[:data], again[:data]
    assert_equal 1, listed_with_subject(emails[0][:subject]).length
    conflict { Resend::Batch.send([emails[0]], options: { idempotency_key: key }) }
  end

  def test_scheduled_email_can_be_rescheduled_and_canceled
    at = Time.now.utc + 3600
    sent = Resend::Emails.send(email("scheduled", scheduled_at: iso(at)))
    scheduled = Resend::Emails.get(sent[:id])
    assert_equal "scheduled", scheduled[:last_event]
    assert_in_delta at.to_f, parse_time(scheduled[:scheduled_at]).to_f, 1.0

    target = Time.now.utc + 7200
    # The SDK sends {"email_id", "scheduled_at"} to PATCH /emails/{email_id}.
    updated = Resend::Emails.update({ email_id: sent[:id], scheduled_at: iso(target) })
    assert_equal({ "object" => "email", "id" => sent[:id] }, body(updated))
    moved = Resend::Emails.get(sent[:id])
    assert_equal "scheduled", moved[:last_event]
    assert_in_delta target.to_f, parse_time(moved[:scheduled_at]).to_f, 1.0

    canceled = Resend::Emails.cancel(sent[:id])
    assert_equal({ "object" => "email", "id" => sent[:id] }, body(canceled))
    assert_equal "canceled", Resend::Emails.get(sent[:id])[:last_event]
    unprocessable { Resend::Emails.cancel(sent[:id]) }
    unprocessable { Resend::Emails.update({ email_id: sent[:id], scheduled_at: iso(target) }) }
  end

  def test_scheduled_at_in_natural_language
    sent = Resend::Emails.send(email("natural language", scheduled_at: "in 1 hour"))
    scheduled = Resend::Emails.get(sent[:id])
    assert_equal "scheduled", scheduled[:last_event]
    assert_in_delta Time.now.to_f + 3600, parse_time(scheduled[:scheduled_at]).to_f, 60
    Resend::Emails.cancel(sent[:id])
  end

  def test_email_sent_now_cannot_be_canceled_or_rescheduled
    sent = Resend::Emails.send(email("not scheduled"))
    unprocessable { Resend::Emails.cancel(sent[:id]) }
    unprocessable { Resend::Emails.update({ email_id: sent[:id], scheduled_at: iso(Time.now + 3600) }) }
    assert_equal "sent", Resend::Emails.get(sent[:id])[:last_event]
  end

  def test_list_returns_the_envelope_newest_first_without_bodies
    first = Resend::Emails.send(email("list a", html: "<p>a</p>"))
    second = Resend::Emails.send(email("list b", html: "<p>b</p>", cc: "cc@recipient.test"))
    listed = Resend::Emails.list
    assert_equal "list", listed[:object]
    assert_includes [true, false], listed[:has_more]
    assert_operator listed[:data].length, :<=, 20, "the default page holds at most 20"
    listed_ids = ids(listed[:data])
    assert_operator listed_ids.index(second[:id]), :<, listed_ids.index(first[:id]), "the newer email comes first"
    item = listed[:data][listed_ids.index(second[:id])]
    full = body(Resend::Emails.get(second[:id]))
    %w[id to from created_at subject bcc cc reply_to last_event scheduled_at message_id].each do |field|
      assert_equal full[field], item[field], field
    end
    %w[html text tags object].each { |field| refute item.key?(field), "list item has no #{field}" }

    # Emails.list sends its options as the query (HTTParty's `query:`).
    page = Resend::Emails.list({ limit: 1 })
    assert_equal 1, page[:data].length
    assert_equal true, page[:has_more]
    after = Resend::Emails.list({ limit: 1, after: page[:data][0]["id"] })
    assert_equal 1, after[:data].length
    refute_equal page[:data][0]["id"], after[:data][0]["id"]
    before = Resend::Emails.list({ limit: 1, before: after[:data][0]["id"] })
    assert_equal ids(page[:data]), ids(before[:data])
    unprocessable { Resend::Emails.list({ limit: 1000 }) }
  end

  def test_refusals
    not_found { Resend::Emails.get(random_id) }
    not_found { Resend::Emails.cancel(random_id) }
    unprocessable { Resend::Emails.get("not-an-id") }

    unverified = unique_domain("unverified")
    Resend::Domains.create({ name: unverified })
    error = assert_resend_error(Resend::Error, 403) do
      Resend::Emails.send(email("unverified", from: "Someone <a@#{unverified}>"))
    end
    assert_includes error.message, unverified
    assert_resend_error(Resend::Error, 403) { Resend::Emails.send(email("unknown", from: "a@#{unique_domain('unknown')}")) }

    missing_field("subject") { Resend::Emails.send(email("no subject").tap { |p| p.delete(:subject) }) }
    missing_field("to") { Resend::Emails.send(email("no to").tap { |p| p.delete(:to) }) }
    unprocessable { Resend::Emails.send(email("bad from", from: "not an address")) }
    ["a\r\nBcc: victim@recipient.test", "line\nbreak"].each do |value|
      unprocessable(/headers/) { Resend::Emails.send(email("header injection", headers: { "X-Custom" => value })) }
    end
  end

  def test_sending_access_key_sends_from_its_domain_but_cannot_read_emails
    created = Resend::ApiKeys.create({ name: key_name("emails-sending"), permission: "sending_access", domain_id: domain[:id] })
    sent = nil
    with_key(created[:token]) do
      sent = Resend::Emails.send(email("sending key"))
      assert_equal 1, Resend::Batch.send([email("sending key batch")])[:data].length
      restricted { Resend::Emails.get(sent[:id]) }
      restricted { Resend::Emails.list }
    end
    assert Resend::Emails.get(sent[:id])[:subject].start_with?("rb sending key")
    Resend::ApiKeys.remove(created[:id])
  end
end
