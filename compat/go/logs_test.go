package compat

import (
	"strings"
	"testing"
	"time"

	"github.com/resend/resend-go/v3"
)

func TestLogsListAndGet(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "logs")
	name := keyName("logs")
	key, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: name})
	c.must(t, err)
	_, err = c.Domains.Get(newUUID())
	c.refused(t, err, 404, "not_found")

	var listed resend.ListLogsResponse
	eventually(t, 10*time.Second, "the requests are logged", func() bool {
		listed, err = c.Logs.List()
		c.must(t, err)
		return len(listed.Data) >= 2
	})
	eq(t, "object", listed.Object, "list")
	// Newest first: the 404, then the key's creation (the list itself comes after).
	var create, missing *resend.Log
	for i := range listed.Data {
		l := &listed.Data[i]
		matches(t, "id", uuidRE, l.Id)
		matches(t, "created_at", timestampRE, l.CreatedAt)
		switch {
		case l.Endpoint == "/api-keys" && l.Method == "POST":
			create = l
		case strings.HasPrefix(l.Endpoint, "/domains/") && l.Method == "GET":
			missing = l
		}
	}
	if create == nil || missing == nil {
		t.Fatalf("logs %#v", listed.Data)
	}
	eq(t, "create status", create.ResponseStatus, 201)
	eq(t, "missing status", missing.ResponseStatus, 404)
	if create.UserAgent == nil || *create.UserAgent != "resend-go/3.12.0" {
		t.Fatalf("user_agent %v", create.UserAgent)
	}

	full, err := c.Logs.Get(create.Id)
	c.must(t, err)
	eq(t, "object", full.Object, "log")
	eq(t, "id", full.Id, create.Id)
	eq(t, "endpoint", full.Endpoint, "/api-keys")
	eq(t, "method", full.Method, "POST")
	eq(t, "response_status", full.ResponseStatus, 201)
	// Bodies are JSON objects, as the SDK's `any` decodes them, with secrets redacted.
	request, ok := full.RequestBody.(map[string]any)
	if !ok {
		t.Fatalf("request_body %#v is not an object", full.RequestBody)
	}
	eq(t, "request name", request["name"], name)
	response, ok := full.ResponseBody.(map[string]any)
	if !ok {
		t.Fatalf("response_body %#v is not an object", full.ResponseBody)
	}
	eq(t, "response id", response["id"], key.Id)
	eq(t, "token redacted", response["token"], "<redacted>")
	if strings.Contains(string(c.last(t).RespBody), key.Token) {
		t.Fatal("the token reached the logs")
	}

	page, err := c.Logs.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1)})
	c.must(t, err)
	eq(t, "limit 1", len(page.Data), 1)
	eq(t, "has_more", page.HasMore, true)
	next, err := c.Logs.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1), After: ptr(page.Data[0].Id)})
	c.must(t, err)
	if len(next.Data) != 1 || next.Data[0].Id == page.Data[0].Id {
		t.Fatalf("after: %#v", next.Data)
	}
	_, err = c.Logs.Get(newUUID())
	c.refused(t, err, 404, "not_found")
}
