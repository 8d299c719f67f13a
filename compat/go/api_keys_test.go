package compat

import (
	"strings"
	"testing"
	"time"

	"github.com/resend/resend-go/v3"
)

// listedKey is the key's entry in the SDK's list and its raw JSON (for `permission` and
// `domain_id`, which resend.ApiKey does not decode).
func listedKey(t *testing.T, c *client, id string) (*resend.ApiKey, map[string]any) {
	t.Helper()
	listed, err := c.ApiKeys.List()
	c.must(t, err)
	eq(t, "object", listed.Object, "list")
	for i, k := range listed.Data {
		if k.Id == id {
			raw := c.lastJSON(t)["data"].([]any)[i].(map[string]any)
			return &listed.Data[i], raw
		}
	}
	return nil, nil
}

func TestApiKeysCreateListUpdateRemove(t *testing.T) {
	t.Parallel()
	c := operator(t)
	name := keyName("create")
	created, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: name, Permission: "full_access"})
	c.must(t, err)
	c.status(t, 201)
	matches(t, "id", uuidRE, created.Id)
	if !strings.HasPrefix(created.Token, "re_") || len(created.Token) < 20 {
		t.Fatalf("token %q", created.Token)
	}
	// The token works at once.
	holder := newClient(t, created.Token)
	domains, err := holder.Domains.List()
	holder.must(t, err)
	eq(t, "object", domains.Object, "list")

	key, wire := listedKey(t, c, created.Id)
	if key == nil {
		t.Fatal("the new key is not listed")
	}
	eq(t, "name", key.Name, name)
	matches(t, "created_at", timestampRE, key.CreatedAt)
	eq(t, "permission", wire["permission"], "full_access")
	eq(t, "domain_id", wire["domain_id"], nil)
	// herald writes a key's first use without waiting for it: it shows soon after.
	eventually(t, 5*time.Second, "last_used_at set after use", func() bool {
		key, wire = listedKey(t, c, created.Id)
		return key.LastUsedAt != nil
	})
	matches(t, "last_used_at", timestampRE, *key.LastUsedAt)
	if _, ok := wire["token"]; ok || strings.Contains(string(c.last(t).RespBody), created.Token) {
		t.Fatal("the list shows the token")
	}

	renamed := keyName("renamed")
	updated, err := c.ApiKeys.Update(created.Id, &resend.UpdateApiKeyRequest{Name: renamed})
	c.must(t, err)
	eq(t, "update", updated, resend.UpdateApiKeyResponse{Object: "api_key", Id: created.Id})
	key, _ = listedKey(t, c, created.Id)
	eq(t, "renamed", key.Name, renamed)

	removed, err := c.ApiKeys.Remove(created.Id)
	c.must(t, err)
	eq(t, "remove", removed, true)
	eq(t, "remove answer", c.lastJSON(t), map[string]any{"object": "api_key", "id": created.Id, "deleted": true})
	_, err = holder.Domains.List()
	holder.refused(t, err, 403, "invalid_api_key")
	_, err = c.ApiKeys.Remove(created.Id)
	c.refused(t, err, 404, "not_found")
	if key, _ := listedKey(t, c, created.Id); key != nil {
		t.Fatal("a removed key is listed")
	}
}

func TestApiKeysListPaginates(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "keys-list")
	var ids []string
	for i := 0; i < 2; i++ {
		k, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: keyName("page")})
		c.must(t, err)
		ids = append(ids, k.Id)
	}
	all, err := c.ApiKeys.List()
	c.must(t, err)
	eq(t, "keys", len(all.Data), 3) // with the team's first key
	eq(t, "newest first", []string{all.Data[0].Id, all.Data[1].Id}, []string{ids[1], ids[0]})
	page, err := c.ApiKeys.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1)})
	c.must(t, err)
	eq(t, "first page", page.Data[0].Id, ids[1])
	eq(t, "has_more", page.HasMore, true)
	next, err := c.ApiKeys.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1), After: ptr(ids[1])})
	c.must(t, err)
	eq(t, "second page", next.Data[0].Id, ids[0])
}

func TestApiKeysSendingAccessIsRestricted(t *testing.T) {
	t.Parallel()
	c := operator(t)
	domain, err := c.Domains.Create(&resend.CreateDomainRequest{Name: uniqueDomain("sending-key")})
	c.must(t, err)
	created, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: keyName("sending"), Permission: "sending_access", DomainId: domain.Id})
	c.must(t, err)
	_, wire := listedKey(t, c, created.Id)
	eq(t, "permission", wire["permission"], "sending_access")
	eq(t, "domain_id", wire["domain_id"], domain.Id)
	s := newClient(t, created.Token)
	_, err = s.Domains.List()
	s.refused(t, err, 401, "restricted_api_key")
	_, err = s.Domains.Get(domain.Id)
	s.refused(t, err, 401, "restricted_api_key")
	_, err = s.ApiKeys.List()
	s.refused(t, err, 401, "restricted_api_key")
	_, err = s.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: keyName("escalate")})
	s.refused(t, err, 401, "restricted_api_key")
	_, err = s.Webhooks.List()
	s.refused(t, err, 401, "restricted_api_key")
	_, err = s.Logs.List()
	s.refused(t, err, 401, "restricted_api_key")

	anyDomain, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: keyName("sending-any"), Permission: "sending_access"})
	c.must(t, err)
	_, wire = listedKey(t, c, anyDomain.Id)
	eq(t, "permission", wire["permission"], "sending_access")
	eq(t, "domain_id", wire["domain_id"], nil)
	a := newClient(t, anyDomain.Token)
	_, err = a.Domains.List()
	a.refused(t, err, 401, "restricted_api_key")

	for _, id := range []string{created.Id, anyDomain.Id} {
		_, err = c.ApiKeys.Remove(id)
		c.must(t, err)
	}
}

func TestApiKeysRefusals(t *testing.T) {
	t.Parallel()
	c := operator(t)
	for _, name := range []string{"", "   "} {
		_, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: name})
		c.refused(t, err, 422, "missing_required_field")
	}
	domain, err := c.Domains.Create(&resend.CreateDomainRequest{Name: uniqueDomain("full-with-domain")})
	c.must(t, err)
	_, err = c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: keyName("full"), Permission: "full_access", DomainId: domain.Id})
	c.refused(t, err, 422, "validation_error")
	_, err = c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: keyName("perm"), Permission: "everything"})
	c.refused(t, err, 422, "invalid_access")
	_, err = c.ApiKeys.Remove(newUUID())
	c.refused(t, err, 404, "not_found")
}
