# frozen_string_literal: true

# Broadcasts through the Ruby SDK: Resend::Broadcasts.create / get / update / list / send
# (now and `scheduled_at`) / cancel / remove (the SDK has no duplicate or recipients). A
# draft's every field and herald's own `progress`; a scheduled broadcast `queued` until
# canceled; `send: true` to a segment expanded into one personalised email per contact
# (read back with Resend::Emails.get), skipping the unsubscribed, the suppressed and a
# contact missing a value without fallback; and the refusals. The SDK puts `broadcast_id`
# into the bodies of update and send.
#
# Everything runs in the operator's team: a broadcast's `from` must be on a verified domain,
# and only the operator's key may mark one verified without DNS.

require_relative "test_helper"

class BroadcastsTest < Minitest::Test
  DRAFT_PROGRESS = { "status" => "draft", "total" => 0, "sent" => 0, "unsubscribed" => 0, "suppressed" => 0,
                     "failed" => 0, "canceled" => 0, "finished_at" => nil }.freeze
  # herald writes a broadcast's times in ISO 8601 (`…T…Z`); Resend's other resources `… +00`.
  BROADCAST_TIME_RE = /\A\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00)\z/.freeze

  @sender = nil
  @lock = Mutex.new
  class << self
    def sender
      @lock.synchronize { @sender ||= "Compat News <news@#{Compat.verified_domain('broadcasts')[:name]}>" }
    end
  end

  def sender
    self.class.sender
  end

  # An address no other test uses (lower case: a local part is compared as written).
  def address(label)
    "rb-bc-#{label}-#{hex(5)}@inbox.test"
  end

  def instant(text)
    assert_match BROADCAST_TIME_RE, text
    parse_time(text)
  end

  # A new segment holding a new contact for each of `people`: its id and the contacts' ids.
  def segment_of(*people)
    segment = Resend::Segments.create({ name: "Broadcast #{hex(4)}" })
    contact_ids = people.to_h do |person|
      [person[:email], Resend::Contacts.create(person.merge(segments: [{ id: segment[:id] }]))[:id]]
    end
    [segment[:id], contact_ids]
  end

  # The list item of `broadcast_id`, searched page by page (the operator's team has many).
  def listed(broadcast_id)
    params = { limit: 100 }
    loop do
      page = Resend::Broadcasts.list(params)
      assert_equal "list", page[:object]
      found = page[:data].find { |b| b["id"] == broadcast_id }
      return found if found

      assert page[:has_more], "broadcast #{broadcast_id} is not listed"
      params = { limit: 100, after: page[:data].last["id"] }
    end
  end

  def test_draft_create_get_update_list_schedule_cancel_remove
    segment_id, = segment_of({ email: address("draft") })
    topic_id = Resend::Topics.create({ name: "Broadcast #{hex(4)}", default_subscription: "opt_in" })[:id]
    name = "Launch #{hex(4)}"
    content = { "subject" => "Hello {{{FIRST_NAME|there}}}", "html" => "<p>Hi {{{FIRST_NAME|there}}}</p>", "text" => "Hi" }
    created = Resend::Broadcasts.create({ segment_id: segment_id, from: sender, name: name, reply_to: "reply@example.test",
                                          preview_text: "Out now", topic_id: topic_id, **content.transform_keys(&:to_sym) })
    assert_equal({ "object" => "broadcast", "id" => created[:id] }, body(created))
    assert_uuid created[:id]
    broadcast_id = created[:id]

    got = body(Resend::Broadcasts.get(broadcast_id))
    assert_recent instant(got.delete("created_at")).iso8601
    assert_equal({ "object" => "broadcast", "id" => broadcast_id, "name" => name, "audience_id" => segment_id,
                   "segment_id" => segment_id, "from" => sender, **content, "reply_to" => ["reply@example.test"],
                   "preview_text" => "Out now", "status" => "draft", "scheduled_at" => nil, "sent_at" => nil,
                   "topic_id" => topic_id, "progress" => DRAFT_PROGRESS }, got)

    # `audience_id` (deprecated; the SDK warns) names the segment too; without a name the
    # subject names the broadcast. 201 on the wire.
    wire = raw(:post, "/broadcasts", json: { audience_id: segment_id, from: sender, subject: "Wire", text: "Wire" })
    assert_equal 201, wire.status, wire.text
    legacy = Resend::Broadcasts.get(wire.json["id"])
    assert_equal [segment_id, "Wire", nil, nil], [legacy[:segment_id], legacy[:name], legacy[:html], legacy[:reply_to]]

    renamed = "#{name} v2"
    changes = { "name" => renamed, "subject" => "Updated", "html" => "<p>New</p>", "reply_to" => ["a@example.test", "b@example.test"] }
    updated = Resend::Broadcasts.update({ broadcast_id: broadcast_id, **changes.transform_keys(&:to_sym) })
    assert_equal({ "object" => "broadcast", "id" => broadcast_id }, body(updated))
    after = body(Resend::Broadcasts.get(broadcast_id))
    assert_equal changes, after.slice(*changes.keys)
    assert_equal ["Hi", "Out now", topic_id], after.values_at("text", "preview_text", "topic_id")

    assert_equal({ "id" => broadcast_id, "name" => renamed, "audience_id" => segment_id, "segment_id" => segment_id,
                   "status" => "draft", "created_at" => after["created_at"], "scheduled_at" => nil, "sent_at" => nil,
                   "topic_id" => topic_id, "progress" => DRAFT_PROGRESS }, listed(broadcast_id))
    one = Resend::Broadcasts.list({ limit: 1 })
    assert_equal [1, true], [one[:data].length, one[:has_more]]
    assert_equal({ "object" => "broadcast", "id" => wire.json["id"], "deleted" => true }, body(Resend::Broadcasts.remove(wire.json["id"])))

    # Scheduled: Resend's `queued`, herald's `scheduled`; no longer a draft to change.
    sent = Resend::Broadcasts.send({ broadcast_id: broadcast_id, scheduled_at: "in 1 hour" })
    assert_equal({ "object" => "broadcast", "id" => broadcast_id }, body(sent))
    scheduled = Resend::Broadcasts.get(broadcast_id)
    assert_equal ["queued", "scheduled", nil], [scheduled[:status], scheduled[:progress]["status"], scheduled[:sent_at]]
    assert_in_delta Time.now.to_f + 3600, instant(scheduled[:scheduled_at]).to_f, 60
    assert_equal "queued", listed(broadcast_id)["status"]
    unprocessable { Resend::Broadcasts.update({ broadcast_id: broadcast_id, name: "Late" }) }
    unprocessable { Resend::Broadcasts.remove(broadcast_id) }
    unprocessable { Resend::Broadcasts.send({ broadcast_id: broadcast_id }) }

    # Canceled before its time: nothing was sent, so Resend's `status` reads `draft` again.
    assert_equal({ "object" => "broadcast", "id" => broadcast_id, "canceled" => 0 }, body(Resend::Broadcasts.cancel(broadcast_id)))
    canceled = Resend::Broadcasts.get(broadcast_id)
    assert_equal ["draft", "canceled", 0], [canceled[:status], canceled[:progress]["status"], canceled[:progress]["canceled"]]
    assert_recent canceled[:progress]["finished_at"]
    unprocessable { Resend::Broadcasts.cancel(broadcast_id) }
    unprocessable { Resend::Broadcasts.remove(broadcast_id) }
    not_found { Resend::Broadcasts.get(random_id) }
    unprocessable { Resend::Broadcasts.get("not-a-broadcast") }
  end

  def test_send_personalises_per_contact_and_skips_unsubscribed_suppressed_and_incomplete
    tier = "tier_#{hex(4)}"
    Resend::ContactProperties.create({ key: tier, type: "string" })
    ann, bo, cy, dee, eve = %w[ann bo cy dee eve].map { |label| address(label) }
    Resend::Suppressions.add({ email: dee })
    segment_id, contact_ids = segment_of(
      { email: ann, first_name: "Ann", properties: { tier => "gold <vip>" } },
      { email: bo, properties: { tier => "silver" } },
      { email: cy, unsubscribed: true, properties: { tier => "gold" } },
      { email: dee, properties: { tier => "gold" } },
      { email: eve, first_name: "Eve" }
    )
    broadcast_id = Resend::Broadcasts.create({
                                               segment_id: segment_id, from: sender, subject: "Hi {{{FIRST_NAME|there}}}",
                                               html: "<p>{{{contact.first_name|Friend}}} on {{{#{tier}}}}</p>",
                                               text: "{{{EMAIL}}} on {{{contact.#{tier}}}}", send: true
                                             })[:id]

    broadcast = eventually("broadcast #{broadcast_id} sent") do
      current = Resend::Broadcasts.get(broadcast_id)
      refute_equal "canceled", current[:progress]["status"]
      current if current[:progress]["status"] == "sent"
    end
    assert_equal "sent", broadcast[:status]
    assert_recent broadcast[:sent_at]
    progress = broadcast[:progress].dup
    assert_recent progress.delete("finished_at")
    assert_equal({ "status" => "sent", "total" => 5, "sent" => 2, "unsubscribed" => 1, "suppressed" => 1, "failed" => 1,
                   "canceled" => 0 }, progress)

    # The emails it sent: the recipients list (raw: this SDK has no method for it) names them.
    recipients = raw(:get, "/broadcasts/#{broadcast_id}/recipients?type=sent")
    assert_equal 200, recipients.status, recipients.text
    by_to = recipients.json["data"].to_h { |r| [r["email"], r] }
    assert_equal [ann, bo].sort, by_to.keys.sort
    { ann => ["Hi Ann", "<p>Ann on gold &lt;vip&gt;</p>", "#{ann} on gold <vip>"],
      bo => ["Hi there", "<p>Friend on silver</p>", "#{bo} on silver"] }.each do |email, (subject, html, text)|
      assert_equal contact_ids[email], by_to[email]["contact_id"]
      record = Resend::Emails.get(by_to[email]["email_id"])
      assert_equal [[email], subject, html, text, sender], [record[:to], record[:subject], record[:html], record[:text], record[:from]]
      assert_equal [{ "name" => "broadcast_id", "value" => broadcast_id }], record[:tags]
    end
    assert_equal 5, contact_ids.length
    unprocessable { Resend::Broadcasts.cancel(broadcast_id) }
    unprocessable { Resend::Broadcasts.remove(broadcast_id) }
  end

  def test_refusals
    segment_id, = segment_of({ email: address("refusals") })
    empty = Resend::Segments.create({ name: "Empty #{hex(4)}" })[:id]
    base = { segment_id: segment_id, from: sender, subject: "Hello", html: "<p>Hello</p>" }
    unverified = unique_domain("unverified")
    Resend::Domains.create({ name: unverified })
    tag = "{{{company_#{hex(4)}}}}"

    unprocessable(/segment/) { Resend::Broadcasts.create(base.merge(segment_id: random_id)) }
    unprocessable(/not verified/) { Resend::Broadcasts.create(base.merge(from: "News <news@#{unverified}>")) }
    unprocessable(/#{Regexp.escape(tag)}/) { Resend::Broadcasts.create(base.merge(html: "<p>Hi #{tag}</p>")) }
    Resend::Broadcasts.create(base.merge(html: "<p>Hi #{tag.sub('}}}', '|friend}}}')}</p>"))
    unprocessable(/no contacts/) { Resend::Broadcasts.create(base.merge(segment_id: empty, send: true)) }
    draft = Resend::Broadcasts.create(base.merge(segment_id: empty))[:id]
    unprocessable(/no contacts/) { Resend::Broadcasts.send({ broadcast_id: draft }) }
    unprocessable(/scheduled_at/) { Resend::Broadcasts.create(base.merge(scheduled_at: "in 1 hour")) }
    unprocessable(/past/) { Resend::Broadcasts.create(base.merge(send: true, scheduled_at: "2020-01-01T00:00:00Z")) }
    missing_field("subject") { Resend::Broadcasts.create(base.reject { |k, _| k == :subject }) }
    missing_field("segment_id") { Resend::Broadcasts.create(base.reject { |k, _| k == :segment_id }) }
    unprocessable(/not verified/) { Resend::Broadcasts.update({ broadcast_id: draft, from: "news@#{unverified}" }) }
    unprocessable(/#{Regexp.escape(tag)}/) { Resend::Broadcasts.update({ broadcast_id: draft, subject: "For #{tag}" }) }
    unprocessable { Resend::Broadcasts.cancel(draft) }
    not_found { Resend::Broadcasts.send({ broadcast_id: random_id }) }
    not_found { Resend::Broadcasts.update({ broadcast_id: random_id, name: "x" }) }
    not_found { Resend::Broadcasts.remove(random_id) }
    assert_equal({ "object" => "broadcast", "id" => draft, "deleted" => true }, body(Resend::Broadcasts.remove(draft)))

    key = Resend::ApiKeys.create({ name: key_name("broadcasts-sending"), permission: "sending_access" })
    with_key(key[:token]) do
      restricted { Resend::Broadcasts.list }
      restricted { Resend::Broadcasts.create(base) }
    end
    Resend::ApiKeys.remove(key[:id])
  end
end
