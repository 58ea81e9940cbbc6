package server

import (
	"net/http/httptest"
	"testing"
)

// BenchmarkRecordEndpoints measures one GET of each deliberation-record
// endpoint on a finished support-agent run with two turns (OPTIONS, then a
// person's choice and the payment), in process (no network).
func BenchmarkRecordEndpoints(b *testing.B) {
	f := newBundleFixture(b)
	f.chosenRun("bench-1", "r-7001", "path:store-credit")
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
