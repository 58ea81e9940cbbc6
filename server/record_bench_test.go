package server

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// BenchmarkRecordEndpoints measures one GET of each deliberation-record
// endpoint on a finished support-agent run with two turns (OPTIONS, then a
// person's choice and the payment), in process (no network).
func BenchmarkRecordEndpoints(b *testing.B) {
	f := newBundleFixture(b)
	f.startBundleRun("support-agent", "bench-1", refundRequest("r-7001", 60, "carol", "goodwill"))
	v := f.waitView("bench-1", "OPTIONS", inOptions)
	if a := f.post("/v1/runs/bench-1/choose", tokDana, fmt.Sprintf(`{"proposal_id":%q,"option":"path:store-credit"}`, v.Offers[0].ProposalID)); a.status != 202 {
		b.Fatalf("choose: %d %s", a.status, a.body)
	}
	f.waitFor("bench-1", tokVic, "its end", ended)
	var tickets []TicketRecord
	f.list("/v1/runs/bench-1/tickets", "tickets", &tickets)
	for _, c := range []struct{ name, path string }{{"page", ""}, {"tickets", "/tickets"}, {"fhr", "/fhr"}, {"scorecard", "/scorecard"},
		{"why", "/why?proposal=" + tickets[0].ProposalID}} {
		path := c.path
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", "/v1/runs/bench-1"+path, nil)
				req.Header.Set("Authorization", "Bearer "+tokVic)
				rec := httptest.NewRecorder()
				f.server.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
				}
			}
		})
	}
}
