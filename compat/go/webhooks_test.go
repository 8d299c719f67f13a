package compat

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resend/resend-go/v3"
)

var secretRE = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]+={0,2}$`)

// uniqueEndpoint is an endpoint no other test uses: a public address literal (the suite's
// herald refuses private endpoints, and a literal needs no DNS).
func uniqueEndpoint(label string) string {
	return "https://93.184.216.34/go-" + label + "-" + token(5)
}

func TestWebhooksCreateGetUpdateRemove(t *testing.T) {
	t.Parallel()
	c := operator(t)
	endpoint := uniqueEndpoint("create")
	created, err := c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: endpoint, Events: []string{resend.EventEmailSent, resend.EventEmailBounced}})
	c.must(t, err)
	c.status(t, 201)
	eq(t, "object", created.Object, "webhook")
	matches(t, "id", uuidRE, created.Id)
	matches(t, "signing_secret", secretRE, created.SigningSecret)
	if raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(created.SigningSecret, "whsec_")); err != nil || len(raw) != 32 {
		t.Fatalf("signing secret %q is not 32 bytes of base64", created.SigningSecret)
	}

	got, err := c.Webhooks.Get(created.Id)
	c.must(t, err)
	matches(t, "created_at", timestampRE, got.CreatedAt)
	eq(t, "get", got, &resend.Webhook{Object: "webhook", Id: created.Id, CreatedAt: got.CreatedAt, Status: "enabled",
		Endpoint: endpoint, Events: []string{"email.sent", "email.bounced"}, SigningSecret: created.SigningSecret})

	updated, err := c.Webhooks.Update(created.Id, &resend.UpdateWebhookRequest{Status: ptr("disabled")})
	c.must(t, err)
	eq(t, "update", updated, &resend.UpdateWebhookResponse{Object: "webhook", Id: created.Id})
	eq(t, "update body", c.lastRequestJSON(t), map[string]any{"status": "disabled"})
	moved := uniqueEndpoint("updated")
	_, err = c.Webhooks.Update(created.Id, &resend.UpdateWebhookRequest{Endpoint: &moved, Events: []string{resend.EventEmailDelivered, resend.EventEmailOpened}})
	c.must(t, err)
	got, err = c.Webhooks.Get(created.Id)
	c.must(t, err)
	eq(t, "status kept", got.Status, "disabled")
	eq(t, "endpoint", got.Endpoint, moved)
	eq(t, "events", got.Events, []string{"email.delivered", "email.opened"})
	eq(t, "secret kept", got.SigningSecret, created.SigningSecret)
	_, err = c.Webhooks.Update(created.Id, &resend.UpdateWebhookRequest{Status: ptr("enabled")})
	c.must(t, err)
	got, err = c.Webhooks.Get(created.Id)
	c.must(t, err)
	eq(t, "enabled again", got.Status, "enabled")

	removed, err := c.Webhooks.Remove(created.Id)
	c.must(t, err)
	eq(t, "remove", removed, &resend.DeleteWebhookResponse{Object: "webhook", Id: created.Id, Deleted: true})
	_, err = c.Webhooks.Get(created.Id)
	c.refused(t, err, 404, "not_found")
	_, err = c.Webhooks.Remove(created.Id)
	c.refused(t, err, 404, "not_found")
	_, err = c.Webhooks.Update(created.Id, &resend.UpdateWebhookRequest{Status: ptr("disabled")})
	c.refused(t, err, 404, "not_found")
}

func TestWebhooksListPaginates(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "webhooks-list")
	var ids, endpoints []string
	for i := 0; i < 3; i++ {
		e := uniqueEndpoint("list")
		w, err := c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: e, Events: []string{resend.EventDomainCreated}})
		c.must(t, err)
		ids, endpoints = append(ids, w.Id), append(endpoints, e)
	}
	listed, err := c.Webhooks.List()
	c.must(t, err)
	eq(t, "object", listed.Object, "list")
	eq(t, "has_more", listed.HasMore, false)
	eq(t, "count", len(listed.Data), 3)
	for i, w := range listed.Data {
		eq(t, "newest first", w.Endpoint, endpoints[2-i])
		eq(t, "id", w.Id, ids[2-i])
		eq(t, "events", w.Events, []string{"domain.created"})
		eq(t, "status", w.Status, "enabled")
		matches(t, "created_at", timestampRE, w.CreatedAt)
	}
	for _, item := range c.lastJSON(t)["data"].([]any) {
		if _, ok := item.(map[string]any)["signing_secret"]; ok {
			t.Fatal("the list shows signing secrets")
		}
	}
	first, err := c.Webhooks.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(2)})
	c.must(t, err)
	eq(t, "has_more", first.HasMore, true)
	eq(t, "first page", []string{first.Data[0].Id, first.Data[1].Id}, []string{ids[2], ids[1]})
	second, err := c.Webhooks.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(2), After: ptr(ids[1])})
	c.must(t, err)
	eq(t, "has_more", second.HasMore, false)
	eq(t, "second page", len(second.Data), 1)
	eq(t, "second page", second.Data[0].Id, ids[0])
}

func TestWebhooksRefusals(t *testing.T) {
	t.Parallel()
	c := operator(t)
	endpoint := uniqueEndpoint("errors")
	// resend-go sends `"events": null` when none are given.
	_, err := c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: endpoint})
	c.refused(t, err, 422, "missing_required_field")
	for _, events := range [][]string{{}, {"email.exploded"}} {
		_, err = c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: endpoint, Events: events})
		c.refused(t, err, 422, "validation_error")
	}
	_, err = c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: "http://169.254.169.254/latest", Events: []string{"email.sent"}})
	if msg := c.refused(t, err, 422, "validation_error"); !strings.Contains(msg, "refused") {
		t.Fatalf("message %q", msg)
	}
	_, err = c.Webhooks.Create(&resend.CreateWebhookRequest{Events: []string{"email.sent"}})
	c.refused(t, err, 422, "missing_required_field")

	created, err := c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: uniqueEndpoint("team"), Events: []string{"email.sent"}})
	c.must(t, err)
	other := teamClient(t, "webhooks-other")
	_, err = other.Webhooks.Get(created.Id)
	other.refused(t, err, 404, "not_found")
	listed, err := other.Webhooks.List()
	other.must(t, err)
	eq(t, "other team's list", len(listed.Data), 0)
	_, err = c.Webhooks.Remove(created.Id)
	c.must(t, err)
}

// delivery is one request a receiver got.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver listens on 127.0.0.2 (the one private address the suite's herald delivers to)
// and answers 200 to every request.
type receiver struct {
	url string
	mu  sync.Mutex
	got []delivery
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	r := &receiver{url: "http://" + listener.Addr().String() + "/hook"}
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{req.Header.Clone(), body})
		r.mu.Unlock()
		w.WriteHeader(200)
		_, _ = w.Write([]byte("ok"))
	})}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { server.Close() })
	return r
}

func (r *receiver) wait(t *testing.T, n int) []delivery {
	t.Helper()
	eventually(t, 30*time.Second, "webhook deliveries", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got) >= n
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// resend-go's Webhooks.Verify (the Svix scheme) accepts what herald signs, and refuses a
// changed body, another secret and an old timestamp.
func TestWebhooksSignedDeliveryVerifiesWithTheSDK(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	c := teamClient(t, "webhooks-delivery")
	hook, err := c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: r.url, Events: []string{resend.EventDomainCreated}})
	c.must(t, err)
	name := uniqueDomain("hooked")
	domain, err := c.Domains.Create(&resend.CreateDomainRequest{Name: name})
	c.must(t, err)

	d := r.wait(t, 1)[0]
	headers := resend.WebhookHeaders{Id: d.header.Get("svix-id"), Timestamp: d.header.Get("svix-timestamp"), Signature: d.header.Get("svix-signature")}
	eq(t, "webhook-id", d.header.Get("webhook-id"), headers.Id)
	eq(t, "webhook-timestamp", d.header.Get("webhook-timestamp"), headers.Timestamp)
	eq(t, "webhook-signature", d.header.Get("webhook-signature"), headers.Signature)
	if !strings.HasPrefix(headers.Signature, "v1,") {
		t.Fatalf("signature %q", headers.Signature)
	}
	err = c.Webhooks.Verify(&resend.VerifyWebhookOptions{Payload: string(d.body), Headers: headers, WebhookSecret: hook.SigningSecret})
	if err != nil {
		t.Fatalf("the SDK refused herald's signature: %v (headers %v, body %s)", err, d.header, d.body)
	}
	var event struct {
		Type      string         `json:"type"`
		CreatedAt string         `json:"created_at"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(d.body, &event); err != nil {
		t.Fatalf("payload %s: %v", d.body, err)
	}
	eq(t, "type", event.Type, "domain.created")
	eq(t, "data.id", event.Data["id"], domain.Id)
	eq(t, "data.name", event.Data["name"], name)

	if err := c.Webhooks.Verify(&resend.VerifyWebhookOptions{Payload: string(d.body) + " ", Headers: headers, WebhookSecret: hook.SigningSecret}); err == nil {
		t.Fatal("a changed body verified")
	}
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x07", 32)))
	if err := c.Webhooks.Verify(&resend.VerifyWebhookOptions{Payload: string(d.body), Headers: headers, WebhookSecret: other}); err == nil {
		t.Fatal("another secret verified")
	}
	old := headers
	old.Timestamp = "1000000000"
	if err := c.Webhooks.Verify(&resend.VerifyWebhookOptions{Payload: string(d.body), Headers: old, WebhookSecret: hook.SigningSecret}); err == nil {
		t.Fatal("an old timestamp verified")
	}
}
