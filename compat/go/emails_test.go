package compat

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/resend/resend-go/v3"
)

const recipient = "someone@recipient.test"

func sender(t *testing.T) string {
	name, _ := sendingDomain(t)
	return "Compat Sender <hello@" + name + ">"
}

func subject(label string) string { return fmt.Sprintf("go %s %s", label, token(6)) }

func simpleEmail(t *testing.T, label string) *resend.SendEmailRequest {
	return &resend.SendEmailRequest{From: sender(t), To: []string{recipient}, Subject: subject(label), Text: "Body of " + label}
}

// withSubject is how many of the team's newest 100 emails have this subject.
func withSubject(t *testing.T, c *client, wanted string) int {
	t.Helper()
	listed, err := c.Emails.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(100)})
	c.must(t, err)
	n := 0
	for _, e := range listed.Data {
		if e.Subject == wanted {
			n++
		}
	}
	return n
}

func TestEmailsSendEveryFieldAndGet(t *testing.T) {
	t.Parallel()
	c := operator(t)
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	params := &resend.SendEmailRequest{
		From:    sender(t),
		To:      []string{"alice@recipient.test", "bob@recipient.test"},
		Cc:      []string{"carol@recipient.test"},
		Bcc:     []string{"dave@recipient.test", "erin@recipient.test"},
		ReplyTo: "replies@recipient.test",
		Subject: subject("every field"),
		Html:    `<p>Hello <strong>there</strong> <img src="cid:logo-1"></p>`,
		Text:    "Hello there",
		Headers: map[string]string{"X-Entity-Ref-ID": "ref-123", "List-Unsubscribe": "<mailto:unsubscribe@recipient.test>"},
		Tags:    []resend.Tag{{Name: "category", Value: "welcome"}, {Name: "user_id", Value: "u-42"}},
		Attachments: []*resend.Attachment{
			{Filename: "hello.txt", Content: []byte("hello from Go\n")},
			{Filename: "binary.bin", Content: []byte{0, 1, 2, 253, 254, 255}, ContentType: "application/octet-stream"},
			{Filename: "logo.png", Content: png, ContentType: "image/png", ContentId: "logo-1"},
			{Filename: "inline.png", Content: png, ContentType: "image/png", InlineContentId: "logo-2"},
		},
	}
	sent, err := c.Emails.Send(params)
	c.must(t, err)
	c.status(t, 200)
	matches(t, "id", uuidRE, sent.Id)
	eq(t, "answer", c.lastJSON(t), map[string]any{"id": sent.Id})
	// resend-go sends attachment content as a JSON array of byte values.
	body := c.lastRequestJSON(t).(map[string]any)
	first := body["attachments"].([]any)[0].(map[string]any)
	eq(t, "attachment content on the wire", first["content"], []int{104, 101, 108, 108, 111, 32, 102, 114, 111, 109, 32, 71, 111, 10})
	eq(t, "inline_content_id on the wire", body["attachments"].([]any)[3].(map[string]any)["inline_content_id"], "logo-2")

	got, err := c.Emails.Get(sent.Id)
	c.must(t, err)
	eq(t, "object", got.Object, "email")
	eq(t, "id", got.Id, sent.Id)
	eq(t, "from", got.From, params.From)
	eq(t, "to", got.To, params.To)
	eq(t, "cc", got.Cc, params.Cc)
	eq(t, "bcc", got.Bcc, params.Bcc)
	eq(t, "reply_to", got.ReplyTo, []string{params.ReplyTo})
	eq(t, "subject", got.Subject, params.Subject)
	eq(t, "html", got.Html, params.Html)
	eq(t, "text", got.Text, params.Text)
	eq(t, "last_event", got.LastEvent, "sent")
	eq(t, "message_id", got.MessageId, "<"+sent.Id+"@mail.herald.test>")
	matches(t, "created_at", timestampRE, got.CreatedAt)
	if age := time.Since(parseTimestamp(t, got.CreatedAt)); age < -5*time.Second || age > time.Minute {
		t.Fatalf("created_at %s is not now", got.CreatedAt)
	}
	wire := c.lastJSON(t)
	eq(t, "tags", wire["tags"], params.Tags)
	eq(t, "scheduled_at", wire["scheduled_at"], nil)
}

func TestEmailsAbsentFieldsReadAsNull(t *testing.T) {
	t.Parallel()
	c := operator(t)
	params := simpleEmail(t, "html only")
	params.Text = ""
	params.Html = "<p>only html</p>"
	sent, err := c.Emails.Send(params)
	c.must(t, err)
	// resend-go always sends `subject` and `from`; the rest is left out when empty.
	eq(t, "request", c.lastRequestJSON(t), map[string]any{"from": params.From, "to": params.To, "subject": params.Subject, "html": params.Html})
	got, err := c.Emails.Get(sent.Id)
	c.must(t, err)
	wire := c.lastJSON(t)
	for _, field := range []string{"cc", "bcc", "reply_to", "text"} {
		if v, ok := wire[field]; !ok || v != nil {
			t.Fatalf("%s: %#v, want null", field, v)
		}
	}
	eq(t, "html", got.Html, "<p>only html</p>")
	eq(t, "cc", got.Cc, []string(nil))
}

func TestEmailsIdempotencyKey(t *testing.T) {
	t.Parallel()
	c := operator(t)
	key := "go-" + newUUID()
	params := simpleEmail(t, "idempotent")
	first, err := c.Emails.SendWithOptions(ctx(), params, &resend.SendEmailOptions{IdempotencyKey: key})
	c.must(t, err)
	eq(t, "Idempotency-Key", c.last(t).ReqHeader.Get("Idempotency-Key"), key)
	again, err := c.Emails.SendWithOptions(ctx(), params, &resend.SendEmailOptions{IdempotencyKey: key})
	c.must(t, err)
	eq(t, "replayed id", again.Id, first.Id)
	eq(t, "sent once", withSubject(t, c, params.Subject), 1)

	other := *params
	other.Subject = subject("idempotent other")
	_, err = c.Emails.SendWithOptions(ctx(), &other, &resend.SendEmailOptions{IdempotencyKey: key})
	c.refused(t, err, 409, "invalid_idempotent_request")
	eq(t, "not sent", withSubject(t, c, other.Subject), 0)

	third, err := c.Emails.SendWithOptions(ctx(), params, &resend.SendEmailOptions{IdempotencyKey: "go-" + newUUID()})
	c.must(t, err)
	if third.Id == first.Id {
		t.Fatal("another key answered the same id")
	}
	_, err = c.Emails.SendWithOptions(ctx(), params, &resend.SendEmailOptions{IdempotencyKey: strings.Repeat("k", 257)})
	c.refused(t, err, 400, "invalid_idempotency_key")
}

func TestEmailsBatch(t *testing.T) {
	t.Parallel()
	c := operator(t)
	emails := []*resend.SendEmailRequest{simpleEmail(t, "batch 0"), simpleEmail(t, "batch 1"), simpleEmail(t, "batch 2")}
	emails[1].To = []string{"x@recipient.test", "y@recipient.test"}
	emails[2].Tags = []resend.Tag{{Name: "kind", Value: "batch"}}
	result, err := c.Batch.Send(emails)
	c.must(t, err)
	if h := c.last(t).ReqHeader.Get("x-batch-validation"); h != "" {
		t.Fatalf("Batch.Send sent x-batch-validation %q", h)
	}
	if len(result.Data) != 3 || result.Errors != nil {
		t.Fatalf("batch answer %#v", result)
	}
	if _, ok := c.lastJSON(t)["errors"]; ok {
		t.Fatal("strict mode answers no `errors`")
	}
	seen := map[string]bool{}
	for i, d := range result.Data {
		matches(t, "id", uuidRE, d.Id)
		seen[d.Id] = true
		got, err := c.Emails.Get(d.Id)
		c.must(t, err)
		eq(t, "subject", got.Subject, emails[i].Subject)
		eq(t, "to", got.To, emails[i].To)
		eq(t, "last_event", got.LastEvent, "sent")
	}
	eq(t, "distinct ids", len(seen), 3)
}

func TestEmailsBatchStrictAndPermissive(t *testing.T) {
	t.Parallel()
	c := operator(t)
	emails := func(label string) []*resend.SendEmailRequest {
		e := []*resend.SendEmailRequest{simpleEmail(t, label+" 0"), simpleEmail(t, label+" 1"), simpleEmail(t, label+" 2")}
		e[1].To = []string{"not-an-address"}
		return e
	}
	strict := emails("strict")
	_, err := c.Batch.Send(strict)
	c.refused(t, err, 422, "validation_error")
	_, err = c.Batch.SendWithOptions(ctx(), strict, &resend.BatchSendEmailOptions{BatchValidation: resend.BatchValidationStrict})
	c.refused(t, err, 422, "validation_error")
	eq(t, "x-batch-validation", c.last(t).ReqHeader.Get("x-batch-validation"), "strict")
	for _, e := range strict {
		eq(t, "nothing sent", withSubject(t, c, e.Subject), 0)
	}

	permissive := emails("permissive")
	result, err := c.Batch.SendWithOptions(ctx(), permissive, &resend.BatchSendEmailOptions{BatchValidation: resend.BatchValidationPermissive})
	c.must(t, err)
	eq(t, "x-batch-validation", c.last(t).ReqHeader.Get("x-batch-validation"), "permissive")
	if len(result.Data) != 2 || len(result.Errors) != 1 {
		t.Fatalf("permissive answer %#v", result)
	}
	eq(t, "error index", result.Errors[0].Index, 1)
	if result.Errors[0].Message == "" {
		t.Fatal("the error has no message")
	}
	for i, want := range []int{0, 2} {
		got, err := c.Emails.Get(result.Data[i].Id)
		c.must(t, err)
		eq(t, "subject", got.Subject, permissive[want].Subject)
	}
	eq(t, "invalid not sent", withSubject(t, c, permissive[1].Subject), 0)

	// An attachment or scheduled_at in a batch item is refused.
	withAttachment := []*resend.SendEmailRequest{simpleEmail(t, "batch attachment")}
	withAttachment[0].Attachments = []*resend.Attachment{{Filename: "a.txt", Content: []byte("a")}}
	_, err = c.Batch.Send(withAttachment)
	c.refused(t, err, 422, "validation_error")
}

func TestEmailsBatchIdempotencyKey(t *testing.T) {
	t.Parallel()
	c := operator(t)
	key := "go-batch-" + newUUID()
	emails := []*resend.SendEmailRequest{simpleEmail(t, "batch idem 0"), simpleEmail(t, "batch idem 1")}
	first, err := c.Batch.SendWithOptions(ctx(), emails, &resend.BatchSendEmailOptions{IdempotencyKey: key})
	c.must(t, err)
	eq(t, "Idempotency-Key", c.last(t).ReqHeader.Get("Idempotency-Key"), key)
	again, err := c.Batch.SendWithOptions(ctx(), emails, &resend.BatchSendEmailOptions{IdempotencyKey: key})
	c.must(t, err)
	eq(t, "replayed", again.Data, first.Data)
	eq(t, "sent once", withSubject(t, c, emails[0].Subject), 1)
	_, err = c.Batch.SendWithOptions(ctx(), emails[:1], &resend.BatchSendEmailOptions{IdempotencyKey: key})
	c.refused(t, err, 409, "invalid_idempotent_request")
}

func iso(at time.Time) string { return at.UTC().Format("2006-01-02T15:04:05.000Z") }

// scheduledAt reads `scheduled_at` from GET /emails/{id} (resend.Email does not decode it).
func scheduledAt(t *testing.T, c *client, id string) (string, *resend.Email) {
	t.Helper()
	got, err := c.Emails.Get(id)
	c.must(t, err)
	s, _ := c.lastJSON(t)["scheduled_at"].(string)
	return s, got
}

func TestEmailsScheduleRescheduleCancel(t *testing.T) {
	t.Parallel()
	c := operator(t)
	// Natural language, as Resend documents.
	natural := simpleEmail(t, "natural")
	natural.ScheduledAt = "in 1 hour"
	sent, err := c.Emails.Send(natural)
	c.must(t, err)
	at, got := scheduledAt(t, c, sent.Id)
	eq(t, "last_event", got.LastEvent, "scheduled")
	if d := time.Until(parseTimestamp(t, at)) - time.Hour; d < -time.Minute || d > time.Minute {
		t.Fatalf("scheduled_at %s is not in an hour", at)
	}
	_, err = c.Emails.Cancel(sent.Id)
	c.must(t, err)

	when := time.Now().Add(time.Hour)
	params := simpleEmail(t, "scheduled")
	params.ScheduledAt = iso(when)
	sent, err = c.Emails.Send(params)
	c.must(t, err)
	at, got = scheduledAt(t, c, sent.Id)
	eq(t, "last_event", got.LastEvent, "scheduled")
	if d := parseTimestamp(t, at).Sub(when); d < -time.Second || d > time.Second {
		t.Fatalf("scheduled_at %s, want %s", at, iso(when))
	}

	target := time.Now().Add(2 * time.Hour)
	updated, err := c.Emails.Update(&resend.UpdateEmailRequest{Id: sent.Id, ScheduledAt: iso(target)})
	c.must(t, err)
	eq(t, "update", updated, &resend.UpdateEmailResponse{Object: "email", Id: sent.Id})
	at, got = scheduledAt(t, c, sent.Id)
	eq(t, "last_event", got.LastEvent, "scheduled")
	if d := parseTimestamp(t, at).Sub(target); d < -time.Second || d > time.Second {
		t.Fatalf("rescheduled_at %s, want %s", at, iso(target))
	}

	canceled, err := c.Emails.Cancel(sent.Id)
	c.must(t, err)
	eq(t, "cancel", canceled, &resend.CancelScheduledEmailResponse{Object: "email", Id: sent.Id})
	if len(c.last(t).ReqBody) != 0 {
		t.Fatalf("the SDK sent a body with cancel: %q", c.last(t).ReqBody)
	}
	_, got = scheduledAt(t, c, sent.Id)
	eq(t, "last_event", got.LastEvent, "canceled")
	_, err = c.Emails.Cancel(sent.Id)
	c.refused(t, err, 422, "validation_error")
	_, err = c.Emails.Update(&resend.UpdateEmailRequest{Id: sent.Id, ScheduledAt: iso(target)})
	c.refused(t, err, 422, "validation_error")

	now, err := c.Emails.Send(simpleEmail(t, "not scheduled"))
	c.must(t, err)
	_, err = c.Emails.Cancel(now.Id)
	c.refused(t, err, 422, "validation_error")
	_, err = c.Emails.Update(&resend.UpdateEmailRequest{Id: now.Id, ScheduledAt: iso(target)})
	c.refused(t, err, 422, "validation_error")
	_, got = scheduledAt(t, c, now.Id)
	eq(t, "last_event", got.LastEvent, "sent")
}

func TestEmailsListPaginates(t *testing.T) {
	t.Parallel()
	// Only the operator's team has a domain verified without DNS: its emails are found by id.
	c := operator(t)
	first, err := c.Emails.Send(simpleEmail(t, "list a"))
	c.must(t, err)
	second := simpleEmail(t, "list b")
	second.Cc = []string{"cc@recipient.test"}
	secondSent, err := c.Emails.Send(second)
	c.must(t, err)
	page20, err := c.Emails.List()
	c.must(t, err)
	eq(t, "object", page20.Object, "list")
	if len(page20.Data) > 20 {
		t.Fatalf("the default page holds %d", len(page20.Data))
	}
	eq(t, "path", c.last(t).Path, "/emails")
	// Other tests send at the same time: look among the newest 100.
	listed, err := c.Emails.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(100)})
	c.must(t, err)
	pos := map[string]int{}
	for i, e := range listed.Data {
		pos[e.Id] = i
	}
	a, okA := pos[first.Id]
	b, okB := pos[secondSent.Id]
	if !okA || !okB || b > a {
		t.Fatalf("newest first: %v %v %d %d", okA, okB, a, b)
	}
	item := listed.Data[b]
	full, err := c.Emails.Get(secondSent.Id)
	c.must(t, err)
	eq(t, "list item", item, resend.Email{Id: full.Id, MessageId: full.MessageId, To: full.To, From: full.From, CreatedAt: full.CreatedAt,
		Subject: full.Subject, Bcc: full.Bcc, Cc: full.Cc, ReplyTo: full.ReplyTo, LastEvent: full.LastEvent})

	page, err := c.Emails.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1)})
	c.must(t, err)
	eq(t, "limit 1", len(page.Data), 1)
	eq(t, "has_more", page.HasMore, true)
	next, err := c.Emails.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1), After: ptr(page.Data[0].Id)})
	c.must(t, err)
	eq(t, "limit 1", len(next.Data), 1)
	if next.Data[0].Id == page.Data[0].Id {
		t.Fatal("after repeats the cursor")
	}
}

func TestEmailsRefusals(t *testing.T) {
	t.Parallel()
	c := operator(t)
	name, _ := sendingDomain(t)
	unverified := uniqueDomain("unverified")
	_, err := c.Domains.Create(&resend.CreateDomainRequest{Name: unverified})
	c.must(t, err)
	params := simpleEmail(t, "unverified")
	params.From = "Someone <a@" + unverified + ">"
	_, err = c.Emails.Send(params)
	if msg := c.refused(t, err, 403, "validation_error"); !strings.Contains(msg, unverified) {
		t.Fatalf("message %q does not name the domain", msg)
	}
	params.From = "a@" + uniqueDomain("unknown")
	_, err = c.Emails.Send(params)
	c.refused(t, err, 403, "validation_error")

	noTo := simpleEmail(t, "no to")
	noTo.To = nil
	_, err = c.Emails.Send(noTo)
	c.refused(t, err, 422, "missing_required_field")
	// resend-go always sends `from` (and `subject`): without a template, an empty `from`
	// is an invalid one.
	noFrom := simpleEmail(t, "no from")
	noFrom.From = ""
	_, err = c.Emails.Send(noFrom)
	if msg := c.refused(t, err, 422, "validation_error"); !strings.Contains(msg, "`from`") {
		t.Fatalf("message %q does not name from", msg)
	}

	for _, value := range []string{"a\r\nBcc: victim@recipient.test", "line\nbreak", "carriage\rreturn"} {
		injected := simpleEmail(t, "header injection")
		injected.Headers = map[string]string{"X-Custom": value}
		_, err = c.Emails.Send(injected)
		if msg := c.refused(t, err, 422, "validation_error"); !strings.Contains(msg, "headers") {
			t.Fatalf("message %q does not name headers", msg)
		}
	}
	// resend-go leaves out an empty content: an attachment with neither content nor path.
	empty := simpleEmail(t, "bad attachment")
	empty.Attachments = []*resend.Attachment{{Filename: "empty.txt"}}
	_, err = c.Emails.Send(empty)
	c.refused(t, err, 422, "invalid_attachment")

	tooMany := simpleEmail(t, "too many")
	for i := 0; i < 51; i++ {
		tooMany.To = append(tooMany.To, fmt.Sprintf("r%d@recipient.test", i))
	}
	_, err = c.Emails.Send(tooMany)
	c.refused(t, err, 422, "validation_error")
	_ = name
}

func TestEmailsSendingKeySendsButCannotRead(t *testing.T) {
	t.Parallel()
	c := operator(t)
	_, domainID := sendingDomain(t)
	created, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: keyName("emails-sending"), Permission: "sending_access", DomainId: domainID})
	c.must(t, err)
	s := newClient(t, created.Token)
	params := simpleEmail(t, "sending key")
	sent, err := s.Emails.Send(params)
	s.must(t, err)
	_, err = s.Batch.Send([]*resend.SendEmailRequest{simpleEmail(t, "sending key batch")})
	s.must(t, err)
	_, err = s.Emails.Get(sent.Id)
	s.refused(t, err, 401, "restricted_api_key")
	_, err = s.Emails.List()
	s.refused(t, err, 401, "restricted_api_key")
	got, err := c.Emails.Get(sent.Id)
	c.must(t, err)
	eq(t, "subject", got.Subject, params.Subject)
	// Bound to one domain: another is refused.
	other, err := c.Domains.Create(&resend.CreateDomainRequest{Name: uniqueDomain("other")})
	c.must(t, err)
	verifyWithoutDNS(t, other.Id)
	elsewhere := simpleEmail(t, "sending key elsewhere")
	elsewhere.From = "x@" + other.Name
	_, err = s.Emails.Send(elsewhere)
	s.refused(t, err, 403, "validation_error")
	_, err = c.ApiKeys.Remove(created.Id)
	c.must(t, err)
}
