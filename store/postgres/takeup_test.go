package postgres

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
	"flrh.dev/flrh/store/storetest"
)

var _ runner.TakeUpReader = (*Store)(nil)

// TakeUp returns exactly what Run, Checkpoint and Inbox (pending only)
// return, one by one, for runs in every state a runner takes one up in:
// without a checkpoint and with inputs pending, with checkpoints and
// inputs consumed and pending, ended, and missing; clear and sealed.
func TestTakeUpMatchesTheReads(t *testing.T) {
	k, err := sealed.New(bytes.Repeat([]byte{9}, sealed.KeySize))
	must(t, err)
	for name, opts := range map[string]Options{"clear": {}, "sealed": {Sealer: k}} {
		t.Run(name, func(t *testing.T) {
			s := openTest(t, opts)
			must(t, s.CreateRun(ctx, store.Run{ID: "new", WorkflowID: "wf", WorkflowVersion: "1", State: "S"},
				storetest.Inb("new", "a", "INPUT", `{"a":1}`), storetest.Inb("new", "b", "INPUT", `{"b":2}`)))
			must(t, s.CreateRun(ctx, store.Run{ID: "bare", WorkflowID: "wf", State: "S"}))

			must(t, s.CreateRun(ctx, store.Run{ID: "busy", WorkflowID: "wf", State: "S"}, storetest.Inb("busy", "x", "INPUT", `{}`)))
			l, err := s.AcquireLease(ctx, "busy", "w", time.Hour)
			must(t, err)
			cp := func(seq int64, body string) *store.Checkpoint {
				return &store.Checkpoint{Seq: seq, FormatVersion: 1, BuildDigest: "sha256:build", Body: []byte(body), Digest: store.BodyDigest([]byte(body))}
			}
			must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{}`)}, Consume: []string{"x"}, Checkpoint: cp(1, `{"n":1}`)}))
			must(t, s.Submit(ctx, storetest.Inb("busy", "y", "INPUT", `{"y":1}`)))
			must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{}`)}, Checkpoint: cp(2, `{"n":2}`)}))
			must(t, s.Submit(ctx, storetest.Inb("busy", "z", "INPUT", `{"z":1}`)))

			must(t, s.CreateRun(ctx, store.Run{ID: "done", WorkflowID: "wf", State: "S"}))
			l, err = s.AcquireLease(ctx, "done", "w", time.Hour)
			must(t, err)
			must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("END", `{}`)}, Outcome: "SUCCEEDED", Checkpoint: cp(1, `{"end":true}`)}))

			for _, run := range []string{"new", "bare", "busy", "done", "missing"} {
				wantRun, wantRunErr := s.Run(ctx, run)
				wantCp, wantCpErr := s.Checkpoint(ctx, run)
				wantIn, wantInErr := s.Inbox(ctx, run, true)
				must(t, wantInErr)
				gotRun, gotCp, gotCpErr, gotIn, gotErr := s.TakeUp(ctx, run)
				if store.CodeOf(gotErr) != store.CodeOf(wantRunErr) || (gotErr == nil) != (wantRunErr == nil) {
					t.Fatalf("%s: error %v, Run's %v", run, gotErr, wantRunErr)
				}
				if wantRunErr != nil {
					continue
				}
				if !reflect.DeepEqual(gotRun, wantRun) {
					t.Fatalf("%s: run %+v, Run's %+v", run, gotRun, wantRun)
				}
				if !reflect.DeepEqual(gotCp, wantCp) || store.CodeOf(gotCpErr) != store.CodeOf(wantCpErr) || (gotCpErr == nil) != (wantCpErr == nil) {
					t.Fatalf("%s: checkpoint %+v (%v), Checkpoint's %+v (%v)", run, gotCp, gotCpErr, wantCp, wantCpErr)
				}
				if !reflect.DeepEqual(gotIn, wantIn) {
					t.Fatalf("%s: pending %+v, Inbox's %+v", run, gotIn, wantIn)
				}
			}
		})
	}
}
