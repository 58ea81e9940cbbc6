package archive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

var ctx = context.Background()

// storedRun reads, from a SQLite store of its own, an ended run holding a
// record of every kind (storetest.EndedWithEverything).
func storedRun(t *testing.T) *archive.Archive {
	t.Helper()
	c := storetest.NewClock()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.EndedWithEverything(t, s, c, "run-1")
	a, err := archive.Read(ctx, s, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A stored run read whole, encoded and decoded, is the record read, and
// encodes to the same bytes again.
func TestAStoredRunRoundTrips(t *testing.T) {
	a := storedRun(t)
	if got, want := a.Counts(), (store.RecordCounts{Events: 3, Intents: 2, Attempts: 3, Receipts: 2, Grants: 3, Inbox: 2, Trace: 3}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	if len(a.Record.Approvals) != 1 || !a.Record.HasCheckpoint || a.Record.Run.Outcome != "success" {
		t.Fatalf("record read: %d named grants, checkpoint %v, outcome %q", len(a.Record.Approvals), a.Record.HasCheckpoint, a.Record.Run.Outcome)
	}
	doc, err := archive.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := archive.Decode(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, a) {
		t.Fatalf("decoded archive differs from the record read:\nread    %+v\ndecoded %+v", a, back)
	}
	again, err := archive.Encode(back)
	if err != nil || !bytes.Equal(again, doc) {
		t.Fatalf("encoding the decoded archive: %v; same bytes %v", err, bytes.Equal(again, doc))
	}
	// The test run's intent bodies are not canonical (their keys are out
	// of order), so they travel as base64; its events are embedded.
	if !bytes.Contains(doc, []byte(`"body":{"amount":10}`)) || !bytes.Contains(doc, []byte(`"body_base64":"`)) {
		t.Fatalf("bodies not embedded as expected:\n%s", doc)
	}
}

// genArchive draws an archive whose every part a store could return:
// bodies canonical JSON or arbitrary bytes, times in UTC or zero.
func genArchive(t *rapid.T) *archive.Archive {
	body := rapid.Map(rapid.OneOf(
		rapid.SampledFrom([]string{`{}`, `{"a":1}`, `[1,"x",null,true]`, `"s"`, `0`, `{"a":{"b":[{}]}}`, `{"b":1,"a":2}`, ` {}`, ``, `{`}),
		rapid.StringN(0, 40, -1),
	), func(s string) []byte { return []byte(s) })
	when := rapid.OneOf(rapid.Just(time.Time{}), rapid.Map(rapid.Int64Range(1, 1<<62), func(n int64) time.Time { return time.Unix(0, n).UTC() }))
	text := rapid.StringMatching(`[a-z0-9:-]{0,12}`)
	runID := rapid.StringMatching(`[a-z0-9-]{1,10}`).Draw(t, "run")
	a := &archive.Archive{}
	r := &a.Record
	r.Run = store.Run{ID: runID, WorkflowID: text.Draw(t, "wf"), WorkflowVersion: text.Draw(t, "v"), WorkflowDigest: text.Draw(t, "wd"),
		State: text.Draw(t, "state"), Outcome: text.Draw(t, "outcome"), Head: rapid.Int64().Draw(t, "head"), HeadHash: text.Draw(t, "hh"),
		Lease:      store.Lease{RunID: runID, Owner: text.Draw(t, "owner"), Generation: rapid.Int64().Draw(t, "gen"), ExpiresAt: when.Draw(t, "exp")},
		Quarantine: text.Draw(t, "q"), CreatedAt: when.Draw(t, "created"), UpdatedAt: when.Draw(t, "updated"), DueAt: when.Draw(t, "due"),
		Labels: rapid.MapOfN(rapid.StringMatching(`[a-z][a-z0-9./_-]{0,8}[a-z0-9]`),
			rapid.StringMatching(`[^\x00-\x1f\x7f-\x9f]{1,8}`).Filter(func(v string) bool { return label.CheckValue("k", v) == nil }), 0, 3).Draw(t, "labels")}
	if len(r.Run.Labels) == 0 {
		r.Run.Labels = nil // none is nil, as a store reads it
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "events") {
		r.Events = append(r.Events, store.Event{Seq: int64(i + 1), Kind: text.Draw(t, "kind"), Body: body.Draw(t, "body"), Digest: text.Draw(t, "d"),
			PrevHash: text.Draw(t, "prev"), ChainHash: text.Draw(t, "chain"), Generation: rapid.Int64().Draw(t, "g"), RecordedAt: when.Draw(t, "at")})
	}
	if rapid.Bool().Draw(t, "cp") {
		r.HasCheckpoint = true
		r.Checkpoint = store.Checkpoint{Seq: rapid.Int64().Draw(t, "cpseq"), FormatVersion: rapid.Int64().Draw(t, "fv"), BuildDigest: text.Draw(t, "bd"),
			Body: body.Draw(t, "cpbody"), Digest: text.Draw(t, "cpd")}
	}
	grants := rapid.IntRange(0, 3).Draw(t, "grants")
	for i := range grants {
		owner := runID
		if rapid.Bool().Draw(t, "other run") {
			owner = runID + "-other"
		}
		a.Grants = append(a.Grants, store.Approval{ID: fmt.Sprintf("g%d", i), RunID: owner, RequestDigest: text.Draw(t, "rq"), Nonce: text.Draw(t, "nonce"),
			Body: body.Draw(t, "gbody"), Digest: text.Draw(t, "gd"), ExpiresAt: when.Draw(t, "gexp"),
			Status: store.ApprovalStatus(text.Draw(t, "gs")), ConsumedBy: text.Draw(t, "cb")})
	}
	named := map[string]bool{}
	for i := range rapid.IntRange(0, 3).Draw(t, "intents") {
		in := store.Intent{ID: fmt.Sprintf("i%d", i), RunID: runID, Seq: rapid.Int64().Draw(t, "iseq"), EffectType: text.Draw(t, "et"),
			IdempotencyKey: text.Draw(t, "key"), ContentDigest: text.Draw(t, "cd"), Body: body.Draw(t, "ibody"), Digest: text.Draw(t, "id"),
			Outbox: store.OutboxStatus(text.Draw(t, "ob")), Route: text.Draw(t, "route"), Attempts: rapid.Int64().Draw(t, "n")}
		if grants > 0 && rapid.Bool().Draw(t, "names a grant") {
			in.ApprovalID = fmt.Sprintf("g%d", rapid.IntRange(0, grants-1).Draw(t, "grant"))
			named[in.ApprovalID] = true
		}
		r.Intents = append(r.Intents, in)
		for n := range rapid.IntRange(0, 2).Draw(t, "attempts") {
			r.Attempts = append(r.Attempts, store.Attempt{IntentID: in.ID, N: int64(n + 1), Status: store.AttemptStatus(text.Draw(t, "as")),
				Generation: rapid.Int64().Draw(t, "ag"), Detail: text.Draw(t, "detail"), StartedAt: when.Draw(t, "s"), FinishedAt: when.Draw(t, "f")})
		}
		if rapid.Bool().Draw(t, "receipt") {
			r.Receipts = append(r.Receipts, store.Receipt{IntentID: in.ID, Outcome: text.Draw(t, "o"), Body: body.Draw(t, "rbody"), Digest: text.Draw(t, "rd")})
		}
	}
	// What the archive holds of the grants: the named ones in the record,
	// the run's own in Grants (a grant of another run only if named).
	var own []store.Approval
	for _, g := range a.Grants {
		if named[g.ID] {
			r.Approvals = append(r.Approvals, g)
		}
		if g.RunID == runID {
			own = append(own, g)
		}
	}
	a.Grants = own
	for i := range rapid.IntRange(0, 3).Draw(t, "inbox") {
		a.Inbox = append(a.Inbox, store.Inbound{ID: fmt.Sprintf("in%d", i), RunID: runID, Kind: text.Draw(t, "k"), ActorRole: text.Draw(t, "role"),
			Actor: text.Draw(t, "actor"), Capability: text.Draw(t, "cap"), Body: body.Draw(t, "inbody"), Digest: text.Draw(t, "ind"),
			Seq: int64(i + 1), Consumed: rapid.Bool().Draw(t, "consumed")})
	}
	for range rapid.IntRange(0, 3).Draw(t, "trace") {
		a.Trace = append(a.Trace, store.TraceRecord{Kind: text.Draw(t, "tk"), Body: body.Draw(t, "tbody")})
	}
	return a
}

// Every archive decodes from its document to itself, byte for byte, and
// its document is canonical and the same on every encoding.
func TestEveryArchiveRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := genArchive(t)
		doc, err := archive.Encode(a)
		if err != nil {
			t.Fatal(err)
		}
		back, err := archive.Decode(doc)
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if !reflect.DeepEqual(normal(back), normal(a)) {
			t.Fatalf("round trip differs:\nin  %+v\nout %+v\n%s", a, back, doc)
		}
		if again, _ := archive.Encode(back); !bytes.Equal(again, doc) {
			t.Fatalf("a second encoding differs")
		}
	})
}

// normal makes empty bodies and lists one value, as a store may return
// either for none.
func normal(a *archive.Archive) *archive.Archive {
	c := *a
	r := &c.Record
	r.Events = normalized(r.Events, func(e *store.Event) *[]byte { return &e.Body })
	r.Checkpoint.Body = fixBody(r.Checkpoint.Body)
	r.Intents = normalized(r.Intents, func(in *store.Intent) *[]byte { return &in.Body })
	r.Receipts = normalized(r.Receipts, func(rc *store.Receipt) *[]byte { return &rc.Body })
	r.Attempts = append([]store.Attempt{}, r.Attempts...)
	r.Approvals = normalized(r.Approvals, func(g *store.Approval) *[]byte { return &g.Body })
	c.Grants = normalized(c.Grants, func(g *store.Approval) *[]byte { return &g.Body })
	c.Inbox = normalized(c.Inbox, func(in *store.Inbound) *[]byte { return &in.Body })
	c.Trace = normalized(c.Trace, func(tr *store.TraceRecord) *[]byte { return &tr.Body })
	return &c
}

// normalized copies xs (never nil) with each one's body (at body) made
// non-nil.
func normalized[T any](xs []T, body func(*T) *[]byte) []T {
	out := append([]T{}, xs...)
	for i := range out {
		b := body(&out[i])
		*b = fixBody(*b)
	}
	return out
}

func fixBody(b []byte) []byte {
	if len(b) == 0 {
		return []byte{}
	}
	return b
}

// A document that is not one Encode wrote is refused with an *Error that
// says where.
func TestDecodeRefuses(t *testing.T) {
	a := storedRun(t)
	doc, err := archive.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	replace := func(old, new string) string {
		t.Helper()
		if !strings.Contains(text, old) {
			t.Fatalf("%q not in the document", old)
		}
		return strings.Replace(text, old, new, 1)
	}
	for _, tc := range []struct {
		name, doc, where, detail string
	}{
		{"not JSON", text[:len(text)-1], "", "not canonical JSON"},
		{"whitespace", " " + text, "", "not in canonical form"},
		{"another kind", replace(`"kind":"flrh-run-archive/1"`, `"kind":"flrh-run-export/1"`), "/kind", "want"},
		{"an unknown member", replace(`"kind":"flrh-run-archive/1"`, `"kind":"flrh-run-archive/1","more":1`), "", "unknown field"},
		{"a missing list", replace(`"inbox":[`, `"inbx":[`), "", "unknown field"},
		{"both bodies", replace(`"body":{"amount":10}`, `"body":{"amount":10},"body_base64":""`), "/events/0", "both"},
		{"neither body", replace(`"body":{"amount":10},`, ``), "/events/0", "neither"},
		{"bad base64", replace(`"body_base64":"`, `"body_base64":"!`), "/body_base64", "illegal"},
		{"a time not in UTC", replace(`"created_at":"2026-01-02T03:04:05Z"`, `"created_at":"2026-01-02T04:04:05+01:00"`), "/run/created_at", "UTC"},
		{"a time that is not one", replace(`"created_at":"2026-01-02T03:04:05Z"`, `"created_at":"yesterday"`), "/run/created_at", "RFC 3339"},
		{"grants out of order", replace(`"id":"run-1-g1"`, `"id":"run-1-g9"`), "/grants/1/id", "ordered"},
		{"no run id", replace(`"id":"run-1","labels"`, `"id":"","labels"`), "/run/id", "required"},
		{"a label the rules refuse", replace(`"team":"refunds"`, `"team":""`), "/run/labels", `label "team": the value is empty`},
	} {
		_, err := archive.Decode([]byte(tc.doc))
		var ae *archive.Error
		if !errors.As(err, &ae) || !strings.HasSuffix(ae.Where, tc.where) || !strings.Contains(ae.Error(), tc.detail) {
			t.Errorf("%s: Decode = %v, want an *archive.Error at %q saying %q", tc.name, err, tc.where, tc.detail)
		}
	}
	// Members checked present: a document lacking one is refused, not read
	// as if the list were empty (or the run as if it had no checkpoint).
	for _, member := range []string{"run", "events", "checkpoint", "intents", "attempts", "receipts", "grants", "inbox", "trace"} {
		v, err := cjson.Decode(doc)
		if err != nil {
			t.Fatal(err)
		}
		delete(v.(map[string]any), member)
		lacking, err := cjson.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		var ae *archive.Error
		if _, err := archive.Decode(lacking); !errors.As(err, &ae) || ae.Where != "/"+member || !strings.Contains(ae.Detail, "missing") {
			t.Errorf("a document without %s: %v", member, err)
		}
	}
}

// FuzzDecode: Decode never panics, refuses with an *Error, and what it
// accepts encodes to a document that decodes to the same archive.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"attempts":[],"checkpoint":null,"events":[],"grants":[],"inbox":[],"intents":[],"kind":"flrh-run-archive/1","receipts":[],"run":{"id":"r"},"trace":[]}`))
	f.Add([]byte(`{"attempts":[],"checkpoint":{"body_base64":"eA==","build_digest":"","digest":"","format_version":1,"seq":1},"events":[{"body":{},"chain_hash":"","digest":"","generation":1,"kind":"K","prev_hash":"","recorded_at":"","seq":1}],"grants":[],"inbox":[],"intents":[],"kind":"flrh-run-archive/1","receipts":[],"run":{"id":"r"},"trace":[{"body":[1],"kind":"t"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		a, err := archive.Decode(doc)
		if err != nil {
			var ae *archive.Error
			if !errors.As(err, &ae) {
				t.Fatalf("Decode error %T %v, want *archive.Error", err, err)
			}
			return
		}
		again, err := archive.Encode(a)
		if err != nil {
			return // a document may hold what Encode refuses (one grant twice)
		}
		b, err := archive.Decode(again)
		if err != nil {
			t.Fatalf("re-encoded document refused: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(normal(a), normal(b)) {
			t.Fatalf("decode, encode, decode differs:\n%+v\n%+v", a, b)
		}
	})
}
