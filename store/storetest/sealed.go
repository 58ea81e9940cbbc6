package storetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
)

// Raw reads and rewrites stored bodies behind a store's back, as someone
// with access to the database could: table is "checkpoints" (pos is the
// checkpoint's number n) or "trace" (pos is the record's seq).
type Raw interface {
	Body(t *testing.T, table, runID string, pos int64) []byte
	SetBody(t *testing.T, table, runID string, pos int64, body []byte)
}

// SealedOpener opens (or reopens) one database with the given sealer (nil
// for none), returning the store and raw access to the same database.
type SealedOpener func(t *testing.T, sealer store.Sealer) (store.Store, Raw)

// Keys used by RunSealed; fixed so that failures reproduce.
var (
	key1 = bytes.Repeat([]byte{0x11}, sealed.KeySize)
	key2 = bytes.Repeat([]byte{0x22}, sealed.KeySize)
)

func keyring(t *testing.T, primary []byte, older ...[]byte) *sealed.Keyring {
	t.Helper()
	k, err := sealed.New(primary, older...)
	must(t, err)
	return k
}

// sealedRun commits three ticks to run "r", each with a checkpoint and two
// trace records whose bodies carry marker, and returns what was committed.
func sealedRun(t *testing.T, s store.Store, marker string) (store.Checkpoint, []store.TraceRecord) {
	t.Helper()
	newRun(t, s, "r")
	l, err := s.AcquireLease(ctx, "r", "w", 60e9)
	must(t, err)
	var cp store.Checkpoint
	var trace []store.TraceRecord
	for i := int64(0); i < 3; i++ {
		body := []byte(fmt.Sprintf(`{"state":%q,"step":%d}`, marker, i))
		cp = store.Checkpoint{Seq: i + 1, FormatVersion: 1, BuildDigest: "b", Body: body, Digest: store.BodyDigest(body)}
		tr := []store.TraceRecord{
			{Kind: "h.fhr", Body: []byte(fmt.Sprintf(`{"fhr":%q,"step":%d}`, marker, i))},
			{Kind: "mrp.journey", Body: []byte(fmt.Sprintf(`{"journey":%q,"step":%d}`, marker, i))},
		}
		trace = append(trace, tr...)
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: i, Events: []store.Event{Ev("E", fmt.Sprintf(`{"n":%d}`, i))}, Checkpoint: &cp, Trace: tr}))
	}
	return cp, trace
}

func mustRead(t *testing.T, s store.Store, wantCP store.Checkpoint, wantTrace []store.TraceRecord) {
	t.Helper()
	cp, err := s.Checkpoint(ctx, "r")
	must(t, err)
	if !bytes.Equal(cp.Body, wantCP.Body) || cp.Digest != wantCP.Digest || cp.Seq != wantCP.Seq {
		t.Fatalf("checkpoint read back as %+v, want %+v", cp, wantCP)
	}
	tr, err := s.Trace(ctx, "r")
	must(t, err)
	if len(tr) != len(wantTrace) {
		t.Fatalf("trace has %d records, want %d", len(tr), len(wantTrace))
	}
	for i := range tr {
		if tr[i].Kind != wantTrace[i].Kind || !bytes.Equal(tr[i].Body, wantTrace[i].Body) {
			t.Fatalf("trace record %d = %s %s, want %s %s", i, tr[i].Kind, tr[i].Body, wantTrace[i].Kind, wantTrace[i].Body)
		}
	}
}

func mustReadCode(t *testing.T, s store.Store, code store.Code) {
	t.Helper()
	_, err := s.Checkpoint(ctx, "r")
	mustCode(t, err, code)
	_, err = s.Trace(ctx, "r")
	mustCode(t, err, code)
}

// RunSealed checks encryption at rest on a backend: bodies round-trip,
// nothing of them is stored in clear, and a missing key, a wrong key and
// a plaintext body (CodeSealed), a flipped bit and a body moved to another
// position, another run or another record kind (CodeCorrupt) are each
// refused with a typed error.
func RunSealed(t *testing.T, open SealedOpener) {
	const marker = "plain-marker-5d1e9c"
	t.Run("RoundTripAndNoPlaintext", func(t *testing.T) {
		s, raw := open(t, keyring(t, key1))
		cp, trace := sealedRun(t, s, marker)
		mustRead(t, s, cp, trace)
		for n := int64(1); n <= 3; n++ {
			if b := raw.Body(t, "checkpoints", "r", n); !store.IsSealed(b) || bytes.Contains(b, []byte(marker)) {
				t.Fatalf("checkpoint %d is stored in clear: %q", n, b)
			}
		}
		for seq := int64(1); seq <= int64(len(trace)); seq++ {
			if b := raw.Body(t, "trace", "r", seq); !store.IsSealed(b) || bytes.Contains(b, []byte(marker)) {
				t.Fatalf("trace record %d is stored in clear: %q", seq, b)
			}
		}
	})
	t.Run("ParkedDeliveries", func(t *testing.T) {
		s, _ := open(t, keyring(t, key1))
		p, ok := store.DeliveryParkingOf(s)
		if !ok {
			t.Skip("the store parks no deliveries")
		}
		body := []byte(`{"customer":"` + marker + `"}`)
		must(t, p.ParkDelivery(ctx, store.ParkedDelivery{Key: "shop:m-1", Hook: "shop", Body: body, Status: 422}, 10))
		if d, err := p.ParkedDelivery(ctx, "shop:m-1"); err != nil || !bytes.Equal(d.Body, body) {
			t.Fatalf("read with its key: %q, %v", d.Body, err)
		}
		s.Close()
		// Without the key, or with another, the body is refused: it is
		// stored sealed, and bound to its delivery.
		for _, sealer := range []store.Sealer{nil, keyring(t, key2)} {
			s, _ = open(t, sealer)
			p, _ = store.DeliveryParkingOf(s)
			_, err := p.ParkedDelivery(ctx, "shop:m-1")
			mustCode(t, err, store.CodeSealed)
			if _, err := p.ParkedDeliveries(ctx, "shop", 10); store.CodeOf(err) != store.CodeSealed {
				t.Fatalf("listed without the key: %v", err)
			}
			s.Close()
		}
	})
	t.Run("FollowUps", func(t *testing.T) {
		s, _ := open(t, keyring(t, key1))
		f, ok := store.FollowUpsOf(s)
		if !ok {
			t.Skip("the store keeps no follow-ups")
		}
		addr := "https://hooks.slack.com/commands/" + marker
		must(t, f.AddFollowUp(ctx, store.FollowUp{RunID: "chat-1", Scheme: store.FollowUpSlack, Address: addr}, time.Hour))
		if got, err := f.FollowUps(ctx, "chat-1"); err != nil || len(got) != 1 || got[0].Address != addr {
			t.Fatalf("read with its key: %v, %v", got, err)
		}
		s.Close()
		for _, sealer := range []store.Sealer{nil, keyring(t, key2)} {
			s, _ = open(t, sealer)
			f, _ = store.FollowUpsOf(s)
			_, err := f.FollowUps(ctx, "chat-1")
			mustCode(t, err, store.CodeSealed)
			s.Close()
		}
	})
	t.Run("NoKeyOrWrongKey", func(t *testing.T) {
		s, _ := open(t, keyring(t, key1))
		sealedRun(t, s, marker)
		s.Close()
		s, _ = open(t, nil)
		mustReadCode(t, s, store.CodeSealed)
		s.Close()
		s, _ = open(t, keyring(t, key2))
		mustReadCode(t, s, store.CodeSealed)
		var se *store.SealError
		_, err := s.Checkpoint(ctx, "r")
		if !asSealError(err, &se) || se.KeyID != sealed.KeyID(key1) {
			t.Fatalf("wrong key: error %v does not name the sealing key %s", err, sealed.KeyID(key1))
		}
	})
	t.Run("Rotation", func(t *testing.T) {
		s, _ := open(t, keyring(t, key1))
		cp, trace := sealedRun(t, s, marker)
		s.Close()
		s, raw := open(t, keyring(t, key2, key1))
		mustRead(t, s, cp, trace)
		l, err := s.AcquireLease(ctx, "r", "w", 60e9)
		must(t, err)
		body := []byte(`{"state":"after rotation"}`)
		cp2 := store.Checkpoint{Seq: 3, FormatVersion: 1, BuildDigest: "b", Body: body, Digest: store.BodyDigest(body)}
		tr := store.TraceRecord{Kind: "k", Body: []byte(`{"after":"rotation"}`)}
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 3, Checkpoint: &cp2, Trace: []store.TraceRecord{tr}}))
		mustRead(t, s, cp2, append(trace, tr))
		if b := raw.Body(t, "checkpoints", "r", 4); !bytes.Contains(b, []byte(sealed.KeyID(key2))) {
			t.Fatalf("the new checkpoint is not sealed under the new primary key")
		}
		s.Close()
		s, _ = open(t, keyring(t, key2)) // the old key dropped: old records cannot be read
		_, err = s.Checkpoint(ctx, "r")
		must(t, err) // the latest checkpoint is under key2
		_, err = s.Trace(ctx, "r")
		mustCode(t, err, store.CodeSealed)
	})
	t.Run("BitFlip", func(t *testing.T) {
		s, raw := open(t, keyring(t, key1))
		sealedRun(t, s, marker)
		orig := raw.Body(t, "checkpoints", "r", 3)
		// Every byte after the prefix and key id: nonce, ciphertext, tag.
		start := len(store.SealedPrefix) + 1 + int(orig[len(store.SealedPrefix)])
		for i := start; i < len(orig); i += max(1, (len(orig)-start)/16) {
			b := bytes.Clone(orig)
			b[i] ^= 0x04
			raw.SetBody(t, "checkpoints", "r", 3, b)
			_, err := s.Checkpoint(ctx, "r")
			mustCode(t, err, store.CodeCorrupt)
		}
		b := bytes.Clone(orig)
		raw.SetBody(t, "checkpoints", "r", 3, b[:len(b)-1])
		_, err := s.Checkpoint(ctx, "r")
		mustCode(t, err, store.CodeCorrupt)
		tb := raw.Body(t, "trace", "r", 2)
		tb[len(tb)-1] ^= 0x80
		raw.SetBody(t, "trace", "r", 2, tb)
		_, err = s.Trace(ctx, "r")
		mustCode(t, err, store.CodeCorrupt)
	})
	t.Run("Swaps", func(t *testing.T) {
		s, raw := open(t, keyring(t, key1))
		sealedRun(t, s, marker)
		// An older checkpoint's body in the latest row.
		latest := raw.Body(t, "checkpoints", "r", 3)
		raw.SetBody(t, "checkpoints", "r", 3, raw.Body(t, "checkpoints", "r", 2))
		_, err := s.Checkpoint(ctx, "r")
		mustCode(t, err, store.CodeCorrupt)
		raw.SetBody(t, "checkpoints", "r", 3, latest)
		// A trace record moved to another position with the same kind
		// (records 1 and 3 are both h.fhr), then a record of another kind.
		one, three := raw.Body(t, "trace", "r", 1), raw.Body(t, "trace", "r", 3)
		raw.SetBody(t, "trace", "r", 1, three)
		raw.SetBody(t, "trace", "r", 3, one)
		_, err = s.Trace(ctx, "r")
		mustCode(t, err, store.CodeCorrupt)
		raw.SetBody(t, "trace", "r", 1, one)
		raw.SetBody(t, "trace", "r", 3, three)
		two := raw.Body(t, "trace", "r", 2)
		raw.SetBody(t, "trace", "r", 2, one)
		_, err = s.Trace(ctx, "r")
		mustCode(t, err, store.CodeCorrupt)
		raw.SetBody(t, "trace", "r", 2, two)
		// A checkpoint body as a trace record.
		raw.SetBody(t, "trace", "r", 2, latest)
		_, err = s.Trace(ctx, "r")
		mustCode(t, err, store.CodeCorrupt)
		raw.SetBody(t, "trace", "r", 2, two)
		// Another run's checkpoint at the same position.
		newRun(t, s, "other")
		l, err := s.AcquireLease(ctx, "other", "w", 60e9)
		must(t, err)
		for i := int64(0); i < 3; i++ {
			body := []byte(fmt.Sprintf(`{"other":%d}`, i))
			must(t, s.Commit(ctx, l, store.Tick{ExpectHead: i, Events: []store.Event{Ev("E", fmt.Sprintf(`{"n":%d}`, i))},
				Checkpoint: &store.Checkpoint{Seq: i + 1, FormatVersion: 1, BuildDigest: "b", Body: body, Digest: store.BodyDigest(body)}}))
		}
		raw.SetBody(t, "checkpoints", "r", 3, raw.Body(t, "checkpoints", "other", 3))
		_, err = s.Checkpoint(ctx, "r")
		mustCode(t, err, store.CodeCorrupt)
		// Everything put back reads again.
		raw.SetBody(t, "checkpoints", "r", 3, latest)
		_, err = s.Checkpoint(ctx, "r")
		must(t, err)
		_, err = s.Trace(ctx, "r")
		must(t, err)
	})
	t.Run("PlaintextRefused", func(t *testing.T) {
		// A record in clear where a sealed one belongs (slipped in, or
		// written before encryption was turned on) is refused, not read.
		s, raw := open(t, keyring(t, key1))
		cp, trace := sealedRun(t, s, marker)
		raw.SetBody(t, "checkpoints", "r", 3, cp.Body)
		_, err := s.Checkpoint(ctx, "r")
		mustCode(t, err, store.CodeSealed)
		raw.SetBody(t, "trace", "r", 1, trace[0].Body)
		_, err = s.Trace(ctx, "r")
		mustCode(t, err, store.CodeSealed)
		s.Close()
		// The same store opened without encryption reads the plaintext
		// records and refuses the sealed ones.
		s, _ = open(t, nil)
		got, err := s.Checkpoint(ctx, "r")
		must(t, err)
		if !bytes.Equal(got.Body, cp.Body) {
			t.Fatalf("checkpoint %q", got.Body)
		}
		_, err = s.Trace(ctx, "r")
		mustCode(t, err, store.CodeSealed)
	})
	t.Run("Reseal", func(t *testing.T) { runReseal(t, open, marker) })
}

// resealer is s as a Resealer; every backend is one.
func resealer(t *testing.T, s store.Store) store.Resealer {
	t.Helper()
	r, ok := s.(store.Resealer)
	if !ok {
		t.Fatalf("%T does not reseal", s)
	}
	return r
}

// keysOf lists the key each of run r's stored checkpoints (1..cps) and
// trace records (1..traces) names, "clear" for one stored in clear.
func keysOf(t *testing.T, raw Raw, cps, traces int64) []string {
	t.Helper()
	var out []string
	for n := int64(1); n <= cps; n++ {
		out = append(out, keyName(raw.Body(t, "checkpoints", "r", n)))
	}
	for n := int64(1); n <= traces; n++ {
		out = append(out, keyName(raw.Body(t, "trace", "r", n)))
	}
	return out
}

func keyName(b []byte) string {
	if id, ok := store.SealedKeyID(b); ok {
		return id
	}
	return "clear"
}

func runReseal(t *testing.T, open SealedOpener, marker string) {
	k1, k2 := sealed.KeyID(key1), sealed.KeyID(key2)
	all := func(id string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = id
		}
		return out
	}
	t.Run("UnderTheNewKey", func(t *testing.T) {
		// Sealed under key1, then rotated: one more tick under key2. The
		// pass seals the nine old records under key2 and leaves the two
		// new ones; then key1 can go.
		s, _ := open(t, keyring(t, key1))
		_, trace := sealedRun(t, s, marker)
		s.Close()
		s, raw := open(t, keyring(t, key2, key1))
		l, err := s.AcquireLease(ctx, "r", "w", 60e9)
		must(t, err)
		body := []byte(`{"state":"after rotation"}`)
		cp := store.Checkpoint{Seq: 4, FormatVersion: 1, BuildDigest: "b", Body: body, Digest: store.BodyDigest(body)}
		tr := store.TraceRecord{Kind: "k", Body: []byte(`{"after":"rotation"}`)}
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 3, Events: []store.Event{Ev("E", `{"n":3}`)}, Checkpoint: &cp, Trace: []store.TraceRecord{tr}}))
		trace = append(trace, tr)
		// A dry run counts what the pass will do and writes nothing.
		n, err := resealer(t, s).Reseal(ctx, "r", store.ResealOptions{DryRun: true})
		must(t, err)
		if want := append(all(k1, 3), k2); n != (store.Resealed{Resealed: 9, Current: 2}) ||
			fmt.Sprint(keysOf(t, raw, 4, 0)) != fmt.Sprint(want) || keyName(raw.Body(t, "trace", "r", 1)) != k1 {
			t.Fatalf("dry run %+v, keys %v", n, keysOf(t, raw, 4, 7))
		}
		n, err = resealer(t, s).Reseal(ctx, "r", store.ResealOptions{})
		must(t, err)
		if n != (store.Resealed{Resealed: 9, Current: 2}) {
			t.Fatalf("resealed %+v, want 9 resealed and 2 current", n)
		}
		if got := keysOf(t, raw, 4, 7); fmt.Sprint(got) != fmt.Sprint(all(k2, 11)) {
			t.Fatalf("keys after the pass %v", got)
		}
		mustRead(t, s, cp, trace)
		// A second pass finds nothing to do and writes nothing.
		before := raw.Body(t, "trace", "r", 1)
		n, err = resealer(t, s).Reseal(ctx, "r", store.ResealOptions{})
		must(t, err)
		if n != (store.Resealed{Current: 11}) || !bytes.Equal(raw.Body(t, "trace", "r", 1), before) {
			t.Fatalf("second pass %+v", n)
		}
		s.Close()
		s, _ = open(t, keyring(t, key2)) // key1 dropped: everything still reads
		mustRead(t, s, cp, trace)
		s.Close()
	})
	t.Run("FromClear", func(t *testing.T) {
		// A store written in clear, then encrypted: its old records are
		// refused until a pass asked to seal records in clear seals them.
		s, _ := open(t, nil)
		cp, trace := sealedRun(t, s, marker)
		s.Close()
		s, raw := open(t, keyring(t, key1))
		mustReadCode(t, s, store.CodeSealed)
		if n, err := resealer(t, s).Reseal(ctx, "r", store.ResealOptions{Clear: true, DryRun: true}); err != nil || n != (store.Resealed{Resealed: 9}) ||
			keyName(raw.Body(t, "checkpoints", "r", 1)) != "clear" {
			t.Fatalf("dry run with clear: %+v, %v", n, err)
		}
		n, err := resealer(t, s).Reseal(ctx, "r", store.ResealOptions{})
		must(t, err)
		if n != (store.Resealed{Clear: 9}) || fmt.Sprint(keysOf(t, raw, 3, 6)) != fmt.Sprint(all("clear", 9)) {
			t.Fatalf("without clear: %+v", n)
		}
		n, err = resealer(t, s).Reseal(ctx, "r", store.ResealOptions{Clear: true})
		must(t, err)
		if n != (store.Resealed{Resealed: 9}) || fmt.Sprint(keysOf(t, raw, 3, 6)) != fmt.Sprint(all(k1, 9)) {
			t.Fatalf("with clear: %+v", n)
		}
		mustRead(t, s, cp, trace)
		for i := int64(1); i <= 6; i++ {
			if bytes.Contains(raw.Body(t, "trace", "r", i), []byte(marker)) {
				t.Fatalf("trace record %d still holds the plaintext", i)
			}
		}
	})
	t.Run("AllOrNothing", func(t *testing.T) {
		// A record that does not open stops the run's pass; nothing of the
		// run is written, not even the records before it.
		s, _ := open(t, keyring(t, key1))
		sealedRun(t, s, marker)
		s.Close()
		s, raw := open(t, keyring(t, key2)) // key1 not held
		_, err := resealer(t, s).Reseal(ctx, "r", store.ResealOptions{})
		mustCode(t, err, store.CodeSealed)
		s.Close()
		s, raw = open(t, keyring(t, key2, key1))
		b := raw.Body(t, "trace", "r", 6)
		b[len(b)-1] ^= 1 // the last record fails authentication
		raw.SetBody(t, "trace", "r", 6, b)
		_, err = resealer(t, s).Reseal(ctx, "r", store.ResealOptions{})
		mustCode(t, err, store.CodeCorrupt)
		if got := keysOf(t, raw, 3, 5); fmt.Sprint(got) != fmt.Sprint(all(k1, 8)) {
			t.Fatalf("a failed pass wrote: %v", got)
		}
		s.Close()
		s, _ = open(t, nil)
		_, err = resealer(t, s).Reseal(ctx, "r", store.ResealOptions{Clear: true})
		mustCode(t, err, store.CodeInvalidInput) // no key to seal under
		s.Close()
		s, _ = open(t, keyring(t, key1))
		_, err = resealer(t, s).Reseal(ctx, "no-such-run", store.ResealOptions{})
		mustCode(t, err, store.CodeNotFound)
	})
}

func asSealError(err error, target **store.SealError) bool {
	for err != nil {
		if se, ok := err.(*store.SealError); ok {
			*target = se
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
