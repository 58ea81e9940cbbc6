package frontier

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// AppendDeltaBatch writes what AppendCommand writes for the same batch,
// after whatever the buffer held and whether or not it has room: drawn
// deltas in any order (sorted or not), none, and a buffer with or without
// spare capacity.
func TestAppendDeltaBatchIsAppendCommand(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pl := getPool(rt)
		var ds []ValueDelta
		for i, n := 0, rapid.IntRange(0, 4).Draw(rt, "deltas"); i < n; i++ {
			ds = append(ds, genValueDelta(rt, pl, 8))
		}
		c := ApplyDeltaBatch{ProfileDigest: rapid.SampledFrom([]string{"sha256:" + string(bytes.Repeat([]byte("ab"), 32)), "p"}).Draw(rt, "profile"),
			DataflowVersion: rapid.SampledFrom([]string{"dataflow/0", "dataflow/1"}).Draw(rt, "dataflow"), Deltas: ds}
		head := []byte(rapid.StringMatching(`[a-z{":,]{0,12}`).Draw(rt, "head"))
		room := rapid.IntRange(0, 4096).Draw(rt, "room")
		b1 := append(make([]byte, 0, len(head)+room), head...)
		b2 := append(make([]byte, 0, len(head)+room), head...)
		want := AppendCommand(b1, c)
		got := AppendDeltaBatch(b2, &c)
		if !bytes.Equal(got, want) {
			rt.Fatalf("AppendDeltaBatch\n%s\nAppendCommand\n%s", got, want)
		}
		if !bytes.Equal(got, append(append([]byte(nil), head...), EncodeCommand(c)...)) {
			rt.Fatalf("not the head and the command's bytes:\n%s", got)
		}
	})
}
