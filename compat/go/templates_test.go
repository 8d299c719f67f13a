package compat

import (
	"strings"
	"testing"

	"github.com/resend/resend-go/v3"
)

func templateIDs(items []*resend.TemplateListItem) []string {
	var ids []string
	for _, t := range items {
		ids = append(ids, t.Id)
	}
	return ids
}

func uniqueAlias(label string) string { return "go-" + label + "-" + token(4) }

func TestTemplatesCreateGetListUpdateRemove(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "templates")
	wire, err := c.Templates.Create(&resend.CreateTemplateRequest{Name: "Wire", Html: "<p>wire</p>"})
	c.must(t, err)
	alias := uniqueAlias("welcome")
	created, err := c.Templates.Create(&resend.CreateTemplateRequest{
		Name:    "Welcome",
		Alias:   alias,
		From:    "Acme <hello@acme.test>",
		Subject: "Welcome, {{{NAME}}}!",
		ReplyTo: "support@acme.test",
		Html:    "<p>Hi {{{NAME}}}, {{{SEATS}}} seats</p>",
		Text:    "Hi {{{NAME}}}, {{{SEATS}}} seats",
		Variables: []*resend.TemplateVariable{
			{Key: "NAME", Type: resend.VariableTypeString, FallbackValue: "there"},
			{Key: "SEATS", Type: resend.VariableTypeNumber, FallbackValue: 1},
			{Key: "PLAN", Type: resend.VariableTypeString},
		},
	})
	c.must(t, err)
	c.status(t, 201)
	matches(t, "id", uuidRE, created.Id)
	eq(t, "create", created, &resend.CreateTemplateResponse{Object: "template", Id: created.Id})

	got, err := c.Templates.Get(created.Id)
	c.must(t, err)
	eq(t, "object/id/name/alias", []string{got.Object, got.Id, got.Name, got.Alias}, []string{"template", created.Id, "Welcome", alias})
	eq(t, "from", got.From, "Acme <hello@acme.test>")
	eq(t, "subject", got.Subject, "Welcome, {{{NAME}}}!")
	eq(t, "reply_to", got.ReplyTo, []any{"support@acme.test"})
	eq(t, "html", got.Html, "<p>Hi {{{NAME}}}, {{{SEATS}}} seats</p>")
	eq(t, "text", got.Text, "Hi {{{NAME}}}, {{{SEATS}}} seats")
	eq(t, "status", got.Status, "draft")
	eq(t, "published_at", got.PublishedAt, "")
	matches(t, "created_at", timestampRE, got.CreatedAt)
	eq(t, "updated_at", got.UpdatedAt, got.CreatedAt)
	raw := c.lastJSON(t)
	eq(t, "published_at", raw["published_at"], nil)
	eq(t, "has_unpublished_versions", raw["has_unpublished_versions"], false)
	matches(t, "current_version_id", uuidRE, raw["current_version_id"].(string))
	if len(got.Variables) != 3 {
		t.Fatalf("variables %#v", got.Variables)
	}
	for i, want := range []struct {
		key      string
		typ      resend.VariableType
		fallback any
	}{{"NAME", "string", "there"}, {"SEATS", "number", float64(1)}, {"PLAN", "string", nil}} {
		v := got.Variables[i]
		eq(t, "variable", []any{v.Key, v.Type, v.FallbackValue}, []any{want.key, want.typ, want.fallback})
		matches(t, "variable id", uuidRE, v.Id)
		matches(t, "variable created_at", timestampRE, v.CreatedAt)
	}
	byAlias, err := c.Templates.Get(alias)
	c.must(t, err)
	eq(t, "by alias", byAlias, got)

	listed, err := c.Templates.List(nil)
	c.must(t, err)
	eq(t, "object", listed.Object, "list")
	eq(t, "has_more", listed.HasMore, false)
	eq(t, "newest first", templateIDs(listed.Data), []string{created.Id, wire.Id})
	eq(t, "item", listed.Data[0], &resend.TemplateListItem{Id: created.Id, Name: "Welcome", Status: "draft", CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt, Alias: alias})
	first, err := c.Templates.List(&resend.ListOptions{Limit: ptr(1)})
	c.must(t, err)
	eq(t, "first", templateIDs(first.Data), []string{created.Id})
	eq(t, "has_more", first.HasMore, true)
	second, err := c.Templates.List(&resend.ListOptions{Limit: ptr(1), After: ptr(created.Id)})
	c.must(t, err)
	eq(t, "second", templateIDs(second.Data), []string{wire.Id})
	eq(t, "has_more", second.HasMore, false)
	_, err = c.Templates.List(&resend.ListOptions{Limit: ptr(101)})
	c.refused(t, err, 422, "validation_error")

	// resend-go always sends `name` and `html` (empty when not set): empty is unchanged.
	newAlias := uniqueAlias("renamed")
	updated, err := c.Templates.Update(created.Id, &resend.UpdateTemplateRequest{
		Alias:     newAlias,
		ReplyTo:   []string{"a@acme.test", "b@acme.test"},
		Variables: []*resend.TemplateVariable{{Key: "NAME", Type: resend.VariableTypeString, FallbackValue: "friend"}},
	})
	c.must(t, err)
	eq(t, "update", updated, &resend.UpdateTemplateResponse{Object: "template", Id: created.Id})
	body := c.lastRequestJSON(t).(map[string]any)
	eq(t, "name on the wire", body["name"], "")
	eq(t, "html on the wire", body["html"], "")
	edited, err := c.Templates.Get(newAlias)
	c.must(t, err)
	eq(t, "name kept", edited.Name, "Welcome")
	eq(t, "html kept", edited.Html, got.Html)
	eq(t, "alias", edited.Alias, newAlias)
	eq(t, "reply_to", edited.ReplyTo, []any{"a@acme.test", "b@acme.test"})
	eq(t, "variables", len(edited.Variables), 1)
	eq(t, "variable", []any{edited.Variables[0].Key, edited.Variables[0].FallbackValue}, []any{"NAME", "friend"})
	eq(t, "kept key keeps its id", edited.Variables[0].Id, got.Variables[0].Id)
	_, err = c.Templates.Update(created.Id, &resend.UpdateTemplateRequest{Name: "Welcome aboard", Html: "<p>Hello {{{NAME}}}</p>"})
	c.must(t, err)
	edited, err = c.Templates.Get(created.Id)
	c.must(t, err)
	eq(t, "name", edited.Name, "Welcome aboard")
	eq(t, "html", edited.Html, "<p>Hello {{{NAME}}}</p>")
	_, err = c.Templates.Get(alias)
	c.refused(t, err, 404, "not_found")

	removed, err := c.Templates.Remove(newAlias)
	c.must(t, err)
	eq(t, "remove", removed, &resend.RemoveTemplateResponse{Object: "template", Id: created.Id, Deleted: true})
	_, err = c.Templates.Get(created.Id)
	c.refused(t, err, 404, "not_found")
	_, err = c.Templates.Remove(created.Id)
	c.refused(t, err, 404, "not_found")
	listed, err = c.Templates.List(nil)
	c.must(t, err)
	eq(t, "after remove", templateIDs(listed.Data), []string{wire.Id})
	_, err = c.Templates.Get(newUUID())
	c.refused(t, err, 404, "not_found")
	_, err = c.Templates.Get("no-such-alias")
	c.refused(t, err, 404, "not_found")
	_, err = c.Templates.Update(newUUID(), &resend.UpdateTemplateRequest{Name: "x"})
	c.refused(t, err, 404, "not_found")
}

func TestTemplatesPublishAndDuplicate(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "templates-versions")
	alias := uniqueAlias("receipt")
	created, err := c.Templates.Create(&resend.CreateTemplateRequest{Name: "Receipt", Alias: alias, Subject: "Receipt", Html: "<p>v1</p>"})
	c.must(t, err)
	published, err := c.Templates.Publish(alias)
	c.must(t, err)
	eq(t, "publish", published, &resend.PublishTemplateResponse{Object: "template", Id: created.Id})
	if len(c.last(t).ReqBody) != 0 {
		t.Fatalf("the SDK sent a body with publish: %q", c.last(t).ReqBody)
	}
	v1, err := c.Templates.Get(created.Id)
	c.must(t, err)
	eq(t, "status", v1.Status, "published")
	matches(t, "published_at", timestampRE, v1.PublishedAt)
	v1Version := c.lastJSON(t)["current_version_id"]
	listed, err := c.Templates.List(nil)
	c.must(t, err)
	eq(t, "listed published_at", *listed.Data[0].PublishedAt, v1.PublishedAt)

	// An edit of a published template is a draft.
	_, err = c.Templates.Update(alias, &resend.UpdateTemplateRequest{Html: "<p>v2</p>"})
	c.must(t, err)
	drafted, err := c.Templates.Get(alias)
	c.must(t, err)
	wire := c.lastJSON(t)
	eq(t, "status", drafted.Status, "published")
	eq(t, "has_unpublished_versions", wire["has_unpublished_versions"], true)
	if wire["current_version_id"] == v1Version {
		t.Fatal("the edit did not make a new version")
	}
	eq(t, "html", drafted.Html, "<p>v2</p>")
	eq(t, "published_at kept", drafted.PublishedAt, v1.PublishedAt)
	_, err = c.Templates.Publish(created.Id)
	c.must(t, err)
	v2, err := c.Templates.Get(created.Id)
	c.must(t, err)
	eq(t, "has_unpublished_versions", c.lastJSON(t)["has_unpublished_versions"], false)
	eq(t, "html", v2.Html, "<p>v2</p>")
	if parseTimestamp(t, v2.PublishedAt).Before(parseTimestamp(t, v1.PublishedAt)) {
		t.Fatalf("published_at went back: %s < %s", v2.PublishedAt, v1.PublishedAt)
	}

	dup, err := c.Templates.Duplicate(alias)
	c.must(t, err)
	eq(t, "duplicate", dup.Object, "template")
	matches(t, "copy id", uuidRE, dup.Id)
	if dup.Id == created.Id {
		t.Fatal("the copy has the original's id")
	}
	copyT, err := c.Templates.Get(dup.Id)
	c.must(t, err)
	eq(t, "copy", []string{copyT.Name, copyT.Alias, copyT.Status, copyT.PublishedAt, copyT.Html, copyT.Subject},
		[]string{"Receipt (copy)", "", "draft", "", "<p>v2</p>", "Receipt"})
	listed, err = c.Templates.List(nil)
	c.must(t, err)
	eq(t, "list", templateIDs(listed.Data), []string{dup.Id, created.Id})
	_, err = c.Templates.Publish(newUUID())
	c.refused(t, err, 404, "not_found")
	_, err = c.Templates.Duplicate("no-such-alias")
	c.refused(t, err, 404, "not_found")
}

func TestTemplatesRefusals(t *testing.T) {
	t.Parallel()
	c := teamClient(t, "templates-refused")
	_, err := c.Templates.Create(&resend.CreateTemplateRequest{Html: "<p>x</p>"})
	eq(t, "message", c.refused(t, err, 422, "missing_required_field"), "Missing `name` field.")
	_, err = c.Templates.Create(&resend.CreateTemplateRequest{Name: "No html"})
	eq(t, "message", c.refused(t, err, 422, "missing_required_field"), "Missing `html` field.")
	_, err = c.Templates.Create(&resend.CreateTemplateRequest{Name: "Unclosed", Html: "<p>\n  Hi {{{NAME</p>"})
	eq(t, "message", c.refused(t, err, 422, "validation_error"), "Invalid `html` field: `{{{` is never closed by `}}}` at line 2, column 6")
	for _, reserved := range []string{"FIRST_NAME", "LAST_NAME", "EMAIL", "UNSUBSCRIBE_URL", "contact", "this"} {
		_, err = c.Templates.Create(&resend.CreateTemplateRequest{Name: "Reserved", Html: "<p>x</p>", Variables: []*resend.TemplateVariable{{Key: reserved, Type: "string"}}})
		eq(t, "message", c.refused(t, err, 422, "validation_error"), "Invalid `variables[0].key` field: "+reserved+" is reserved; herald fills it in")
	}
	var many []*resend.TemplateVariable
	for i := 0; i < 51; i++ {
		many = append(many, &resend.TemplateVariable{Key: "VAR_" + string(rune('A'+i%26)) + strings.Repeat("X", i/26), Type: "string"})
	}
	_, err = c.Templates.Create(&resend.CreateTemplateRequest{Name: "Too many", Html: "<p>x</p>", Variables: many})
	eq(t, "message", c.refused(t, err, 422, "validation_error"), "Invalid `variables` field: at most 50 variables, got 51")
	_, err = c.Templates.Create(&resend.CreateTemplateRequest{Name: "Typed", Html: "<p>x</p>", Variables: []*resend.TemplateVariable{{Key: "SEATS", Type: "number", FallbackValue: "many"}}})
	if msg := c.refused(t, err, 422, "validation_error"); !strings.HasPrefix(msg, "Invalid `variables[0].fallback_value` field: the variable is a number") {
		t.Fatalf("message %q", msg)
	}
	alias := uniqueAlias("taken")
	_, err = c.Templates.Create(&resend.CreateTemplateRequest{Name: "Owner", Alias: alias, Html: "<p>x</p>"})
	c.must(t, err)
	_, err = c.Templates.Create(&resend.CreateTemplateRequest{Name: "Same", Alias: strings.ToUpper(alias), Html: "<p>x</p>"})
	eq(t, "message", c.refused(t, err, 409, "conflict"), "A template with the alias "+strings.ToUpper(alias)+" already exists")
	listed, err := c.Templates.List(nil)
	c.must(t, err)
	eq(t, "nothing refused was created", len(listed.Data), 1)
}

func escapeHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;").Replace(s)
}

// publishedTemplate is a published template of the operator's team (sends need a domain
// only the operator may verify without DNS): its id, alias and published version.
func publishedTemplate(t *testing.T, c *client, params *resend.CreateTemplateRequest) (string, string, string) {
	t.Helper()
	params.Alias = uniqueAlias("send")
	created, err := c.Templates.Create(params)
	c.must(t, err)
	_, err = c.Templates.Publish(created.Id)
	c.must(t, err)
	_, err = c.Templates.Get(created.Id)
	c.must(t, err)
	return created.Id, params.Alias, c.lastJSON(t)["current_version_id"].(string)
}

func TestTemplatesSendWithTemplate(t *testing.T) {
	t.Parallel()
	c := operator(t)
	domain, _ := sendingDomain(t)
	id, alias, version := publishedTemplate(t, c, &resend.CreateTemplateRequest{
		Name:    "Go receipt",
		From:    "{{{SHOP}}} <shop@" + domain + ">",
		Subject: "Receipt for {{{NAME}}}",
		ReplyTo: []string{"support@" + domain},
		Html:    `<p title="{{{NAME}}}">Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.</p>`,
		Text:    "Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.",
		Variables: []*resend.TemplateVariable{
			{Key: "SHOP", Type: "string", FallbackValue: "Compat Shop"},
			{Key: "NAME", Type: "string"},
			{Key: "PRICE", Type: "number"},
			{Key: "CITY", Type: "string", FallbackValue: "Paris"},
		},
	})
	name := `<b>"Ann" & 'Co'</b>`
	// resend-go sends `"from": ""` and `"subject": ""` with a template: both count as absent.
	sent, err := c.Emails.Send(&resend.SendEmailRequest{To: []string{recipient}, Template: &resend.EmailTemplate{Id: id, Variables: map[string]any{"NAME": name, "PRICE": 499}}})
	c.must(t, err)
	body := c.lastRequestJSON(t).(map[string]any)
	eq(t, "from on the wire", body["from"], "")
	eq(t, "subject on the wire", body["subject"], "")
	got, err := c.Emails.Get(sent.Id)
	c.must(t, err)
	eq(t, "from", got.From, "Compat Shop <shop@"+domain+">")
	eq(t, "to", got.To, []string{recipient})
	eq(t, "subject", got.Subject, "Receipt for "+name)
	eq(t, "reply_to", got.ReplyTo, []string{"support@" + domain})
	eq(t, "html", got.Html, `<p title="`+escapeHTML(name)+`">Hi `+escapeHTML(name)+`, you paid 499 for your order in Paris.</p>`)
	eq(t, "text", got.Text, "Hi "+name+", you paid 499 for your order in Paris.")
	eq(t, "template", c.lastJSON(t)["template"], map[string]any{"id": id, "version_id": version})

	// By alias; the send's own from wins.
	own, err := c.Emails.Send(&resend.SendEmailRequest{From: sender(t), To: []string{recipient},
		Template: &resend.EmailTemplate{Id: alias, Variables: map[string]any{"NAME": "Bo", "PRICE": 2.5, "CITY": "Oslo", "PRODUCT": "tea"}}})
	c.must(t, err)
	got, err = c.Emails.Get(own.Id)
	c.must(t, err)
	eq(t, "from", got.From, sender(t))
	eq(t, "subject", got.Subject, "Receipt for Bo")
	eq(t, "html", got.Html, `<p title="Bo">Hi Bo, you paid 2.5 for tea in Oslo.</p>`)

	// The published version keeps sending until the draft is published.
	_, err = c.Templates.Update(id, &resend.UpdateTemplateRequest{Html: "<p>v2 {{{NAME}}}</p>"})
	c.must(t, err)
	_, err = c.Templates.Get(id)
	c.must(t, err)
	draft := c.lastJSON(t)["current_version_id"]
	pinned, err := c.Emails.Send(&resend.SendEmailRequest{To: []string{recipient}, Template: &resend.EmailTemplate{Id: id, Variables: map[string]any{"NAME": "Cy", "PRICE": 1}}})
	c.must(t, err)
	got, err = c.Emails.Get(pinned.Id)
	c.must(t, err)
	eq(t, "pinned html", got.Html, `<p title="Cy">Hi Cy, you paid 1 for your order in Paris.</p>`)
	_, err = c.Templates.Publish(alias)
	c.must(t, err)
	fresh, err := c.Emails.Send(&resend.SendEmailRequest{To: []string{recipient}, Template: &resend.EmailTemplate{Id: id, Variables: map[string]any{"NAME": "Di", "PRICE": 1}}})
	c.must(t, err)
	got, err = c.Emails.Get(fresh.Id)
	c.must(t, err)
	eq(t, "fresh html", got.Html, "<p>v2 Di</p>")
	eq(t, "template", c.lastJSON(t)["template"], map[string]any{"id": id, "version_id": draft})

	// Batches take templates per item.
	result, err := c.Batch.Send([]*resend.SendEmailRequest{
		{To: []string{"ann@recipient.test"}, Template: &resend.EmailTemplate{Id: id, Variables: map[string]any{"NAME": "Ann", "PRICE": 1}}},
		{To: []string{"bo@recipient.test"}, Template: &resend.EmailTemplate{Id: alias, Variables: map[string]any{"NAME": "Bo", "PRICE": 2}}},
	})
	c.must(t, err)
	for i, want := range []string{"<p>v2 Ann</p>", "<p>v2 Bo</p>"} {
		got, err = c.Emails.Get(result.Data[i].Id)
		c.must(t, err)
		eq(t, "batch html", got.Html, want)
		eq(t, "batch subject", got.Subject, "Receipt for "+[]string{"Ann", "Bo"}[i])
	}

	// Refusals: a missing variable, html with template, an unknown or unpublished template.
	_, err = c.Emails.Send(&resend.SendEmailRequest{To: []string{recipient}, Template: &resend.EmailTemplate{Id: id}})
	if msg := c.refused(t, err, 422, "validation_error"); !strings.Contains(msg, "NAME") {
		t.Fatalf("message %q does not name the variable", msg)
	}
	_, err = c.Emails.Send(&resend.SendEmailRequest{To: []string{recipient}, Html: "<p>x</p>", Template: &resend.EmailTemplate{Id: id, Variables: map[string]any{"NAME": "x"}}})
	c.refused(t, err, 422, "validation_error")
	_, err = c.Emails.Send(&resend.SendEmailRequest{To: []string{recipient}, Template: &resend.EmailTemplate{Id: newUUID()}})
	c.refused(t, err, 404, "not_found")
	draftOnly, err := c.Templates.Create(&resend.CreateTemplateRequest{Name: "Draft", Subject: "Draft", From: sender(t), Html: "<p>draft</p>"})
	c.must(t, err)
	_, err = c.Emails.Send(&resend.SendEmailRequest{To: []string{recipient}, Template: &resend.EmailTemplate{Id: draftOnly.Id}})
	c.refused(t, err, 422, "validation_error")
}
