package compat

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/resend/resend-go/v3"
)

func TestErrorsWrongKeyIsInvalidApiKey(t *testing.T) {
	t.Parallel()
	c := newClient(t, "re_"+token(16))
	_, err := c.Domains.List()
	c.refused(t, err, 403, "invalid_api_key")
	_, err = c.ApiKeys.List()
	c.refused(t, err, 403, "invalid_api_key")
	_, err = c.Domains.Create(&resend.CreateDomainRequest{Name: uniqueDomain("wrong-key")})
	c.refused(t, err, 403, "invalid_api_key")
	_, err = c.Emails.Send(&resend.SendEmailRequest{From: "a@b.test", To: []string{"c@d.test"}, Subject: "x", Text: "x"})
	c.refused(t, err, 403, "invalid_api_key")
}

func TestErrorsMissingKeyIsMissingApiKey(t *testing.T) {
	t.Parallel()
	// The SDK always sends `Authorization: Bearer <key>`: an empty key is as close as it
	// gets to sending none.
	c := newClient(t, "")
	_, err := c.Domains.List()
	c.refused(t, err, 401, "missing_api_key")
	eq(t, "Authorization", c.last(t).ReqHeader.Get("Authorization"), "Bearer ")
	resp := raw(t, "GET", "/api-keys", "", nil)
	eq(t, "status", resp.Status, 401)
	body := resp.json(t)
	eq(t, "name", body["name"], "missing_api_key")
	eq(t, "statusCode", body["statusCode"], float64(401))
}

func TestErrorsUnknownAndMalformedIds(t *testing.T) {
	t.Parallel()
	c := operator(t)
	unknown := newUUID()
	calls := map[string]func() error{
		"Emails.Get":      func() error { _, err := c.Emails.Get(unknown); return err },
		"Emails.Cancel":   func() error { _, err := c.Emails.Cancel(unknown); return err },
		"Webhooks.Get":    func() error { _, err := c.Webhooks.Get(unknown); return err },
		"Templates.Get":   func() error { _, err := c.Templates.Get(unknown); return err },
		"Broadcasts.Get":  func() error { _, err := c.Broadcasts.Get(unknown); return err },
		"Segments.Get":    func() error { _, err := c.Segments.Get(unknown); return err },
		"Topics.Get":      func() error { _, err := c.Topics.Get(unknown); return err },
		"Logs.Get":        func() error { _, err := c.Logs.Get(unknown); return err },
		"Contacts.Get":    func() error { _, err := c.Contacts.Get(&resend.GetContactOptions{Id: unknown}); return err },
		"Suppressions":    func() error { _, err := c.Suppressions.Get(unknown); return err },
		"ContactProperty": func() error { _, err := c.ContactProperties.Get(unknown); return err },
		"ContactImports":  func() error { _, err := c.Contacts.Imports.Get(unknown); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) { c.refused(t, call(), 404, "not_found") })
	}
	malformed := map[string]func() error{
		"Emails.Get":     func() error { _, err := c.Emails.Get("nope"); return err },
		"Webhooks.Get":   func() error { _, err := c.Webhooks.Get("nope"); return err },
		"Broadcasts.Get": func() error { _, err := c.Broadcasts.Get("nope"); return err },
		"Segments.Get":   func() error { _, err := c.Segments.Get("nope"); return err },
		"Topics.Get":     func() error { _, err := c.Topics.Get("nope"); return err },
	}
	for name, call := range malformed {
		t.Run("malformed "+name, func(t *testing.T) { c.refused(t, call(), 422, "invalid_parameter") })
	}
}

// Every answer carries the RateLimit headers (resend-go reads them only on a 429, into
// resend.RateLimitError, which the suite's 1000/s limit never gives).
func TestErrorsRateLimitHeaders(t *testing.T) {
	t.Parallel()
	c := operator(t)
	_, err := c.Domains.List()
	c.must(t, err)
	checkRateLimitHeaders(t, c.last(t))
	_, err = c.Domains.Get(newUUID())
	c.refused(t, err, 404, "not_found")
	checkRateLimitHeaders(t, c.last(t))
}

func checkRateLimitHeaders(t *testing.T, ex *exchange) {
	t.Helper()
	digits := regexp.MustCompile(`^\d+$`)
	for _, name := range []string{"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"} {
		matches(t, name, digits, ex.RespHeader.Get(name))
	}
	matches(t, "ratelimit-policy", regexp.MustCompile(`^\d+;w=\d+`), ex.RespHeader.Get("ratelimit-policy"))
}

// A 429 is the one answer resend-go decodes into a type of its own: *resend.RateLimitError,
// with the message and the RateLimit headers, and errors.Is(err, resend.ErrRateLimit). A team
// of its own with a limit of 2 a minute (`rate_limit`, which the operator may set on a team)
// gets there on its third request.
func TestErrorsRateLimitIsRateLimitError(t *testing.T) {
	t.Parallel()
	resp := raw(t, "POST", "/teams", apiKey, map[string]any{"name": keyName("rate-limited"), "rate_limit": "2/min"})
	eq(t, "POST /teams", resp.Status, 201)
	c := newClient(t, resp.json(t)["api_key"].(map[string]any)["token"].(string))
	var err error
	for i := 0; i < 2; i++ {
		_, err = c.Domains.List()
		c.must(t, err)
	}
	eq(t, "ratelimit-remaining", c.last(t).RespHeader.Get("ratelimit-remaining"), "0")
	_, err = c.Domains.List()
	if err == nil {
		t.Fatalf("the third request within a minute succeeded: %s", c.last(t).RespBody)
	}
	ex := c.last(t)
	eq(t, "status", ex.Status, 429)
	body := c.lastJSON(t)
	eq(t, "name", body["name"], "rate_limit_exceeded")
	eq(t, "statusCode", body["statusCode"], 429)
	if !errors.Is(err, resend.ErrRateLimit) {
		t.Fatalf("errors.Is(%v, resend.ErrRateLimit) is false", err)
	}
	var limited *resend.RateLimitError
	if !errors.As(err, &limited) {
		t.Fatalf("%T is not a *resend.RateLimitError", err)
	}
	eq(t, "message", limited.Message, body["message"])
	if limited.Message == "" {
		t.Fatal("no message")
	}
	eq(t, "limit", limited.Limit, "2")
	eq(t, "remaining", limited.Remaining, "0")
	retry, convErr := strconv.Atoi(limited.RetryAfter)
	if convErr != nil || retry < 1 || retry > 60 {
		t.Fatalf("retry-after %q", limited.RetryAfter)
	}
	reset, convErr := strconv.Atoi(limited.Reset)
	if convErr != nil || reset < 1 || reset > 60 {
		t.Fatalf("ratelimit-reset %q", limited.Reset)
	}
	eq(t, "ratelimit-policy", ex.RespHeader.Get("ratelimit-policy"), "2;w=60")
}

// What resend-go 3.12 offers and herald does not implement (inbound mail, sent emails'
// attachments and share links, domain claims, automations, custom events, OAuth grants)
// answers a clean 404 `not_found` naming the route, which the SDK hands back as its error.
// When herald implements one of these, its line here goes (and a test of its own comes).
func TestErrorsUnimplementedSurfaceIsNotFound(t *testing.T) {
	t.Parallel()
	c := operator(t)
	sent, err := c.Emails.Send(simpleEmail(t, "unimplemented"))
	c.must(t, err)
	calls := map[string]func() error{
		"Emails.ListAttachments": func() error { _, err := c.Emails.ListAttachments(sent.Id); return err },
		"Emails.GetAttachment":   func() error { _, err := c.Emails.GetAttachment(sent.Id, newUUID()); return err },
		"Emails.Share":           func() error { _, err := c.Emails.Share(sent.Id, nil); return err },
		"Emails.Receiving.List":  func() error { _, err := c.Emails.Receiving.List(); return err },
		"Emails.Receiving.Get":   func() error { _, err := c.Emails.Receiving.Get(newUUID()); return err },
		"DomainClaims.Create": func() error {
			_, err := c.DomainClaims.Create(&resend.CreateDomainClaimRequest{Name: uniqueDomain("claim")})
			return err
		},
		"Automations.List": func() error { _, err := c.Automations.List(); return err },
		"Events.List":      func() error { _, err := c.Events.List(); return err },
		"OAuthGrants.List": func() error { _, err := c.OAuthGrants.List(); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if msg := c.refused(t, call(), 404, "not_found"); !strings.HasPrefix(msg, "No route for ") {
				t.Fatalf("message %q", msg)
			}
		})
	}
}
