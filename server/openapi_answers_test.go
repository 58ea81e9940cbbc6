package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// answerSchema compiles the documented 200 answer of GET path (an OpenAPI
// path such as /v1/runs/{id}/tickets) from the served document.
func answerSchema(t *testing.T, path string) *jsonschema.Schema {
	t.Helper()
	raw, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const base = "https://flrh.dev/openapi.json"
	if err := c.AddResource(base, doc); err != nil {
		t.Fatal(err)
	}
	ptr := "/paths/" + strings.ReplaceAll(strings.ReplaceAll(path, "~", "~0"), "/", "~1") + "/get/responses/200/content/application~1json/schema"
	s, err := c.Compile(base + "#" + ptr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// The answers of the deliberation endpoints are what the OpenAPI document
// says they are, on a run that went through OPTIONS, a choice and a
// payment, and on a refused one.
func TestDeliberationAnswersMatchTheDocument(t *testing.T) {
	f := newBundleFixture(t)
	chosen := f.chosenRun("doc-1", "r-8001", "path:store-credit")
	f.startBundleRun("refund-agent", "doc-2", refundRequest("r-8002", 40, "mallory", "damaged"))
	var tickets []TicketRecord
	for len(tickets) == 0 {
		f.list("/v1/runs/doc-2/tickets", "tickets", &tickets)
	}
	cases := []struct{ doc, path string }{
		{"/v1/runs/{id}", "/v1/runs/doc-1"},
		{"/v1/runs/{id}", "/v1/runs/doc-2"},
		{"/v1/runs/{id}/tickets", "/v1/runs/doc-1/tickets"},
		{"/v1/runs/{id}/tickets", "/v1/runs/doc-2/tickets"},
		{"/v1/runs/{id}/fhr", "/v1/runs/doc-1/fhr"},
		{"/v1/runs/{id}/scorecard", "/v1/runs/doc-1/scorecard"},
		{"/v1/runs/{id}/why", "/v1/runs/doc-1/why?proposal=" + chosen},
		{"/v1/runs/{id}/why", "/v1/runs/doc-2/why?proposal=" + tickets[0].ProposalID},
		{"/v1/runs/{id}/why", "/v1/runs/doc-2/why?fact=" + urlQuery(`blocked("mallory")`)},
		{"/v1/runs/{id}/case", "/v1/runs/doc-1/case"},
		{"/v1/runs/{id}/case", "/v1/runs/doc-2/case?name=blocked"},
	}
	for _, c := range cases {
		a := f.get(c.path, tokVic)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", c.path, a.status, a.body)
		}
		body, err := jsonschema.UnmarshalJSON(bytes.NewReader(a.body))
		if err != nil {
			t.Fatal(err)
		}
		if err := answerSchema(t, c.doc).Validate(body); err != nil {
			t.Errorf("%s does not match the document: %v", c.path, err)
		}
	}
	// And the check has teeth: a ticket without its decision fails.
	bad := map[string]any{"tickets": []any{map[string]any{"turn": 1}}}
	if err := answerSchema(t, "/v1/runs/{id}/tickets").Validate(bad); err == nil {
		t.Fatal("the ticket schema accepted a ticket without its members")
	}
}
