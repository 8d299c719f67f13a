package compat

import (
	"strings"
	"testing"
	"time"

	"github.com/resend/resend-go/v3"
)

// Broadcasts run in the operator's team: a broadcast's `from` must be on a verified domain
// even as a draft, and only the operator's key may verify one without DNS. Every segment and
// contact is the test's own.

func broadcastSender(t *testing.T) string {
	name, _ := sendingDomain(t)
	return "Compat News <news@" + name + ">"
}

// segmentOf is a new segment holding a new contact for each request: its id and the contacts' ids.
func segmentOf(t *testing.T, c *client, people ...resend.CreateContactRequest) (string, map[string]string) {
	t.Helper()
	segment, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "Broadcast " + token(4)})
	c.must(t, err)
	ids := map[string]string{}
	for _, p := range people {
		p.Segments = []resend.ContactSegmentRef{{Id: segment.Id}}
		created, err := c.Contacts.Create(&p)
		c.must(t, err)
		ids[p.Email] = created.Id
	}
	return segment.Id, ids
}

func broadcastAddress(label string) string { return "go-bc-" + label + "-" + token(5) + "@inbox.test" }

// listedBroadcast is the broadcast's list item, searched page by page.
func listedBroadcast(t *testing.T, c *client, id string) resend.Broadcast {
	t.Helper()
	opts := &resend.ListOptions{Limit: ptr(100)}
	for {
		page, err := c.Broadcasts.ListWithOptions(ctx(), opts)
		c.must(t, err)
		eq(t, "object", page.Object, "list")
		for _, b := range page.Data {
			if b.Id == id {
				return b
			}
		}
		if !page.HasMore || len(page.Data) == 0 {
			t.Fatalf("broadcast %s is not listed", id)
		}
		opts = &resend.ListOptions{Limit: ptr(100), After: ptr(page.Data[len(page.Data)-1].Id)}
	}
}

func TestBroadcastsDraftScheduleCancelRemove(t *testing.T) {
	t.Parallel()
	c := operator(t)
	from := broadcastSender(t)
	segmentID, _ := segmentOf(t, c, resend.CreateContactRequest{Email: broadcastAddress("draft")})
	name := "Launch " + token(4)
	created, err := c.Broadcasts.Create(&resend.CreateBroadcastRequest{
		SegmentId: segmentID, From: from, Name: name, ReplyTo: []string{"reply@example.test"},
		Subject: "Hello {{{FIRST_NAME|there}}}", Html: "<p>Hi {{{FIRST_NAME|there}}}</p>", Text: "Hi",
	})
	c.must(t, err)
	c.status(t, 201)
	eq(t, "path", c.last(t).Path, "/broadcasts")
	matches(t, "id", uuidRE, created.Id)
	eq(t, "create answer", c.lastJSON(t), map[string]any{"object": "broadcast", "id": created.Id})
	id := created.Id

	got, err := c.Broadcasts.Get(id)
	c.must(t, err)
	if age := time.Since(parseTimestamp(t, got.CreatedAt)); age < -5*time.Second || age > time.Minute {
		t.Fatalf("created_at %s is not now", got.CreatedAt)
	}
	eq(t, "get", got, resend.Broadcast{Object: "broadcast", Id: id, Name: name, SegmentId: segmentID, AudienceId: segmentID,
		From: from, Subject: "Hello {{{FIRST_NAME|there}}}", ReplyTo: []string{"reply@example.test"}, Status: "draft",
		CreatedAt: got.CreatedAt, Html: "<p>Hi {{{FIRST_NAME|there}}}</p>", Text: "Hi"})
	wire := c.lastJSON(t)
	for _, field := range []string{"scheduled_at", "sent_at", "preview_text"} {
		eq(t, field, wire[field], nil)
	}
	eq(t, "progress.status", wire["progress"].(map[string]any)["status"], "draft")

	// Update (the SDK sends broadcast_id in the body too).
	updated, err := c.Broadcasts.Update(&resend.UpdateBroadcastRequest{BroadcastId: id, Name: name + " v2", Subject: "Updated",
		Html: "<p>New</p>", ReplyTo: []string{"a@example.test", "b@example.test"}})
	c.must(t, err)
	eq(t, "update", updated, resend.UpdateBroadcastResponse{Id: id})
	eq(t, "update answer", c.lastJSON(t), map[string]any{"object": "broadcast", "id": id})
	got, err = c.Broadcasts.Get(id)
	c.must(t, err)
	eq(t, "updated", []any{got.Name, got.Subject, got.Html, got.ReplyTo, got.Text}, []any{name + " v2", "Updated", "<p>New</p>", []string{"a@example.test", "b@example.test"}, "Hi"})

	item := listedBroadcast(t, c, id)
	eq(t, "list item", item, resend.Broadcast{Id: id, Name: name + " v2", SegmentId: segmentID, AudienceId: segmentID, Status: "draft", CreatedAt: got.CreatedAt})
	// A second draft, so that a page of one has more after it whatever the tests running
	// beside this one have made or removed.
	sibling, err := c.Broadcasts.Create(&resend.CreateBroadcastRequest{
		SegmentId: segmentID, From: from, Name: name + " sibling", Subject: "Sibling", Html: "<p>Sibling</p>",
	})
	c.must(t, err)
	defer c.Broadcasts.Remove(sibling.Id)
	one, err := c.Broadcasts.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1)})
	c.must(t, err)
	eq(t, "limit 1", []any{len(one.Data), one.HasMore}, []any{1, true})

	// Scheduled: Resend's `queued`; no longer a draft to change.
	sent, err := c.Broadcasts.Send(&resend.SendBroadcastRequest{BroadcastId: id, ScheduledAt: "in 1 hour"})
	c.must(t, err)
	eq(t, "send", sent, resend.SendBroadcastResponse{Id: id})
	eq(t, "send path", c.last(t).Path, "/broadcasts/"+id+"/send")
	got, err = c.Broadcasts.Get(id)
	c.must(t, err)
	eq(t, "status", got.Status, "queued")
	eq(t, "sent_at", got.SentAt, "")
	if ahead := time.Until(parseTimestamp(t, got.ScheduledAt)); ahead < 59*time.Minute || ahead > 61*time.Minute {
		t.Fatalf("scheduled_at %s is not in an hour", got.ScheduledAt)
	}
	eq(t, "listed status", listedBroadcast(t, c, id).Status, "queued")
	_, err = c.Broadcasts.Update(&resend.UpdateBroadcastRequest{BroadcastId: id, Name: "Late"})
	c.refused(t, err, 422, "validation_error")
	_, err = c.Broadcasts.Remove(id)
	c.refused(t, err, 422, "validation_error")
	_, err = c.Broadcasts.Send(&resend.SendBroadcastRequest{BroadcastId: id})
	c.refused(t, err, 422, "validation_error")

	canceled, err := c.Broadcasts.Cancel(id)
	c.must(t, err)
	eq(t, "cancel", canceled, resend.CancelBroadcastResponse{Object: "broadcast", Id: id})
	got, err = c.Broadcasts.Get(id)
	c.must(t, err)
	eq(t, "status after cancel", got.Status, "draft")
	eq(t, "progress.status", c.lastJSON(t)["progress"].(map[string]any)["status"], "canceled")
	_, err = c.Broadcasts.Cancel(id)
	c.refused(t, err, 422, "validation_error")

	draft, err := c.Broadcasts.Create(&resend.CreateBroadcastRequest{AudienceId: segmentID, From: from, Subject: "Wire", Text: "Wire"})
	c.must(t, err)
	got, err = c.Broadcasts.Get(draft.Id)
	c.must(t, err)
	eq(t, "audience_id names the segment", got.SegmentId, segmentID)
	eq(t, "subject names it", got.Name, "Wire")
	removed, err := c.Broadcasts.Remove(draft.Id)
	c.must(t, err)
	eq(t, "remove", removed, resend.RemoveBroadcastResponse{Object: "broadcast", Id: draft.Id, Deleted: true})
	_, err = c.Broadcasts.Get(draft.Id)
	c.refused(t, err, 404, "not_found")
	_, err = c.Broadcasts.Remove(draft.Id)
	c.refused(t, err, 404, "not_found")
}

// Sent now: resend-go's Send always writes `"scheduled_at"`, empty when not set, which
// means now.
func TestBroadcastsSendNowPersonalises(t *testing.T) {
	t.Parallel()
	c := operator(t)
	from := broadcastSender(t)
	ann, bo, cy := broadcastAddress("ann"), broadcastAddress("bo"), broadcastAddress("cy")
	segmentID, _ := segmentOf(t, c,
		resend.CreateContactRequest{Email: ann, FirstName: "Ann"},
		resend.CreateContactRequest{Email: bo},
		resend.CreateContactRequest{Email: cy, Unsubscribed: true},
	)
	created, err := c.Broadcasts.Create(&resend.CreateBroadcastRequest{SegmentId: segmentID, From: from,
		Subject: "Hi {{{FIRST_NAME|there}}}", Html: "<p>{{{contact.first_name|Friend}}}</p>", Text: "{{{EMAIL}}}"})
	c.must(t, err)
	_, err = c.Broadcasts.Send(&resend.SendBroadcastRequest{BroadcastId: created.Id})
	c.must(t, err)
	eq(t, "send body", c.lastRequestJSON(t), map[string]any{"broadcast_id": created.Id, "scheduled_at": ""})

	var got resend.Broadcast
	var progress map[string]any
	eventually(t, 30*time.Second, "broadcast sent", func() bool {
		got, err = c.Broadcasts.Get(created.Id)
		c.must(t, err)
		progress = c.lastJSON(t)["progress"].(map[string]any)
		if progress["status"] == "canceled" {
			t.Fatalf("broadcast canceled: %v", progress)
		}
		return progress["status"] == "sent"
	})
	eq(t, "status", got.Status, "sent")
	if age := time.Since(parseTimestamp(t, got.SentAt)); age < -5*time.Second || age > time.Minute {
		t.Fatalf("sent_at %s is not now", got.SentAt)
	}
	eq(t, "counts", []any{progress["total"], progress["sent"], progress["unsubscribed"]}, []any{3, 2, 1})

	// The emails it became, personalised, through the raw recipients list.
	resp := raw(t, "GET", "/broadcasts/"+created.Id+"/recipients?type=sent", apiKey, nil)
	eq(t, "recipients status", resp.Status, 200)
	want := map[string][3]string{
		ann: {"Hi Ann", "<p>Ann</p>", ann},
		bo:  {"Hi there", "<p>Friend</p>", bo},
	}
	data := resp.json(t)["data"].([]any)
	eq(t, "recipients", len(data), 2)
	for _, r := range data {
		entry := r.(map[string]any)
		email := entry["email"].(string)
		w, ok := want[email]
		if !ok {
			t.Fatalf("unexpected recipient %v", entry)
		}
		e, err := c.Emails.Get(entry["email_id"].(string))
		c.must(t, err)
		eq(t, "email", []any{e.To, e.Subject, e.Html, e.Text, e.From}, []any{[]string{email}, w[0], w[1], w[2], from})
	}
	_, err = c.Broadcasts.Cancel(created.Id)
	c.refused(t, err, 422, "validation_error")
	_, err = c.Broadcasts.Remove(created.Id)
	c.refused(t, err, 422, "validation_error")
}

func TestBroadcastsRefusals(t *testing.T) {
	t.Parallel()
	c := operator(t)
	from := broadcastSender(t)
	segmentID, _ := segmentOf(t, c, resend.CreateContactRequest{Email: broadcastAddress("refusals")})
	empty, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "Empty " + token(4)})
	c.must(t, err)
	base := func() *resend.CreateBroadcastRequest {
		return &resend.CreateBroadcastRequest{SegmentId: segmentID, From: from, Subject: "Hello", Html: "<p>Hello</p>"}
	}
	refused := func(err error, status int, name, text string) {
		t.Helper()
		if msg := c.refused(t, err, status, name); !strings.Contains(msg, text) {
			t.Fatalf("message %q does not contain %q", msg, text)
		}
	}
	unverified := uniqueDomain("unverified")
	_, err = c.Domains.Create(&resend.CreateDomainRequest{Name: unverified})
	c.must(t, err)

	p := base()
	p.SegmentId = newUUID()
	_, err = c.Broadcasts.Create(p)
	refused(err, 422, "validation_error", "segment")
	p = base()
	p.From = "News <news@" + unverified + ">"
	_, err = c.Broadcasts.Create(p)
	refused(err, 422, "validation_error", "not verified")
	tag := "{{{company_" + token(4) + "}}}"
	p = base()
	p.Html = "<p>Hi " + tag + "</p>"
	_, err = c.Broadcasts.Create(p)
	refused(err, 422, "validation_error", tag)
	p = base()
	p.SegmentId = empty.Id
	p.Send = true
	_, err = c.Broadcasts.Create(p)
	refused(err, 422, "validation_error", "no contacts")
	p = base()
	p.ScheduledAt = "in 1 hour"
	_, err = c.Broadcasts.Create(p)
	refused(err, 422, "validation_error", "scheduled_at")
	p = base()
	p.Send, p.ScheduledAt = true, "2020-01-01T00:00:00Z"
	_, err = c.Broadcasts.Create(p)
	refused(err, 422, "validation_error", "past")
	p = base()
	p.Html = ""
	_, err = c.Broadcasts.Create(p)
	refused(err, 422, "missing_required_field", "html")

	p = base()
	p.SegmentId = empty.Id
	draft, err := c.Broadcasts.Create(p)
	c.must(t, err)
	_, err = c.Broadcasts.Send(&resend.SendBroadcastRequest{BroadcastId: draft.Id})
	refused(err, 422, "validation_error", "no contacts")
	_, err = c.Broadcasts.Update(&resend.UpdateBroadcastRequest{BroadcastId: draft.Id, From: "news@" + unverified})
	refused(err, 422, "validation_error", "not verified")
	_, err = c.Broadcasts.Cancel(draft.Id)
	c.refused(t, err, 422, "validation_error")
	_, err = c.Broadcasts.Update(&resend.UpdateBroadcastRequest{BroadcastId: newUUID(), Name: "x"})
	c.refused(t, err, 404, "not_found")
	_, err = c.Broadcasts.Send(&resend.SendBroadcastRequest{BroadcastId: newUUID()})
	c.refused(t, err, 404, "not_found")
}
