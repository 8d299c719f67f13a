package compat

import (
	"regexp"
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
