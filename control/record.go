package control

import (
	"crypto/sha256"

	"flrh.dev/flrh/cjson"
)

// appendRecord appends the flrh-cjson/1 encoding of an accepted step's
// record: members in byte order, empty omitempty members left out, exactly
// as cjson.Marshal would write it (a property test holds the two together).
// Every string of an accepted record is an identifier, name or digest the
// machine has validated as ASCII, so no NFC check is needed here.
func appendRecord(b []byte, r *Record) []byte {
	// str and list are given a member's separator and quoted key written
	// out (`,"key":`): the keys are fixed plain ASCII, which cjson quotes
	// as they are.
	str := func(member, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		b = append(b, member...)
		b = cjson.AppendString(b, v)
	}
	list := func(member string, vs []string, omitEmpty bool) {
		if omitEmpty && len(vs) == 0 {
			return
		}
		b = append(b, member...)
		if vs == nil {
			b = append(b, "null"...)
			return
		}
		b = append(b, '[')
		for i, v := range vs {
			if i > 0 {
				b = append(b, ',')
			}
			b = cjson.AppendString(b, v)
		}
		b = append(b, ']')
	}
	var keys [8]string // the evidence and guard inputs' names, sorted; on the stack when few
	b = append(b, `{"accepted":`...)
	if r.Accepted {
		b = append(b, "true"...)
	} else {
		b = append(b, "false"...)
	}
	str(`,"actor_role":`, r.ActorRole, false)
	str(`,"capability":`, r.Capability, false)
	str(`,"detail":`, r.Detail, true)
	list(`,"effects":`, r.Effects, false)
	str(`,"event":`, r.Event, false)
	str(`,"event_id":`, r.EventID, false)
	if len(r.Evidence) > 0 {
		b = append(b, `,"evidence":{`...)
		for i, k := range sortedKeysIn(keys[:0], r.Evidence) {
			if i > 0 {
				b = append(b, ',')
			}
			b = cjson.AppendString(b, k)
			b = append(b, ':')
			b = cjson.AppendString(b, r.Evidence[k])
		}
		b = append(b, '}')
	}
	list(`,"evidence_required":`, r.EvidenceRequired, true)
	str(`,"format":`, r.Format, false)
	str(`,"from":`, r.From, false)
	str(`,"guard":`, r.Guard, true)
	if len(r.GuardInputs) > 0 {
		b = append(b, `,"guard_inputs":{`...)
		for i, k := range sortedKeysIn(keys[:0], r.GuardInputs) {
			if i > 0 {
				b = append(b, ',')
			}
			b = cjson.AppendString(b, k)
			if r.GuardInputs[k] {
				b = append(b, ":true"...)
			} else {
				b = append(b, ":false"...)
			}
		}
		b = append(b, '}')
	}
	list(`,"pending_interrupts":`, r.Pending, false)
	str(`,"pointer":`, r.Pointer, true)
	str(`,"prev":`, r.Prev, true)
	str(`,"reason":`, string(r.Reason), true)
	b = append(b, `,"seq":`...)
	b = cjson.AppendInt(b, r.Seq)
	str(`,"table":`, r.Table, false)
	str(`,"to":`, r.To, false)
	str(`,"transition":`, r.Transition, true)
	return append(b, '}')
}

// recordDigest is the sha256 digest of an accepted record's canonical
// bytes.
func recordDigest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	// Written into one array and converted once: one allocation, where
	// the hex string and its concatenation with the prefix took two.
	var out [len("sha256:") + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	cjson.HexSum((*[64]byte)(out[len("sha256:"):]), &sum)
	return string(out[:])
}

// AppendCanonical appends the record's flrh-cjson/1 bytes: accepted records
// through the hand-written encoder (their strings are validated ASCII),
// refused ones, whose detail is free text, through cjson.
func (r *Record) AppendCanonical(b []byte) ([]byte, error) {
	if r.Accepted {
		return appendRecord(b, r), nil
	}
	enc, err := cjson.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}
