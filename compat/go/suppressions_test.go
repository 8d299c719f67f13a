package compat

import (
	"strings"
	"testing"

	"github.com/resend/resend-go/v3"
)

func TestSuppressionsAddGetRemove(t *testing.T) {
	t.Parallel()
	c := operator(t)
	email := uniqueAddress("single")
	added, err := c.Suppressions.Add(&resend.AddSuppressionRequest{Email: email})
	c.must(t, err)
	eq(t, "object", added.Object, "suppression")
	matches(t, "id", uuidRE, added.Id)
	again, err := c.Suppressions.Add(&resend.AddSuppressionRequest{Email: strings.ToUpper(email)})
	c.must(t, err)
	eq(t, "same entry", again.Id, added.Id)

	byID, err := c.Suppressions.Get(added.Id)
	c.must(t, err)
	matches(t, "created_at", timestampRE, byID.CreatedAt)
	eq(t, "get", byID, resend.Suppression{Object: "suppression", Id: added.Id, Email: email, Origin: resend.SuppressionOriginManual, CreatedAt: byID.CreatedAt})
	// The SDK escapes the address into the path.
	byEmail, err := c.Suppressions.Get(email)
	c.must(t, err)
	eq(t, "by address", byEmail, byID)

	removed, err := c.Suppressions.Remove(email)
	c.must(t, err)
	eq(t, "remove", removed, resend.RemoveSuppressionResponse{Object: "suppression", Id: added.Id, Deleted: true})
	_, err = c.Suppressions.Get(added.Id)
	c.refused(t, err, 404, "not_found")
	_, err = c.Suppressions.Remove(email)
	c.refused(t, err, 404, "not_found")
}

func TestSuppressionsListPaginatesAndFilters(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "suppressions-list")
	var emails []string
	for i := 0; i < 3; i++ {
		e := uniqueAddress("list")
		_, err := c.Suppressions.Add(&resend.AddSuppressionRequest{Email: e})
		c.must(t, err)
		emails = append(emails, e)
	}
	first, err := c.Suppressions.List(&resend.ListSuppressionsOptions{Limit: ptr(2)})
	c.must(t, err)
	eq(t, "object", first.Object, "list")
	eq(t, "has_more", first.HasMore, true)
	eq(t, "newest first", []string{first.Data[0].Email, first.Data[1].Email}, []string{emails[2], emails[1]})
	eq(t, "origin", first.Data[0].Origin, "manual")
	eq(t, "source_id", first.Data[0].SourceId, (*string)(nil))
	second, err := c.Suppressions.List(&resend.ListSuppressionsOptions{Limit: ptr(2), After: ptr(first.Data[1].Id)})
	c.must(t, err)
	eq(t, "has_more", second.HasMore, false)
	eq(t, "second page", len(second.Data), 1)
	eq(t, "second page", second.Data[0].Email, emails[0])
	manual, err := c.Suppressions.List(&resend.ListSuppressionsOptions{Origin: resend.SuppressionOriginManual})
	c.must(t, err)
	eq(t, "path", c.last(t).Path, "/suppressions?origin=manual")
	eq(t, "manual", len(manual.Data), 3)
	bounces, err := c.Suppressions.List(&resend.ListSuppressionsOptions{Origin: resend.SuppressionOriginBounce})
	c.must(t, err)
	eq(t, "bounces", len(bounces.Data), 0)
}

func TestSuppressionsBatch(t *testing.T) {
	t.Parallel()
	c := operator(t)
	a, b := uniqueAddress("batch-a"), uniqueAddress("batch-b")
	existing, err := c.Suppressions.Add(&resend.AddSuppressionRequest{Email: b})
	c.must(t, err)
	added, err := c.Suppressions.Batch.Add(&resend.BatchAddSuppressionsRequest{Emails: []string{a, b, strings.ToUpper(a)}})
	c.must(t, err)
	eq(t, "duplicates collapse", len(added.Data), 2)
	for _, e := range added.Data {
		eq(t, "object", e.Object, "suppression")
		matches(t, "id", uuidRE, e.Id)
	}
	eq(t, "existing", added.Data[1].Id, existing.Id)

	byEmail, err := c.Suppressions.Batch.Remove(&resend.BatchRemoveSuppressionsRequest{Emails: []string{a, uniqueAddress("never")}})
	c.must(t, err)
	eq(t, "by email", byEmail.Data, []resend.RemoveSuppressionResponse{{Object: "suppression", Id: added.Data[0].Id, Deleted: true}})
	byID, err := c.Suppressions.Batch.Remove(&resend.BatchRemoveSuppressionsRequest{Ids: []string{existing.Id}})
	c.must(t, err)
	eq(t, "by id", byID.Data, []resend.RemoveSuppressionResponse{{Object: "suppression", Id: existing.Id, Deleted: true}})
}

func TestSuppressionsRefusals(t *testing.T) {
	t.Parallel()
	c := operator(t)
	_, err := c.Suppressions.Add(&resend.AddSuppressionRequest{Email: "not an address"})
	c.refused(t, err, 422, "validation_error")
	var many []string
	for i := 0; i < 101; i++ {
		many = append(many, uniqueAddress("many"))
	}
	_, err = c.Suppressions.Batch.Add(&resend.BatchAddSuppressionsRequest{Emails: many})
	c.refused(t, err, 422, "validation_error")
	_, err = c.Suppressions.Get(uniqueAddress("missing"))
	c.refused(t, err, 404, "not_found")

	email := uniqueAddress("team")
	added, err := c.Suppressions.Add(&resend.AddSuppressionRequest{Email: email})
	c.must(t, err)
	other := teamClient(t, "suppressions-other")
	_, err = other.Suppressions.Get(added.Id)
	other.refused(t, err, 404, "not_found")
	_, err = other.Suppressions.Get(email)
	other.refused(t, err, 404, "not_found")
	key, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: keyName("sending"), Permission: "sending_access"})
	c.must(t, err)
	s := newClient(t, key.Token)
	_, err = s.Suppressions.List(nil)
	s.refused(t, err, 401, "restricted_api_key")
	_, err = s.Suppressions.Add(&resend.AddSuppressionRequest{Email: email})
	s.refused(t, err, 401, "restricted_api_key")
	_, err = c.ApiKeys.Remove(key.Id)
	c.must(t, err)
	_, err = c.Suppressions.Remove(added.Id)
	c.must(t, err)
}
