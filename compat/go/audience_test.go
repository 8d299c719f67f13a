package compat

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/resend/resend-go/v3"
)

// Each audience test runs in a team of its own: a contact's topics list every topic of its
// team, and the lists here must show only the test's own items.

func segmentIDs(items []resend.Segment) []string {
	var ids []string
	for _, s := range items {
		ids = append(ids, s.Id)
	}
	return ids
}

func contactIDs(items []resend.Contact) []string {
	var ids []string
	for _, s := range items {
		ids = append(ids, s.Id)
	}
	return ids
}

func sorted(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	return out
}

func TestSegmentsCreateGetListRemove(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "segments")
	name := "Newsletter " + token(4)
	created, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: name})
	c.must(t, err)
	c.status(t, 201)
	matches(t, "id", uuidRE, created.Id)
	eq(t, "create", created, resend.CreateSegmentResponse{Object: "segment", Id: created.Id, Name: name})
	other, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "Other " + token(4)})
	c.must(t, err)

	got, err := c.Segments.Get(created.Id)
	c.must(t, err)
	matches(t, "created_at", timestampRE, got.CreatedAt)
	eq(t, "get", got, resend.Segment{Object: "segment", Id: created.Id, Name: name, CreatedAt: got.CreatedAt})

	listed, err := c.Segments.List()
	c.must(t, err)
	eq(t, "object", listed.Object, "list")
	eq(t, "has_more", listed.HasMore, false)
	eq(t, "newest first", segmentIDs(listed.Data), []string{other.Id, created.Id})
	eq(t, "list item", listed.Data[1], resend.Segment{Id: created.Id, Name: name, CreatedAt: got.CreatedAt})
	page, err := c.Segments.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1)})
	c.must(t, err)
	eq(t, "first page", segmentIDs(page.Data), []string{other.Id})
	eq(t, "has_more", page.HasMore, true)
	page, err = c.Segments.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1), After: ptr(other.Id)})
	c.must(t, err)
	eq(t, "second page", segmentIDs(page.Data), []string{created.Id})
	eq(t, "has_more", page.HasMore, false)
	page, err = c.Segments.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1), Before: ptr(created.Id)})
	c.must(t, err)
	eq(t, "before", segmentIDs(page.Data), []string{other.Id})
	_, err = c.Segments.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(101)})
	c.refused(t, err, 422, "validation_error")

	// The deprecated Audiences service is the same store under /segments.
	audience, err := c.Audiences.Get(created.Id)
	c.must(t, err)
	eq(t, "audience path", c.last(t).Path, "/segments/"+created.Id)
	eq(t, "audience", audience.Name, name)
	legacy, err := c.Audiences.Create(&resend.CreateAudienceRequest{Name: "Legacy " + token(4)})
	c.must(t, err)
	eq(t, "audience create path", c.last(t).Path, "/segments")
	eq(t, "audience object", legacy.Object, "segment")
	audiences, err := c.Audiences.List()
	c.must(t, err)
	eq(t, "audiences", segmentIDs(audiences.Data), []string{legacy.Id, other.Id, created.Id})
	gone, err := c.Audiences.Remove(legacy.Id)
	c.must(t, err)
	eq(t, "audience remove", gone, resend.RemoveAudienceResponse{Object: "segment", Id: legacy.Id, Deleted: true})

	removed, err := c.Segments.Remove(created.Id)
	c.must(t, err)
	eq(t, "remove", removed, resend.RemoveSegmentResponse{Object: "segment", Id: created.Id, Deleted: true})
	_, err = c.Segments.Get(created.Id)
	c.refused(t, err, 404, "not_found")
	listed, err = c.Segments.List()
	c.must(t, err)
	eq(t, "after remove", segmentIDs(listed.Data), []string{other.Id})
	_, err = c.Segments.Create(&resend.CreateSegmentRequest{})
	c.refused(t, err, 422, "missing_required_field")
}

func TestContactsCreateGetUpdateListRemove(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "contacts")
	vip, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "VIP"})
	c.must(t, err)
	trial, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "Trial"})
	c.must(t, err)
	news, err := c.Topics.Create(&resend.CreateTopicRequest{Name: "News", DefaultSubscription: resend.DefaultSubscriptionOptOut})
	c.must(t, err)
	for _, p := range []resend.CreateContactPropertyRequest{
		{Key: "plan", Type: "string", FallbackValue: "free"},
		{Key: "seats", Type: "number"},
		{Key: "nickname", Type: "string"},
	} {
		_, err := c.ContactProperties.Create(&p)
		c.must(t, err)
	}

	email := uniqueAddress("full")
	created, err := c.Contacts.Create(&resend.CreateContactRequest{
		Email:      email,
		FirstName:  "Ada",
		Segments:   []resend.ContactSegmentRef{{Id: vip.Id}, {Id: trial.Id}},
		Topics:     []resend.TopicSubscriptionUpdate{{Id: news.Id, Subscription: "opt_in"}},
		Properties: map[string]any{"seats": 3},
	})
	c.must(t, err)
	c.status(t, 201)
	eq(t, "path", c.last(t).Path, "/contacts")
	matches(t, "id", uuidRE, created.Id)
	eq(t, "create", created, resend.CreateContactResponse{Object: "contact", Id: created.Id})
	outsider, err := c.Contacts.Create(&resend.CreateContactRequest{Email: uniqueAddress("outsider"), LastName: "Out", Unsubscribed: true})
	c.must(t, err)

	contact, err := c.Contacts.Get(&resend.GetContactOptions{Id: created.Id})
	c.must(t, err)
	matches(t, "created_at", timestampRE, contact.CreatedAt)
	eq(t, "get", contact, resend.Contact{Id: created.Id, Email: email, Object: "contact", FirstName: "Ada", CreatedAt: contact.CreatedAt,
		Properties: map[string]any{
			"plan":  map[string]any{"type": "string", "value": "free"},
			"seats": map[string]any{"type": "number", "value": "3"},
		}})
	eq(t, "last_name", c.lastJSON(t)["last_name"], nil)
	byEmail, err := c.Contacts.Get(&resend.GetContactOptions{Id: email})
	c.must(t, err)
	eq(t, "by email", byEmail, contact)
	out, err := c.Contacts.Get(&resend.GetContactOptions{Id: outsider.Id})
	c.must(t, err)
	eq(t, "unsubscribed", out.Unsubscribed, true)
	eq(t, "last_name", out.LastName, "Out")

	// Lists: the team's, a segment's (GET /segments/{id}/contacts), and paged.
	all, err := c.Contacts.List(nil)
	c.must(t, err)
	eq(t, "object", all.Object, "list")
	eq(t, "has_more", all.HasMore, false)
	eq(t, "newest first", contactIDs(all.Data), []string{outsider.Id, created.Id})
	item := all.Data[1]
	eq(t, "list item", item, resend.Contact{Id: created.Id, Email: email, FirstName: "Ada", CreatedAt: contact.CreatedAt})
	inVIP, err := c.Contacts.List(&resend.ListContactsOptions{SegmentId: vip.Id})
	c.must(t, err)
	eq(t, "segment path", c.last(t).Path, "/segments/"+vip.Id+"/contacts")
	eq(t, "in VIP", contactIDs(inVIP.Data), []string{created.Id})
	legacy, err := c.Contacts.List(&resend.ListContactsOptions{AudienceId: trial.Id})
	c.must(t, err)
	eq(t, "audience path", c.last(t).Path, "/audiences/"+trial.Id+"/contacts")
	eq(t, "in Trial", contactIDs(legacy.Data), []string{created.Id})
	page, err := c.Contacts.List(&resend.ListContactsOptions{Limit: ptr(1)})
	c.must(t, err)
	eq(t, "page", contactIDs(page.Data), []string{outsider.Id})
	eq(t, "has_more", page.HasMore, true)
	page, err = c.Contacts.List(&resend.ListContactsOptions{Limit: ptr(1), After: ptr(outsider.Id)})
	c.must(t, err)
	eq(t, "page", contactIDs(page.Data), []string{created.Id})
	eq(t, "has_more", page.HasMore, false)

	// Update: the SDK sends `id` in the body too; a property value replaces, null removes.
	_, err = c.Contacts.Update(&resend.UpdateContactRequest{Id: created.Id, LastName: "Lovelace",
		Properties: map[string]any{"plan": "pro", "seats": nil, "nickname": "Countess"}})
	c.must(t, err)
	eq(t, "update answer", c.lastJSON(t), map[string]any{"object": "contact", "id": created.Id})
	contact, err = c.Contacts.Get(&resend.GetContactOptions{Id: email})
	c.must(t, err)
	eq(t, "last_name", contact.LastName, "Lovelace")
	eq(t, "first_name kept", contact.FirstName, "Ada")
	eq(t, "properties", contact.Properties, map[string]any{
		"plan":     map[string]any{"type": "string", "value": "pro"},
		"nickname": map[string]any{"type": "string", "value": "Countess"},
	})
	// By address, and unsubscribed set with the SDK's setter (false is sent only so).
	upd := &resend.UpdateContactRequest{Email: email, Properties: map[string]any{"plan": nil, "seats": 12}}
	upd.SetUnsubscribed(true)
	_, err = c.Contacts.Update(upd)
	c.must(t, err)
	eq(t, "path", c.last(t).Path, "/contacts/"+email)
	contact, err = c.Contacts.Get(&resend.GetContactOptions{Id: created.Id})
	c.must(t, err)
	eq(t, "unsubscribed", contact.Unsubscribed, true)
	eq(t, "properties", contact.Properties, map[string]any{
		"plan":     map[string]any{"type": "string", "value": "free"},
		"seats":    map[string]any{"type": "number", "value": "12"},
		"nickname": map[string]any{"type": "string", "value": "Countess"},
	})
	resub := &resend.UpdateContactRequest{Id: created.Id}
	resub.SetUnsubscribed(false)
	_, err = c.Contacts.Update(resub)
	c.must(t, err)
	contact, err = c.Contacts.Get(&resend.GetContactOptions{Id: created.Id})
	c.must(t, err)
	eq(t, "resubscribed", contact.Unsubscribed, false)

	for _, props := range []map[string]any{{"unknown_key": "x"}, {"seats": "lots"}} {
		_, err = c.Contacts.Update(&resend.UpdateContactRequest{Id: created.Id, Properties: props})
		c.refused(t, err, 422, "validation_error")
		_, err = c.Contacts.Create(&resend.CreateContactRequest{Email: uniqueAddress("refused"), Properties: props})
		c.refused(t, err, 422, "validation_error")
	}
	refused := uniqueAddress("refused")
	_, err = c.Contacts.Create(&resend.CreateContactRequest{Email: refused, Segments: []resend.ContactSegmentRef{{Id: newUUID()}}})
	c.refused(t, err, 404, "not_found")
	_, err = c.Contacts.Create(&resend.CreateContactRequest{Email: refused, Topics: []resend.TopicSubscriptionUpdate{{Id: newUUID(), Subscription: "opt_in"}}})
	c.refused(t, err, 404, "not_found")
	_, err = c.Contacts.Get(&resend.GetContactOptions{Id: refused})
	c.refused(t, err, 404, "not_found")
	_, err = c.Contacts.Create(&resend.CreateContactRequest{})
	c.refused(t, err, 422, "missing_required_field")
	_, err = c.Contacts.Create(&resend.CreateContactRequest{Email: "not an address"})
	c.refused(t, err, 422, "validation_error")

	// An address with `+` and upper case goes into the path as it is (resend-go does not
	// escape it); the domain part is compared without case.
	plus := "Go.Plus+tag-" + token(4) + "@Compat.Herald.Test"
	plusContact, err := c.Contacts.Create(&resend.CreateContactRequest{Email: plus})
	c.must(t, err)
	found, err := c.Contacts.Get(&resend.GetContactOptions{Id: plus})
	c.must(t, err)
	eq(t, "path", c.last(t).Path, "/contacts/"+plus)
	eq(t, "plus address", []string{found.Id, found.Email}, []string{plusContact.Id, plus})
	found, err = c.Contacts.Get(&resend.GetContactOptions{Id: strings.Replace(plus, "Compat.Herald.Test", "compat.herald.test", 1)})
	c.must(t, err)
	eq(t, "domain without case", found.Id, plusContact.Id)
	_, err = c.Contacts.Remove(&resend.RemoveContactOptions{Id: plus})
	c.must(t, err)
	_, err = c.Contacts.Get(&resend.GetContactOptions{Id: plusContact.Id})
	c.refused(t, err, 404, "not_found")

	// Remove by address and by id.
	removed, err := c.Contacts.Remove(&resend.RemoveContactOptions{Id: email})
	c.must(t, err)
	eq(t, "remove", removed, resend.RemoveContactResponse{Object: "contact", Id: created.Id, Deleted: true})
	_, err = c.Contacts.Get(&resend.GetContactOptions{Id: created.Id})
	c.refused(t, err, 404, "not_found")
	removed, err = c.Contacts.Remove(&resend.RemoveContactOptions{Id: outsider.Id})
	c.must(t, err)
	eq(t, "remove", removed, resend.RemoveContactResponse{Object: "contact", Id: outsider.Id, Deleted: true})
	// As Resend answers, a contact that does not exist is deleted already.
	removed, err = c.Contacts.Remove(&resend.RemoveContactOptions{Id: outsider.Id})
	c.must(t, err)
	eq(t, "remove again", removed, resend.RemoveContactResponse{Object: "contact", Id: outsider.Id, Deleted: true})
	all, err = c.Contacts.List(nil)
	c.must(t, err)
	eq(t, "empty", len(all.Data), 0)
}

// The SDK's deprecated AudienceId goes to /audiences/{id}/contacts.
func TestContactsWithAudienceId(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "contacts-legacy")
	audience, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "Legacy " + token(4)})
	c.must(t, err)
	email := uniqueAddress("legacy")
	created, err := c.Contacts.Create(&resend.CreateContactRequest{AudienceId: audience.Id, Email: email, FirstName: "Lin"})
	c.must(t, err)
	eq(t, "path", c.last(t).Path, "/audiences/"+audience.Id+"/contacts")
	eq(t, "create", created, resend.CreateContactResponse{Object: "contact", Id: created.Id})
	via, err := c.Contacts.Get(&resend.GetContactOptions{AudienceId: audience.Id, Id: email})
	c.must(t, err)
	direct, err := c.Contacts.Get(&resend.GetContactOptions{Id: created.Id})
	c.must(t, err)
	eq(t, "via audience", via, direct)
	eq(t, "first_name", via.FirstName, "Lin")
	_, err = c.Contacts.Update(&resend.UpdateContactRequest{AudienceId: audience.Id, Id: created.Id, LastName: "Wu"})
	c.must(t, err)
	eq(t, "update answer", c.lastJSON(t), map[string]any{"object": "contact", "id": created.Id})
	got, err := c.Contacts.Get(&resend.GetContactOptions{Id: created.Id})
	c.must(t, err)
	eq(t, "last_name", got.LastName, "Wu")
	removed, err := c.Contacts.Remove(&resend.RemoveContactOptions{AudienceId: audience.Id, Id: created.Id})
	c.must(t, err)
	eq(t, "remove", removed, resend.RemoveContactResponse{Object: "contact", Id: created.Id, Deleted: true})
	_, err = c.Contacts.Get(&resend.GetContactOptions{Id: created.Id})
	c.refused(t, err, 404, "not_found")
}

func TestContactSegmentsAddListRemove(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "contact-segments")
	a, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "A"})
	c.must(t, err)
	b, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "B"})
	c.must(t, err)
	email := uniqueAddress("member")
	contact, err := c.Contacts.Create(&resend.CreateContactRequest{Email: email})
	c.must(t, err)
	none, err := c.Contacts.Segments.List(&resend.ListContactSegmentsRequest{ContactId: contact.Id})
	c.must(t, err)
	eq(t, "none", none, resend.ListContactSegmentsResponse{Object: "list", Data: []resend.Segment{}})

	added, err := c.Contacts.Segments.Add(&resend.AddContactSegmentRequest{ContactId: contact.Id, SegmentId: a.Id})
	c.must(t, err)
	c.status(t, 201)
	eq(t, "add", added, resend.AddContactSegmentResponse{Object: "contact_segment", Id: a.Id})
	eq(t, "add answer", c.lastJSON(t), map[string]any{"object": "contact_segment", "id": a.Id, "contact_id": contact.Id, "segment_id": a.Id})
	added, err = c.Contacts.Segments.Add(&resend.AddContactSegmentRequest{Email: email, SegmentId: b.Id})
	c.must(t, err)
	eq(t, "add by email", added.Id, b.Id)

	listed, err := c.Contacts.Segments.List(&resend.ListContactSegmentsRequest{ContactId: contact.Id})
	c.must(t, err)
	eq(t, "listed", sorted(segmentIDs(listed.Data)), sorted([]string{a.Id, b.Id}))
	for _, s := range listed.Data {
		matches(t, "created_at", timestampRE, s.CreatedAt)
		if s.Id == a.Id {
			eq(t, "name", s.Name, "A")
		}
	}
	page, err := c.Contacts.Segments.ListWithOptions(ctx(), &resend.ListContactSegmentsRequest{Email: email}, &resend.ListOptions{Limit: ptr(1)})
	c.must(t, err)
	eq(t, "page", len(page.Data), 1)
	eq(t, "has_more", page.HasMore, true)
	inB, err := c.Contacts.List(&resend.ListContactsOptions{SegmentId: b.Id})
	c.must(t, err)
	eq(t, "in B", contactIDs(inB.Data), []string{contact.Id})

	removed, err := c.Contacts.Segments.Remove(&resend.RemoveContactSegmentRequest{ContactId: contact.Id, SegmentId: a.Id})
	c.must(t, err)
	eq(t, "remove", removed, resend.RemoveContactSegmentResponse{Object: "contact_segment", Id: a.Id, Deleted: true})
	removed, err = c.Contacts.Segments.Remove(&resend.RemoveContactSegmentRequest{Email: email, SegmentId: b.Id})
	c.must(t, err)
	eq(t, "remove by email", removed, resend.RemoveContactSegmentResponse{Object: "contact_segment", Id: b.Id, Deleted: true})
	listed, err = c.Contacts.Segments.List(&resend.ListContactSegmentsRequest{Email: email})
	c.must(t, err)
	eq(t, "none left", len(listed.Data), 0)
	inA, err := c.Contacts.List(&resend.ListContactsOptions{SegmentId: a.Id})
	c.must(t, err)
	eq(t, "A empty", len(inA.Data), 0)

	_, err = c.Contacts.Segments.Add(&resend.AddContactSegmentRequest{ContactId: contact.Id, SegmentId: newUUID()})
	c.refused(t, err, 404, "not_found")
	_, err = c.Contacts.Segments.Add(&resend.AddContactSegmentRequest{ContactId: newUUID(), SegmentId: a.Id})
	c.refused(t, err, 404, "not_found")
}

func TestTopicsCreateGetListUpdateRemove(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "topics")
	created, err := c.Topics.Create(&resend.CreateTopicRequest{Name: "Product", DefaultSubscription: resend.DefaultSubscriptionOptIn, Description: "Product news"})
	c.must(t, err)
	c.status(t, 201)
	matches(t, "id", uuidRE, created.Id)
	eq(t, "create answer", c.lastJSON(t), map[string]any{"object": "topic", "id": created.Id})
	plain, err := c.Topics.Create(&resend.CreateTopicRequest{Name: "Plain", DefaultSubscription: resend.DefaultSubscriptionOptOut})
	c.must(t, err)

	topic, err := c.Topics.Get(created.Id)
	c.must(t, err)
	matches(t, "created_at", timestampRE, topic.CreatedAt)
	eq(t, "get", topic, &resend.Topic{Id: created.Id, Name: "Product", Description: "Product news", DefaultSubscription: "opt_in", CreatedAt: topic.CreatedAt})
	wire := c.lastJSON(t)
	eq(t, "object", wire["object"], "topic")
	eq(t, "visibility", wire["visibility"], "private")
	p, err := c.Topics.Get(plain.Id)
	c.must(t, err)
	eq(t, "description", c.lastJSON(t)["description"], nil)
	eq(t, "default", p.DefaultSubscription, resend.DefaultSubscriptionOptOut)

	listed, err := c.Topics.List(nil)
	c.must(t, err)
	eq(t, "object", listed.Object, "list")
	eq(t, "has_more", listed.HasMore, false)
	eq(t, "count", len(listed.Data), 2)
	eq(t, "newest first", []string{listed.Data[0].Id, listed.Data[1].Id}, []string{plain.Id, created.Id})
	eq(t, "item", listed.Data[1], topic)
	page, err := c.Topics.List(&resend.ListOptions{Limit: ptr(1)})
	c.must(t, err)
	eq(t, "page", page.Data[0].Id, plain.Id)
	eq(t, "has_more", page.HasMore, true)

	updated, err := c.Topics.Update(created.Id, &resend.UpdateTopicRequest{Name: "Products", Description: "All product news"})
	c.must(t, err)
	eq(t, "update", updated, &resend.UpdateTopicResponse{Id: created.Id})
	eq(t, "update answer", c.lastJSON(t), map[string]any{"object": "topic", "id": created.Id})
	topic, err = c.Topics.Get(created.Id)
	c.must(t, err)
	eq(t, "name", topic.Name, "Products")
	eq(t, "description", topic.Description, "All product news")
	eq(t, "default kept", topic.DefaultSubscription, resend.DefaultSubscriptionOptIn)

	removed, err := c.Topics.Remove(created.Id)
	c.must(t, err)
	eq(t, "remove", removed, &resend.RemoveTopicResponse{Object: "topic", Id: created.Id, Deleted: true})
	_, err = c.Topics.Get(created.Id)
	c.refused(t, err, 404, "not_found")
	listed, err = c.Topics.List(nil)
	c.must(t, err)
	eq(t, "after remove", len(listed.Data), 1)

	_, err = c.Topics.Create(&resend.CreateTopicRequest{Name: "No default"})
	c.refused(t, err, 422, "validation_error")
	_, err = c.Topics.Create(&resend.CreateTopicRequest{DefaultSubscription: resend.DefaultSubscriptionOptIn})
	c.refused(t, err, 422, "missing_required_field")
	_, err = c.Topics.Create(&resend.CreateTopicRequest{Name: "Bad", DefaultSubscription: "sometimes"})
	c.refused(t, err, 422, "validation_error")
}

func TestContactTopicsListUpdate(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "contact-topics")
	weekly, err := c.Topics.Create(&resend.CreateTopicRequest{Name: "Weekly", DefaultSubscription: resend.DefaultSubscriptionOptIn, Description: "Every Monday"})
	c.must(t, err)
	offers, err := c.Topics.Create(&resend.CreateTopicRequest{Name: "Offers", DefaultSubscription: resend.DefaultSubscriptionOptOut})
	c.must(t, err)
	email := uniqueAddress("topics")
	contact, err := c.Contacts.Create(&resend.CreateContactRequest{Email: email})
	c.must(t, err)

	subscriptions := func(id string) map[string]resend.ContactTopic {
		t.Helper()
		listed, err := c.Contacts.Topics.List(id)
		c.must(t, err)
		eq(t, "object", listed.Object, "list")
		eq(t, "has_more", listed.HasMore, false)
		out := map[string]resend.ContactTopic{}
		for _, topic := range listed.Data {
			out[topic.Id] = topic
		}
		return out
	}
	before := subscriptions(contact.Id)
	eq(t, "weekly", before[weekly.Id], resend.ContactTopic{Id: weekly.Id, Name: "Weekly", Description: "Every Monday", Subscription: "opt_in"})
	eq(t, "offers", before[offers.Id], resend.ContactTopic{Id: offers.Id, Name: "Offers", Subscription: "opt_out"})
	eq(t, "count", len(before), 2)

	// The SDK sends the bare array.
	choices := []resend.TopicSubscriptionUpdate{{Id: weekly.Id, Subscription: "opt_out"}, {Id: offers.Id, Subscription: "opt_in"}}
	updated, err := c.Contacts.Topics.Update(&resend.UpdateContactTopicsRequest{Id: contact.Id, Topics: choices})
	c.must(t, err)
	eq(t, "request body", c.lastRequestJSON(t), choices)
	eq(t, "update", updated, resend.UpdateContactTopicsResponse{Id: contact.Id})
	wire := c.lastJSON(t)
	eq(t, "object", wire["object"], "contact_topics")
	eq(t, "contact_id", wire["contact_id"], contact.Id)
	after := subscriptions(email)
	eq(t, "weekly", after[weekly.Id].Subscription, "opt_out")
	eq(t, "offers", after[offers.Id].Subscription, "opt_in")

	_, err = c.Contacts.Topics.Update(&resend.UpdateContactTopicsRequest{Email: email, Topics: []resend.TopicSubscriptionUpdate{{Id: weekly.Id, Subscription: "opt_in"}}})
	c.must(t, err)
	after = subscriptions(contact.Id)
	eq(t, "weekly", after[weekly.Id].Subscription, "opt_in")
	eq(t, "offers kept", after[offers.Id].Subscription, "opt_in")

	_, err = c.Contacts.Topics.Update(&resend.UpdateContactTopicsRequest{Id: contact.Id, Topics: []resend.TopicSubscriptionUpdate{{Id: newUUID(), Subscription: "opt_in"}}})
	c.refused(t, err, 404, "not_found")
	_, err = c.Contacts.Topics.Update(&resend.UpdateContactTopicsRequest{Id: contact.Id, Topics: []resend.TopicSubscriptionUpdate{{Id: weekly.Id, Subscription: "maybe"}}})
	c.refused(t, err, 422, "validation_error")
	_, err = c.Contacts.Topics.List(newUUID())
	c.refused(t, err, 404, "not_found")
}

func TestContactPropertiesCreateGetListUpdateRemove(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "contact-properties")
	company, err := c.ContactProperties.Create(&resend.CreateContactPropertyRequest{Key: "company", Type: "string", FallbackValue: "Acme"})
	c.must(t, err)
	c.status(t, 201)
	matches(t, "id", uuidRE, company.Id)
	eq(t, "create", company, resend.CreateContactPropertyResponse{Object: "contact_property", Id: company.Id})
	score, err := c.ContactProperties.Create(&resend.CreateContactPropertyRequest{Key: "score", Type: "number", FallbackValue: 0})
	c.must(t, err)
	// Without a fallback resend-go sends `"fallback_value": null`.
	nickname, err := c.ContactProperties.Create(&resend.CreateContactPropertyRequest{Key: "nickname", Type: "string"})
	c.must(t, err)
	eq(t, "request", c.lastRequestJSON(t), map[string]any{"key": "nickname", "type": "string", "fallback_value": nil})

	got, err := c.ContactProperties.Get(company.Id)
	c.must(t, err)
	matches(t, "created_at", timestampRE, got.CreatedAt)
	eq(t, "get", got, resend.ContactProperty{Id: company.Id, Key: "company", Object: "contact_property", CreatedAt: got.CreatedAt, Type: "string", FallbackValue: "Acme"})
	s, err := c.ContactProperties.Get(score.Id)
	c.must(t, err)
	eq(t, "number fallback", s.FallbackValue, float64(0))
	n, err := c.ContactProperties.Get(nickname.Id)
	c.must(t, err)
	eq(t, "no fallback", n.FallbackValue, nil)

	listed, err := c.ContactProperties.List()
	c.must(t, err)
	eq(t, "object", listed.Object, "list")
	eq(t, "has_more", listed.HasMore, false)
	var keys []string
	for _, p := range listed.Data {
		keys = append(keys, p.Key)
	}
	eq(t, "newest first", keys, []string{"nickname", "score", "company"})
	got.Object = ""
	eq(t, "list item", listed.Data[2], got)
	page, err := c.ContactProperties.ListWithOptions(ctx(), &resend.ListOptions{Limit: ptr(1), After: ptr(nickname.Id)})
	c.must(t, err)
	eq(t, "page", page.Data[0].Key, "score")
	eq(t, "has_more", page.HasMore, true)

	// The SDK sends only fallback_value.
	updated, err := c.ContactProperties.Update(&resend.UpdateContactPropertyRequest{Id: company.Id, FallbackValue: "Initech"})
	c.must(t, err)
	eq(t, "request", c.lastRequestJSON(t), map[string]any{"fallback_value": "Initech"})
	eq(t, "update", updated, resend.UpdateContactPropertyResponse{Object: "contact_property", Id: company.Id})
	got, err = c.ContactProperties.Get(company.Id)
	c.must(t, err)
	eq(t, "fallback", got.FallbackValue, "Initech")
	_, err = c.ContactProperties.Update(&resend.UpdateContactPropertyRequest{Id: company.Id, FallbackValue: nil})
	c.must(t, err)
	got, err = c.ContactProperties.Get(company.Id)
	c.must(t, err)
	eq(t, "fallback removed", got.FallbackValue, nil)
	_, err = c.ContactProperties.Update(&resend.UpdateContactPropertyRequest{Id: score.Id, FallbackValue: "ten"})
	c.refused(t, err, 422, "validation_error")

	_, err = c.ContactProperties.Create(&resend.CreateContactPropertyRequest{Key: "company", Type: "string"})
	c.refused(t, err, 409, "conflict")
	for _, p := range []resend.CreateContactPropertyRequest{
		{Key: "has space", Type: "string"},
		{Key: strings.Repeat("k", 51), Type: "string"},
		{Key: "count", Type: "number", FallbackValue: "ten"},
		{Key: "flag", Type: "boolean"},
	} {
		_, err = c.ContactProperties.Create(&p)
		c.refused(t, err, 422, "validation_error")
	}

	removed, err := c.ContactProperties.Remove(company.Id)
	c.must(t, err)
	eq(t, "remove", removed, resend.RemoveContactPropertyResponse{Object: "contact_property", Id: company.Id, Deleted: true})
	_, err = c.ContactProperties.Get(company.Id)
	c.refused(t, err, 404, "not_found")
	_, err = c.Contacts.Create(&resend.CreateContactRequest{Email: uniqueAddress("removed-key"), Properties: map[string]any{"company": "Acme"}})
	c.refused(t, err, 422, "validation_error")
}

// completedImport polls Contacts.Imports.Get until the import is completed.
func completedImport(t *testing.T, c *client, id string) (resend.ContactImport, map[string]any) {
	t.Helper()
	var current resend.ContactImport
	var wire map[string]any
	eventually(t, 30*time.Second, "import "+id+" completed", func() bool {
		var err error
		current, err = c.Contacts.Imports.Get(id)
		c.must(t, err)
		wire = c.lastJSON(t)
		switch current.Status {
		case resend.ContactImportStatusQueued, resend.ContactImportStatusInProgress, resend.ContactImportStatusCompleted:
		default:
			t.Fatalf("import status %q: %s", current.Status, c.last(t).RespBody)
		}
		return current.Status == resend.ContactImportStatusCompleted
	})
	return current, wire
}

func TestContactImportsDefaultColumns(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "imports")
	existingEmail := uniqueAddress("import-existing")
	existing, err := c.Contacts.Create(&resend.CreateContactRequest{Email: existingEmail, FirstName: "Old"})
	c.must(t, err)
	a, b := uniqueAddress("import-a"), uniqueAddress("import-b")
	csv := strings.Join([]string{
		"email,first_name,last_name,unsubscribed",
		a + ",Ann,Lee,false",
		"not-an-address,Bad,Row,false",
		b + ",Bo,Ek,true",
		existingEmail + ",New,Name,false",
	}, "\n") + "\n"
	created, err := c.Contacts.Imports.Create(&resend.CreateContactImportRequest{File: []byte(csv), Filename: "contacts.csv"})
	c.must(t, err)
	c.status(t, 201)
	if ct := c.last(t).ReqHeader.Get("Content-Type"); !strings.HasPrefix(ct, "multipart/form-data; boundary=") {
		t.Fatalf("the SDK sent Content-Type %q", ct)
	}
	matches(t, "id", uuidRE, created.Id)
	eq(t, "create", created, resend.CreateContactImportResponse{Object: "contact_import", Id: created.Id})

	done, wire := completedImport(t, c, created.Id)
	eq(t, "object", done.Object, "contact_import")
	eq(t, "id", done.Id, created.Id)
	matches(t, "created_at", timestampRE, done.CreatedAt)
	// on_conflict defaults to upsert: the existing address is updated.
	eq(t, "counts", done.Counts, &resend.ContactImportCounts{Total: 4, Created: 2, Updated: 1, Skipped: 0, Failed: 1})
	errs, _ := wire["errors"].([]any)
	if len(errs) != 1 {
		t.Fatalf("errors %#v", wire["errors"])
	}
	bad := errs[0].(map[string]any)
	eq(t, "error line", bad["line"], float64(3))
	eq(t, "error row", bad["row"], float64(2))

	ann, err := c.Contacts.Get(&resend.GetContactOptions{Id: a})
	c.must(t, err)
	eq(t, "ann", []any{ann.FirstName, ann.LastName, ann.Unsubscribed}, []any{"Ann", "Lee", false})
	bo, err := c.Contacts.Get(&resend.GetContactOptions{Id: b})
	c.must(t, err)
	eq(t, "bo", []any{bo.FirstName, bo.Unsubscribed}, []any{"Bo", true})
	again, err := c.Contacts.Get(&resend.GetContactOptions{Id: existingEmail})
	c.must(t, err)
	eq(t, "updated", []any{again.Id, again.FirstName, again.LastName}, []any{existing.Id, "New", "Name"})

	listed, err := c.Contacts.Imports.List(nil)
	c.must(t, err)
	eq(t, "object", listed.Object, "list")
	eq(t, "has_more", listed.HasMore, false)
	eq(t, "list", listed.Data, []resend.ContactImport{{Id: created.Id, Status: "completed", CreatedAt: done.CreatedAt, Counts: done.Counts}})
	completed, err := c.Contacts.Imports.List(&resend.ListContactImportsOptions{Status: "completed", Limit: ptr(10)})
	c.must(t, err)
	eq(t, "path", c.last(t).Path, "/contacts/imports?limit=10&status=completed")
	eq(t, "completed", len(completed.Data), 1)
	running, err := c.Contacts.Imports.List(&resend.ListContactImportsOptions{Status: "in_progress"})
	c.must(t, err)
	eq(t, "in progress", len(running.Data), 0)
}

func TestContactImportsColumnMapSegmentsTopicsSkip(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "imports-mapped")
	segment, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "Imported"})
	c.must(t, err)
	topic, err := c.Topics.Create(&resend.CreateTopicRequest{Name: "Digest", DefaultSubscription: resend.DefaultSubscriptionOptOut})
	c.must(t, err)
	for _, p := range []resend.CreateContactPropertyRequest{{Key: "plan", Type: "string"}, {Key: "seats", Type: "number"}} {
		_, err := c.ContactProperties.Create(&p)
		c.must(t, err)
	}
	existingEmail := uniqueAddress("mapped-existing")
	existing, err := c.Contacts.Create(&resend.CreateContactRequest{Email: existingEmail, FirstName: "Old"})
	c.must(t, err)
	fresh := uniqueAddress("mapped-new")

	created, err := c.Contacts.Imports.Create(&resend.CreateContactImportRequest{
		File: []byte("E-mail,Given,Plan,Seats\n" + fresh + ",Cy,pro,5\n" + existingEmail + ",Changed,basic,1\n"),
		ColumnMap: map[string]any{
			"email":      "E-mail",
			"first_name": "Given",
			"properties": map[string]any{"plan": map[string]any{"column": "Plan", "type": "string"}, "seats": map[string]any{"column": "Seats", "type": "number"}},
		},
		OnConflict: "skip",
		Segments:   []resend.ContactImportSegment{{Id: segment.Id}},
		Topics:     []resend.TopicSubscriptionUpdate{{Id: topic.Id, Subscription: "opt_in"}},
	})
	c.must(t, err)
	done, wire := completedImport(t, c, created.Id)
	eq(t, "counts", done.Counts, &resend.ContactImportCounts{Total: 2, Created: 1, Skipped: 1})
	eq(t, "errors", wire["errors"], []any{})

	cy, err := c.Contacts.Get(&resend.GetContactOptions{Id: fresh})
	c.must(t, err)
	eq(t, "first_name", cy.FirstName, "Cy")
	eq(t, "properties", cy.Properties, map[string]any{
		"plan":  map[string]any{"type": "string", "value": "pro"},
		"seats": map[string]any{"type": "number", "value": "5"},
	})
	segs, err := c.Contacts.Segments.List(&resend.ListContactSegmentsRequest{ContactId: cy.Id})
	c.must(t, err)
	eq(t, "segments", segmentIDs(segs.Data), []string{segment.Id})
	topics, err := c.Contacts.Topics.List(cy.Id)
	c.must(t, err)
	eq(t, "topics", len(topics.Data), 1)
	eq(t, "topic", []string{topics.Data[0].Id, topics.Data[0].Subscription}, []string{topic.Id, "opt_in"})
	skipped, err := c.Contacts.Get(&resend.GetContactOptions{Id: existingEmail})
	c.must(t, err)
	eq(t, "skipped", []any{skipped.Id, skipped.FirstName}, []any{existing.Id, "Old"})
	eq(t, "skipped properties", c.lastJSON(t)["properties"], map[string]any{})

	_, err = c.Contacts.Imports.Create(&resend.CreateContactImportRequest{File: []byte("email\nx@y.test\n"), OnConflict: "merge"})
	c.refused(t, err, 422, "validation_error")
}

func TestAudienceBelongsToOneTeamAndSendingKeysAreRefused(t *testing.T) {
	t.Parallel()
	owner := teamClient(t, "audience-owner")
	segment, err := owner.Segments.Create(&resend.CreateSegmentRequest{Name: "Mine"})
	owner.must(t, err)
	topic, err := owner.Topics.Create(&resend.CreateTopicRequest{Name: "Mine", DefaultSubscription: resend.DefaultSubscriptionOptIn})
	owner.must(t, err)
	prop, err := owner.ContactProperties.Create(&resend.CreateContactPropertyRequest{Key: "mine", Type: "string"})
	owner.must(t, err)
	email := uniqueAddress("owned")
	contact, err := owner.Contacts.Create(&resend.CreateContactRequest{Email: email})
	owner.must(t, err)
	sending, err := owner.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: keyName("sending"), Permission: "sending_access"})
	owner.must(t, err)

	other := teamClient(t, "audience-other")
	_, err = other.Segments.Get(segment.Id)
	other.refused(t, err, 404, "not_found")
	_, err = other.Topics.Get(topic.Id)
	other.refused(t, err, 404, "not_found")
	_, err = other.ContactProperties.Get(prop.Id)
	other.refused(t, err, 404, "not_found")
	_, err = other.Contacts.Get(&resend.GetContactOptions{Id: email})
	other.refused(t, err, 404, "not_found")
	_, err = other.Contacts.Segments.Add(&resend.AddContactSegmentRequest{ContactId: contact.Id, SegmentId: segment.Id})
	other.refused(t, err, 404, "not_found")
	list, err := other.Segments.List()
	other.must(t, err)
	eq(t, "other team's segments", len(list.Data), 0)

	s := newClient(t, sending.Token)
	calls := map[string]func() error{
		"Segments.List":          func() error { _, err := s.Segments.List(); return err },
		"Segments.Create":        func() error { _, err := s.Segments.Create(&resend.CreateSegmentRequest{Name: "Nope"}); return err },
		"Topics.List":            func() error { _, err := s.Topics.List(nil); return err },
		"ContactProperties.List": func() error { _, err := s.ContactProperties.List(); return err },
		"Contacts.List":          func() error { _, err := s.Contacts.List(nil); return err },
		"Contacts.Create": func() error {
			_, err := s.Contacts.Create(&resend.CreateContactRequest{Email: uniqueAddress("nope")})
			return err
		},
		"Contacts.Imports.List": func() error { _, err := s.Contacts.Imports.List(nil); return err },
		"Contacts.Segments.List": func() error {
			_, err := s.Contacts.Segments.List(&resend.ListContactSegmentsRequest{ContactId: contact.Id})
			return err
		},
		"Contacts.Topics.List": func() error { _, err := s.Contacts.Topics.List(contact.Id); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) { s.refused(t, call(), 401, "restricted_api_key") })
	}
}
