package verify_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/internal/refundruns"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/verify"
)

// A run's archive, decoded, verifies and replays exactly as the stored run
// does; a byte changed anywhere in a body of the archive is found; and once
// the store has pruned the run, verify reports it pruned, not broken.
func TestAnArchiveVerifiesAsTheStoredRun(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := refundruns.Record(t, st, "", true, 30, 800)
	agent, _, err := bundle.LoadExample("refund-agent")
	if err != nil {
		t.Fatal(err)
	}
	refunds := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments"}
	workflowOf := map[string]runner.Workflow{"small": refunds, "large": refunds, "agent-0": agent, "agent-1": agent}
	docs := map[string][]byte{}
	for _, id := range ids {
		wf := workflowOf[id]
		want, wantReplay, err := verify.Check(ctx, st, nil, wf, id)
		if err != nil {
			t.Fatal(err)
		}
		if !want.OK() || !wantReplay.OK() || want.Events == 0 {
			t.Fatalf("stored run %s: %+v %+v", id, want, wantReplay)
		}
		a, err := archive.Read(ctx, st, id)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := archive.Encode(a)
		if err != nil {
			t.Fatal(err)
		}
		docs[id] = doc
		back, err := archive.Decode(doc)
		if err != nil {
			t.Fatal(err)
		}
		got, gotReplay, err := verify.Record(ctx, nil, wf, back.Record)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotReplay, wantReplay) {
			t.Fatalf("run %s: the archive's reports differ from the store's:\nstore   %+v %+v\narchive %+v %+v", id, want, wantReplay, got, gotReplay)
		}
	}

	// Every body of one archive, each changed in its last byte but one
	// (inside the JSON, so the document still decodes), is found by the
	// verifier or the replay.
	a, err := archive.Decode(docs["large"])
	if err != nil {
		t.Fatal(err)
	}
	bodies := [][]byte{a.Record.Checkpoint.Body}
	for _, e := range a.Record.Events {
		bodies = append(bodies, e.Body)
	}
	for _, in := range a.Record.Intents {
		bodies = append(bodies, in.Body)
	}
	for _, rc := range a.Record.Receipts {
		bodies = append(bodies, rc.Body)
	}
	for _, g := range a.Record.Approvals {
		bodies = append(bodies, g.Body)
	}
	changed := 0
	for i := range bodies {
		b := bodies[i]
		if len(b) < 3 {
			continue
		}
		old := b[len(b)-2]
		b[len(b)-2] ^= 1
		rep, rp, err := verify.Record(ctx, nil, refunds, a.Record)
		b[len(b)-2] = old
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() && rp.OK() {
			t.Fatalf("body %d changed (%q) and nothing was found", i, b)
		}
		changed++
	}
	if changed < 8 {
		t.Fatalf("only %d bodies changed", changed)
	}

	// Pruned, the run is reported as pruned, with its archive's digest.
	doc := docs["large"]
	if err := st.Prune(ctx, a.Pruning(store.BodyDigest(doc))); err != nil {
		t.Fatal(err)
	}
	rep, rp, err := verify.Check(ctx, st, nil, refunds, "large")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Pruned == nil || rep.Pruned.Archive != store.BodyDigest(doc) || rep.Pruned.HeadHash != a.Record.Run.HeadHash ||
		rep.Outcome != a.Record.Run.Outcome || rep.Events != 0 || !rp.Pruned {
		t.Fatalf("a pruned run's reports: %+v %+v", rep, rp)
	}
	reps, err := verify.Many(ctx, st, nil, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reps {
		if !r.OK() || (r.Pruned != nil) != (ids[i] == "large") {
			t.Fatalf("verify of %s among many: %+v", ids[i], r)
		}
	}
	// The archive still verifies, as it did before the pruning.
	back, err := archive.Decode(doc)
	if err != nil || back.Record.Run.HeadHash != rep.Pruned.HeadHash {
		t.Fatalf("archive after pruning: %v", err)
	}
	if got, _, err := verify.Record(ctx, nil, nil, back.Record); err != nil || !got.OK() || got.Events == 0 {
		t.Fatalf("the archive after pruning: %+v, %v", got, err)
	}
}
