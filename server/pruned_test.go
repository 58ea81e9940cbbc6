package server

import (
	"context"
	"strings"
	"testing"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
)

// A pruned run's page shows its header and where its record went; its
// events and trace answer 410 saying so; verify reports it pruned; its id
// stays taken.
func TestAPrunedRunSaysWhereItsRecordWent(t *testing.T) {
	f := newFixture(t, tokenFileText)
	goneRefund := `{"refunds":[{"id":"r-3001","amount":30,"payee":"carol","reason":"late"}]}`
	for id, input := range map[string]string{"kept": smallRefund, "gone": goneRefund} {
		if a := f.post("/v1/runs", tokOperator, startBody(id, input)); a.status != 201 {
			t.Fatalf("start %s: %d %s", id, a.status, a.body)
		}
		f.waitFor(id, tokViewer, "its end", ended)
	}
	a, digest := pruneRun(t, f.store, "gone")
	p := f.page("gone", tokViewer)
	if p.Pruned == nil || p.Pruned.Archive != digest || p.Pruned.HeadHash != a.Record.Run.HeadHash || p.StatusError != "" ||
		p.Run.Outcome != a.Record.Run.Outcome || len(p.Effects) != 0 {
		t.Fatalf("the pruned run's page: %+v", p)
	}
	if kept := f.page("kept", tokViewer); kept.Pruned != nil || len(kept.Effects) == 0 {
		t.Fatalf("the run kept: %+v", kept)
	}
	for _, path := range []string{"/v1/runs/gone/events", "/v1/runs/gone/trace"} {
		ans := f.get(path, tokViewer)
		if typ, _ := ans.errorOf(t); ans.status != 410 || typ != TypeGone || !strings.Contains(string(ans.body), digest) {
			t.Fatalf("%s: %d %s", path, ans.status, ans.body)
		}
	}
	for _, path := range []string{"/v1/runs/kept/events", "/v1/runs/kept/trace", "/v1/runs/gone/events?after=1000"} {
		if ans := f.get(path, tokViewer); ans.status != 200 {
			t.Fatalf("%s: %d %s", path, ans.status, ans.body)
		}
	}
	v := f.get("/v1/runs/gone/verify", tokViewer)
	if v.status != 200 || v.json(t)["ok"] != true || !strings.Contains(string(v.body), `"pruned"`) {
		t.Fatalf("verify of the pruned run: %d %s", v.status, v.body)
	}
	if ans := f.post("/v1/runs", tokOperator, startBody("gone", smallRefund)); ans.status != 409 {
		t.Fatalf("starting the pruned run's id again: %d %s", ans.status, ans.body)
	}
	// The same refund in another run is still refused by its key: the
	// pruned run's effect is not paid twice.
	paid := len(f.sb.Mutations())
	if ans := f.post("/v1/runs", tokOperator, startBody("again", goneRefund)); ans.status != 201 {
		t.Fatalf("start again: %d %s", ans.status, ans.body)
	}
	again := f.waitFor("again", tokViewer, "its refusal", func(p RunPage) bool { return p.Run.Quarantine != "" })
	if !strings.Contains(again.Run.Quarantine, "already committed") || len(f.sb.Mutations()) != paid {
		t.Fatalf("the same refund again after pruning: %+v; %d mutations, %d before", again.Run, len(f.sb.Mutations()), paid)
	}
}

// pruneRun archives the ended run id of st and prunes it, as flrh store
// prune does, and returns its archive and the archive's digest.
func pruneRun(t *testing.T, st store.Store, id string) (*archive.Archive, string) {
	t.Helper()
	ctx := context.Background()
	a, err := archive.Read(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := archive.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	pr, ok := store.PrunerOf(st)
	if !ok {
		t.Fatal("the served store does not prune")
	}
	digest := store.BodyDigest(doc)
	if err := pr.Prune(ctx, a.Pruning(digest)); err != nil {
		t.Fatal(err)
	}
	return a, digest
}
