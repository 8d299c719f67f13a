package compat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/resend/resend-go/v3"
)

// checkRecords checks the records herald asks the owner to publish, as resend.Record: the
// DKIM key, the return path's MX (priority as json.Number) and SPF; DMARC is not among them.
func checkRecords(t *testing.T, records []resend.Record, returnPath, status string) {
	t.Helper()
	if len(records) != 3 {
		t.Fatalf("want 3 records, got %#v", records)
	}
	var dkim, mx, spf int
	for _, r := range records {
		eq(t, "record ttl", r.Ttl, "Auto")
		eq(t, "record status", r.Status, status)
		switch {
		case r.Record == resend.RecordTypeDKIM:
			dkim++
			eq(t, "DKIM type", r.Type, "TXT")
			eq(t, "DKIM name", r.Name, "herald._domainkey")
			if !strings.HasPrefix(r.Value, "v=DKIM1; k=rsa; p=") || len(r.Value) < 200 {
				t.Fatalf("DKIM value %q", r.Value)
			}
		case r.Record == resend.RecordTypeSPF && r.Type == "MX":
			mx++
			eq(t, "MX name", r.Name, returnPath)
			eq(t, "MX value", r.Value, "mail.herald.test")
			eq(t, "MX priority", r.Priority, json.Number("10"))
		case r.Record == resend.RecordTypeSPF && r.Type == "TXT":
			spf++
			eq(t, "SPF name", r.Name, returnPath)
			eq(t, "SPF value", r.Value, "v=spf1 a:mail.herald.test ~all")
		default:
			t.Fatalf("unexpected record %#v", r)
		}
		if r.Name == "_dmarc" {
			t.Fatalf("DMARC among the records: %#v", r)
		}
	}
	if dkim != 1 || mx != 1 || spf != 1 {
		t.Fatalf("records %#v", records)
	}
}

func TestDomainsCreateGetListUpdateVerifyRemove(t *testing.T) {
	t.Parallel()
	c := operator(t)
	name := uniqueDomain("create")
	created, err := c.Domains.Create(&resend.CreateDomainRequest{Name: name})
	c.must(t, err)
	c.status(t, 201)
	matches(t, "id", uuidRE, created.Id)
	eq(t, "name", created.Name, name)
	eq(t, "status", created.Status, resend.DomainStatusNotStarted)
	eq(t, "region", created.Region, "us-east-1")
	eq(t, "open_tracking", created.OpenTracking, false)
	eq(t, "capabilities", created.Capabilities, &resend.DomainCapabilities{Sending: "enabled", Receiving: "disabled"})
	checkRecords(t, created.Records, "send", "not_started")
	// resend-go reads `createdAt` on create (Resend's own answer has `created_at`, which
	// resend.Domain reads): check the wire.
	wire := c.lastJSON(t)
	createdAt, _ := wire["created_at"].(string)
	matches(t, "created_at", timestampRE, createdAt)
	if dmarc, _ := wire["dmarc"].(map[string]any); dmarc["name"] != "_dmarc" || dmarc["recommended"] != true {
		t.Fatalf("dmarc %#v", wire["dmarc"])
	}

	got, err := c.Domains.Get(created.Id)
	c.must(t, err)
	eq(t, "object", got.Object, "domain")
	eq(t, "id", got.Id, created.Id)
	eq(t, "name", got.Name, name)
	eq(t, "created_at", got.CreatedAt, createdAt)
	eq(t, "status", got.Status, "not_started")
	eq(t, "region", got.Region, "us-east-1")
	eq(t, "capabilities", got.Capabilities, created.Capabilities)
	eq(t, "records", got.Records, created.Records)

	// Update: the SDK's setters send false explicitly; unset flags are left out.
	params := &resend.UpdateDomainRequest{Tls: resend.Enforced}
	params.SetOpenTracking(true)
	params.SetClickTracking(true)
	updated, err := c.Domains.Update(created.Id, params)
	c.must(t, err)
	eq(t, "update answer", updated, resend.Domain{Object: "domain", Id: created.Id})
	eq(t, "update body", c.lastRequestJSON(t), map[string]any{"open_tracking": true, "click_tracking": true, "tls": "enforced"})
	got, err = c.Domains.Get(created.Id)
	c.must(t, err)
	eq(t, "open_tracking", got.OpenTracking, true)
	eq(t, "click_tracking", got.ClickTracking, true)
	eq(t, "tls", c.lastJSON(t)["tls"], "enforced")
	off := &resend.UpdateDomainRequest{}
	off.SetClickTracking(false)
	_, err = c.Domains.Update(created.Id, off)
	c.must(t, err)
	eq(t, "update body", c.lastRequestJSON(t), map[string]any{"click_tracking": false})
	got, err = c.Domains.Get(created.Id)
	c.must(t, err)
	eq(t, "open_tracking kept", got.OpenTracking, true)
	eq(t, "click_tracking off", got.ClickTracking, false)
	eq(t, "tls kept", c.lastJSON(t)["tls"], "enforced")

	// Verify: the SDK posts no body and reads nothing but the status; the check runs in the
	// background (the suite's herald asks a nameserver that never answers).
	ok, err := c.Domains.Verify(created.Id)
	c.must(t, err)
	eq(t, "verify", ok, true)
	eq(t, "verify answer", c.lastJSON(t), map[string]any{"object": "domain", "id": created.Id})
	if len(c.last(t).ReqBody) != 0 {
		t.Fatalf("the SDK sent a body with verify: %q", c.last(t).ReqBody)
	}
	got, err = c.Domains.Get(created.Id)
	c.must(t, err)
	if got.Status == "not_started" || got.Status == "" {
		t.Fatalf("status after verify: %q", got.Status)
	}

	removed, err := c.Domains.Remove(created.Id)
	c.must(t, err)
	eq(t, "remove", removed, true)
	eq(t, "remove answer", c.lastJSON(t), map[string]any{"object": "domain", "id": created.Id, "deleted": true})
	_, err = c.Domains.Get(created.Id)
	c.refused(t, err, 404, "not_found")
	_, err = c.Domains.Remove(created.Id)
	c.refused(t, err, 404, "not_found")
	_, err = c.Domains.Verify(created.Id)
	c.refused(t, err, 404, "not_found")
	_, err = c.Domains.Update(created.Id, params)
	c.refused(t, err, 404, "not_found")
}

func TestDomainsCreateWithOptions(t *testing.T) {
	t.Parallel()
	c := operator(t)
	created, err := c.Domains.Create(&resend.CreateDomainRequest{
		Name:             uniqueDomain("options"),
		Region:           "sa-east-1",
		CustomReturnPath: "bounces",
		OpenTracking:     ptr(true),
		ClickTracking:    ptr(true),
	})
	c.must(t, err)
	eq(t, "region", created.Region, "sa-east-1")
	eq(t, "open_tracking", created.OpenTracking, true)
	eq(t, "click_tracking", created.ClickTracking, true)
	checkRecords(t, created.Records, "bounces", "not_started")
	_, err = c.Domains.Get(created.Id)
	c.must(t, err)
	eq(t, "custom_return_path", c.lastJSON(t)["custom_return_path"], "bounces")
	for _, region := range []string{"eu-west-1", "ap-northeast-1", "us-east-1"} {
		d, err := c.Domains.Create(&resend.CreateDomainRequest{Name: uniqueDomain("region"), Region: region})
		c.must(t, err)
		eq(t, "region", d.Region, region)
	}
	_, err = c.Domains.Create(&resend.CreateDomainRequest{Name: uniqueDomain("region"), Region: "mars-north-1"})
	if msg := c.refused(t, err, 422, "invalid_region"); !strings.Contains(msg, "mars-north-1") {
		t.Fatalf("message %q does not name the region", msg)
	}
}

func TestDomainsListPaginates(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "domains-list")
	var ids []string
	for i := 0; i < 3; i++ {
		d, err := c.Domains.Create(&resend.CreateDomainRequest{Name: uniqueDomain("list")})
		c.must(t, err)
		ids = append(ids, d.Id)
	}
	all, err := c.Domains.List()
	c.must(t, err)
	eq(t, "object", all.Object, "list")
	eq(t, "has_more", all.HasMore, false)
	var listed []string
	for _, d := range all.Data {
		listed = append(listed, d.Id)
		if d.Records != nil {
			t.Fatalf("a list item has records: %#v", d)
		}
		matches(t, "created_at", timestampRE, d.CreatedAt)
		eq(t, "status", d.Status, "not_started")
		eq(t, "region", d.Region, "us-east-1")
		eq(t, "capabilities", d.Capabilities, &resend.DomainCapabilities{Sending: "enabled", Receiving: "disabled"})
	}
	eq(t, "newest first", listed, []string{ids[2], ids[1], ids[0]})

	first, err := c.Domains.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(2)})
	c.must(t, err)
	eq(t, "path", c.last(t).Path, "/domains?limit=2")
	eq(t, "first page", []string{first.Data[0].Id, first.Data[1].Id}, []string{ids[2], ids[1]})
	eq(t, "has_more", first.HasMore, true)
	second, err := c.Domains.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(2), After: ptr(ids[1])})
	c.must(t, err)
	eq(t, "second page", len(second.Data), 1)
	eq(t, "second page", second.Data[0].Id, ids[0])
	eq(t, "has_more", second.HasMore, false)
	before, err := c.Domains.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1), Before: ptr(ids[1])})
	c.must(t, err)
	eq(t, "before", before.Data[0].Id, ids[2])
	_, err = c.Domains.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(101)})
	c.refused(t, err, 422, "validation_error")
}

func TestDomainsRefusals(t *testing.T) {
	t.Parallel()
	c := operator(t)
	_, err := c.Domains.Create(&resend.CreateDomainRequest{})
	c.refused(t, err, 422, "missing_required_field")
	for _, name := range []string{"not a domain", "localhost"} {
		_, err = c.Domains.Create(&resend.CreateDomainRequest{Name: name})
		c.refused(t, err, 422, "validation_error")
	}
	name := uniqueDomain("twice")
	_, err = c.Domains.Create(&resend.CreateDomainRequest{Name: name})
	c.must(t, err)
	_, err = c.Domains.Create(&resend.CreateDomainRequest{Name: name})
	if msg := c.refused(t, err, 422, "validation_error"); !strings.Contains(msg, name) {
		t.Fatalf("message %q does not name the domain", msg)
	}
	_, err = c.Domains.Get(newUUID())
	c.refused(t, err, 404, "not_found")
	_, err = c.Domains.Get("not-a-domain")
	c.refused(t, err, 422, "invalid_parameter")
}
