package workflow

import (
	"bytes"
	"testing"
	"unsafe"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// TestNoteRoomKeepsNotesApart writes notes of drawn estimates and lengths
// (some outgrowing their room, some failing) through one noteRoom, with
// reservations between them, and holds every kept note to its bytes after
// all were written, capped at its length.
func TestNoteRoomKeepsNotesApart(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var room noteRoom
		type note struct {
			b    []byte
			want []byte
		}
		var kept []note
		for i := range rapid.IntRange(1, 12).Draw(rt, "notes") {
			if rapid.IntRange(0, 3).Draw(rt, "reserve?") == 0 {
				room.reserve(rapid.IntRange(0, 3000).Draw(rt, "reserve"))
			}
			n := rapid.IntRange(1, 900).Draw(rt, "estimate")
			length := rapid.IntRange(1, 1200).Draw(rt, "length")
			b := room.buf(n)
			if len(b) != 0 || cap(b) != n {
				rt.Fatalf("buf(%d): len %d cap %d", n, len(b), cap(b))
			}
			for j := range length {
				b = append(b, byte(i*31+j))
			}
			ok := rapid.IntRange(0, 5).Draw(rt, "fails") != 0
			got, gotOK := room.kept(b, ok)
			if gotOK != ok {
				rt.Fatalf("kept ok %v, want %v", gotOK, ok)
			}
			if !ok {
				continue
			}
			if cap(got) != len(got) && length <= n {
				rt.Fatalf("note %d: len %d cap %d", i, len(got), cap(got))
			}
			kept = append(kept, note{got, bytes.Clone(got)})
		}
		for i, k := range kept {
			if !bytes.Equal(k.b, k.want) {
				rt.Fatalf("note %d changed after the notes that followed it", i)
			}
		}
	})
}

// TestTickNotesApart decides runs of the refund agent and holds every
// note of every trace to canonical bytes capped at their length, no two
// of a tick's notes sharing a byte.
func TestTickNotesApart(t *testing.T) {
	w := compileExample(t, "refund-agent")
	for i, amount := range []int64{40, 170, 60} {
		payee := "alice"
		if i == 2 {
			payee = "mallory"
		}
		st, _ := w.Init("run-notes")
		r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", amount, payee, "damaged")})
		if err != nil || r.Refusal != "" {
			t.Fatal(err, r.Refusal)
		}
		traces := [][]Note{r.Trace}
		if len(r.Effects) > 0 {
			r2, err := w.Decide(r.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)})
			if err != nil || r2.Refusal != "" {
				t.Fatal(err, r2.Refusal)
			}
			traces = append(traces, r2.Trace)
		}
		for _, tr := range traces {
			for j, n := range tr {
				if !cjson.IsCanonical(n.Body) {
					t.Fatalf("%s note is not canonical: %s", n.Kind, n.Body)
				}
				if n.Kind != "h.fhr" && cap(n.Body) != len(n.Body) {
					t.Fatalf("%s note: len %d cap %d", n.Kind, len(n.Body), cap(n.Body))
				}
				for _, m := range tr[j+1:] {
					a, b := uintptr(unsafe.Pointer(unsafe.SliceData(n.Body))), uintptr(unsafe.Pointer(unsafe.SliceData(m.Body)))
					if a < b+uintptr(cap(m.Body)) && b < a+uintptr(cap(n.Body)) {
						t.Fatalf("notes %s and %s share bytes", n.Kind, m.Kind)
					}
				}
			}
		}
	}
}
