package verify

import (
	"bytes"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/effect"
	tamperdb "flrh.dev/flrh/internal/tamper"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
	"flrh.dev/flrh/store/sqlite"
	"pgregory.net/rapid"
)

// evidenceCells lists the columns a finished run's evidence lives in: the
// accepted events and their chain, the latest checkpoint, the intents, the
// receipts and the approvals, each named by the table and which of the
// table's rows are evidence. A run's earlier
// checkpoints are history that nothing reads (a run resumes from its
// latest, and replay starts from the events), so verify leaves them alone.
// An intent's content_digest column is left out too: the digest of what
// the adapter sends is recorded nowhere else once the effect has closed
// (its open effect in a checkpoint carries it until then), and the store
// reads it only to tell a reused key's refusal as a conflict rather than
// a repeat; the key itself is unique either way.
var evidenceCells = []struct {
	table, where string
	cols         []string
}{
	{"events", "true", []string{"body", "digest", "prev_hash", "chain_hash", "kind"}},
	{"checkpoints", "n = (SELECT max(n) FROM checkpoints c WHERE c.run_id = checkpoints.run_id)", []string{"body", "digest"}},
	{"intents", "true", []string{"body", "digest", "idempotency_key", "effect_type"}},
	{"receipts", "true", []string{"body", "digest", "outcome"}},
	{"approvals", "true", []string{"body", "digest", "request_digest", "status"}},
}

// cell is one value of evidence in the database.
type cell struct {
	table, col, key, run string
	typ                  string // SQLite's typeof: text or blob
	val                  []byte
}

func (c cell) String() string { return fmt.Sprintf("%s.%s[%s]", c.table, c.col, c.key) }

func readCells(t *testing.T, db *sql.DB) []cell {
	t.Helper()
	var out []cell
	for _, e := range evidenceCells {
		for _, col := range e.cols {
			q := fmt.Sprintf(`SELECT %s, run_id, typeof(%s), CAST(%s AS BLOB) FROM %s WHERE %s ORDER BY 1`, tamperdb.Key(e.table), col, col, e.table, e.where)
			rows, err := db.Query(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for rows.Next() {
				c := cell{table: e.table, col: col}
				if err := rows.Scan(&c.key, &c.run, &c.typ, &c.val); err != nil {
					t.Fatal(err)
				}
				if len(c.val) > 0 {
					out = append(out, c)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
		}
	}
	return out
}

// Any one byte of a finished run's evidence changed behind the store's
// back is found: verify reports it for that run (or cannot read the run,
// which it also reports), the slow oracle and the parallel checks report
// exactly the same, replay neither panics nor calls the run sound where
// it cannot read it, and the other run verifies as before. Checkpoints
// are drawn as stored (packed), as their body's own text, and sealed at
// rest, so a changed byte lands in the packed form, in the document and
// in the ciphertext alike.
func TestAnyByteOfEvidenceChangedIsFound(t *testing.T) {
	if testing.Short() {
		t.Skip("a recorded database per draw")
	}
	packedBase := recorded(t)
	textBase := filepath.Join(t.TempDir(), "text.db")
	copyFile(t, packedBase, textBase)
	{
		st := open(t, textBase, false)
		unpackCheckpoints(t, st.DB())
		st.Close()
	}
	// A third record on a store that seals its checkpoints at rest
	// (AES-GCM): a changed byte of a sealed body is found as well.
	keys, err := sealed.New(bytes.Repeat([]byte{7}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	sealedBase := recordedWith(t, sqlite.Options{Sealer: keys})
	// A fourth with a run still waiting for a person's approval: a live
	// run's record is held to the same.
	waitingBase := filepath.Join(t.TempDir(), "waiting.db")
	copyFile(t, packedBase, waitingBase)
	addWaitingRun(t, waitingBase)
	bases := []string{packedBase, textBase, sealedBase, waitingBase}
	opts := []sqlite.Options{{}, {}, {Sealer: keys}, {}}
	runsOf := [][]string{{"small", "large"}, {"small", "large"}, {"small", "large"}, {"small", "large", "waiting"}}
	cells := make([][]cell, len(bases))
	for i, b := range bases {
		st := open(t, b, true)
		cells[i] = readCells(t, st.DB())
		st.Close()
		if len(cells[i]) < 30 {
			t.Fatalf("only %d cells of evidence in %s", len(cells[i]), b)
		}
	}
	columns := make([][][]cell, len(bases))
	for i := range bases {
		for j, c := range cells[i] {
			if j == 0 || c.table != cells[i][j-1].table || c.col != cells[i][j-1].col {
				columns[i] = append(columns[i], nil)
			}
			columns[i][len(columns[i])-1] = append(columns[i][len(columns[i])-1], c)
		}
	}
	dir := t.TempDir()
	draws, found := 0, map[string]int{}
	tamperdb.FewerChecksUnderRace(t, 10)
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		which := rapid.IntRange(0, len(bases)-1).Draw(rt, "record: packed, as text, sealed, with a live run")
		// A column first, then one of its cells: the events' many rows
		// would otherwise take most draws.
		col := rapid.SampledFrom(columns[which]).Draw(rt, "column")
		c := rapid.SampledFrom(col).Draw(rt, "cell")
		pos := rapid.IntRange(0, len(c.val)-1).Draw(rt, "byte")
		delta := byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
		val := append([]byte(nil), c.val...)
		val[pos] ^= delta

		path := drawCopy(t, dir, draws, bases[which])
		defer removeDraw(path)
		var arg any = val
		if c.typ == "text" {
			arg = string(val)
		}
		if err := changeCell(path, tamperdb.Column{Table: c.table, Name: c.col}, c.key, arg); err != nil {
			// A constraint of the schema refuses the value (a status
			// outside its CHECK): nothing to find.
			rt.Skipf("%s: %v", c, err)
		}

		ro := opts[which]
		ro.ReadOnly = true
		st, err := sqlite.Open(ctx, path, ro)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var others []string
		for _, r := range runsOf[which] {
			if r != c.run {
				others = append(others, r)
			}
		}
		other := others[0]
		rep, err := Run(ctx, st, nil, c.run)
		slow, slowErr := slowRun(ctx, st, nil, c.run)
		if (err == nil) != (slowErr == nil) {
			rt.Fatalf("%s byte %d ^%#x: verify error %v, the oracle's %v", c, pos, delta, err, slowErr)
		}
		if err == nil {
			if rep.OK() {
				rt.Fatalf("%s byte %d ^%#x (%q → %q): verify finds nothing", c, pos, delta, c.val[max(0, pos-20):min(len(c.val), pos+20)], val[max(0, pos-20):min(len(val), pos+20)])
			}
			found[rep.Findings[0].Check]++
			if !reflect.DeepEqual(rep, slow) {
				rt.Fatalf("%s byte %d ^%#x: verify reports\n%+v\nthe oracle\n%+v", c, pos, delta, rep, slow)
			}
		}
		rp, rerr := Replay(ctx, st, wf, c.run)
		if err != nil && rerr == nil && rp.OK() {
			rt.Fatalf("%s byte %d ^%#x: verify cannot read the run (%v) and replay calls it sound", c, pos, delta, err)
		}
		got, merr := CheckMany(ctx, st, nil, []Job{{RunID: c.run, Workflow: wf}, {RunID: other, Workflow: wf}})
		if (merr == nil) != (err == nil) {
			rt.Fatalf("%s byte %d ^%#x: CheckMany error %v, Run's %v", c, pos, delta, merr, err)
		}
		if merr == nil {
			if !reflect.DeepEqual(got[0].Report, rep) {
				rt.Fatalf("%s byte %d ^%#x: CheckMany reports\n%+v\nRun\n%+v", c, pos, delta, got[0].Report, rep)
			}
			if (rerr == nil) && !reflect.DeepEqual(got[0].Replay, rp) {
				rt.Fatalf("%s byte %d ^%#x: CheckMany replays\n%+v\nReplay\n%+v", c, pos, delta, got[0].Replay, rp)
			}
		}
		for _, other := range others {
			orep, err := Run(ctx, st, nil, other)
			if err != nil || !orep.OK() {
				rt.Fatalf("%s byte %d ^%#x: the other run %s: %v %+v", c, pos, delta, other, err, orep)
			}
		}
	})
	t.Logf("%d draws; the first finding of each: %v", draws, found)
}

// copyFile copies the file from to the file to.
func copyFile(tb testing.TB, from, to string) {
	tb.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// Replay holds a grant the run consumed to the request the workflow asks
// approval of: a grant for any other request (another amount or payee) is
// found, whatever else of the record agrees with it. Forging such a record
// through the store would mean recomputing every digest and control
// record after it; the grant is changed in the record read instead.
func TestAGrantForAnotherRequestIsFoundOnReplay(t *testing.T) {
	st := open(t, recorded(t), true)
	honest, err := load(ctx, st, "large", withRun|withEffects)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := replayRecord(ctx, honest, wf, "large", mustInit(t, "large"))
	if err != nil || !rp.OK() {
		t.Fatalf("the honest record: %v %+v", err, rp)
	}
	rec, err := load(ctx, st, "large", withRun|withEffects)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.approvals) != 1 {
		t.Fatalf("%d grants read with the run", len(rec.approvals))
	}
	other := store.BodyDigest([]byte("a request for 5, not 500"))
	for id, a := range rec.approvals {
		a.RequestDigest = other
		rec.approvals[id] = a
	}
	rp, err = replayRecord(ctx, rec, wf, "large", mustInit(t, "large"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.Findings) != 1 || rp.Findings[0].Check != "replay-approval" || !strings.Contains(rp.Findings[0].Detail, other) {
		t.Fatalf("replay of a run that consumed a grant for another request: %+v", rp.Findings)
	}
}

func mustInit(t *testing.T, runID string) []byte {
	t.Helper()
	state, err := wf.Init(runID)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// drawCopy copies the database base for draw n, to be removed with its
// log once the draw is done.
func drawCopy(t *testing.T, dir string, n int, base string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("draw%d.db", n))
	copyFile(t, base, path)
	return path
}

// removeDraw removes a draw's database and its log.
func removeDraw(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// addWaitingRun adds to the record at path a run, "waiting", that waits
// for a person to approve a large refund.
func addWaitingRun(t *testing.T, path string) {
	t.Helper()
	st := open(t, path, false)
	defer st.Close()
	reg := &effect.Registry{}
	reg.Register("refund.pay", "http/1", &payments{applied: map[string]string{}})
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "waiting", wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"w","amount":800,"payee":"dan","reason":"w"}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if run, _ := st.Run(ctx, "waiting"); run.State != "WAIT_APPROVAL" {
		t.Fatalf("the waiting run is %s", run.State)
	}
}

// changeCell sets one cell of the database at path (tamperdb.Set) and
// closes the store at once, so that a draw leaves no file open. It
// returns the error of a value the schema refuses.
func changeCell(path string, c tamperdb.Column, key string, v any) error {
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer st.Close()
	if err := tamperdb.Set(st.DB(), c, key, v); err != nil {
		return err
	}
	return st.Close()
}

// Any one cell of any table of a finished record changed, to any value the
// schema takes (an integer moved or replaced, a byte of text or a blob
// changed, a value emptied), whether or not it is evidence: verify and its
// slow oracle then fail alike or report alike for both runs, CheckMany
// reports what Run and Replay report one run at a time, and nothing
// panics. This holds the fast readers to the slow ones on records no
// honest run writes.
func TestAnyCellChangedIsCheckedAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("a recorded database per draw")
	}
	base := recorded(t)
	st := open(t, base, true)
	cols, err := tamperdb.Columns(st.DB())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	draws := 0
	tamperdb.FewerChecksUnderRace(t, 10)
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		c := rapid.SampledFrom(cols).Draw(rt, "column")
		st := open(t, base, true)
		cells, err := tamperdb.Cells(st.DB(), c, "true")
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) == 0 {
			rt.Skipf("%s has no rows", c.Table)
		}
		x := rapid.SampledFrom(cells).Draw(rt, "cell")
		v, ok := tamperdb.Draw(rt, x.Type, x.Value, math.MinInt64, math.MaxInt64, 255)
		if !ok {
			rt.Skipf("%s.%s is %s", c.Table, c.Name, x.Type)
		}
		what := fmt.Sprintf("%s.%s[%s] = %v", c.Table, c.Name, x.Key, v)
		path := drawCopy(t, dir, draws, base)
		defer removeDraw(path)
		if err := changeCell(path, c, x.Key, v); err != nil {
			rt.Skipf("%s: %v", what, err)
		}
		ro, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
		if err != nil {
			// A change the store itself refuses to open (a run header it
			// cannot read, say) says so; it must not panic.
			return
		}
		defer ro.Close()
		checkedAlike(rt, ro, wf, []string{"small", "large"}, what)
	})
	t.Logf("%d draws over %d columns", draws, len(cols))
}

// checkedAlike holds verify to its slow oracle on every run of a store
// (failing alike, or reporting alike), and CheckMany to Run and Replay
// one run at a time, replaying with wf; what names the change for a
// failure's message.
func checkedAlike(rt interface{ Fatalf(string, ...any) }, st store.Store, wf runner.Workflow, runs []string, what string) {
	var jobs []Job
	var want []Checked
	var firstErr error
	for _, run := range runs {
		rep, err := Run(ctx, st, nil, run)
		slow, slowErr := slowRun(ctx, st, nil, run)
		if (err == nil) != (slowErr == nil) {
			rt.Fatalf("%s, run %s: verify error %v, the oracle's %v", what, run, err, slowErr)
		}
		if err == nil && !reflect.DeepEqual(rep, slow) {
			rt.Fatalf("%s, run %s: verify reports\n%+v\nthe oracle\n%+v", what, run, rep, slow)
		}
		rp, rerr := Replay(ctx, st, wf, run)
		jobs = append(jobs, Job{RunID: run, Workflow: wf})
		if firstErr == nil {
			switch {
			case err != nil:
				firstErr = err
			case rerr != nil:
				firstErr = rerr
			default:
				want = append(want, Checked{Report: rep, Replay: rp})
			}
		}
	}
	got, err := CheckMany(ctx, st, nil, jobs)
	if (err == nil) != (firstErr == nil) {
		rt.Fatalf("%s: CheckMany error %v, one run at a time %v", what, err, firstErr)
	}
	if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		rt.Fatalf("%s: CheckMany\n%+v\none run at a time\n%+v", what, got, want)
	}
}

// evidenceRows names, table by table, the rows whose loss verify must
// find, and the run each belongs to: every event, the latest checkpoint,
// every intent, outbox row, attempt, receipt and grant, and the run's own
// row.
var evidenceRows = map[string]struct{ where, run string }{
	"runs":        {"true", "run_id"},
	"events":      {"true", "run_id"},
	"checkpoints": {"n = (SELECT max(n) FROM checkpoints c WHERE c.run_id = checkpoints.run_id)", "run_id"},
	"intents":     {"true", "run_id"},
	"outbox":      {"true", "run_id"},
	"attempts":    {"true", "(SELECT run_id FROM intents i WHERE i.intent_id = attempts.intent_id)"},
	"receipts":    {"true", "run_id"},
	"approvals":   {"true", "run_id"},
}

// Any one row of a finished run's evidence removed behind the store's
// back is found (or the run cannot be read), verify's slow oracle and
// CheckMany agree, and the other run verifies as before.
func TestAnyRowOfEvidenceRemovedIsFound(t *testing.T) {
	base := recorded(t)
	type row struct{ table, key, run string }
	var rows []row
	{
		st := open(t, base, true)
		for table, e := range evidenceRows {
			q := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE %s`, tamperdb.Key(table), e.run, table, e.where)
			rs, err := st.DB().Query(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for rs.Next() {
				r := row{table: table}
				if err := rs.Scan(&r.key, &r.run); err != nil {
					t.Fatal(err)
				}
				rows = append(rows, r)
			}
			rs.Close()
		}
		st.Close()
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.table+"/"+a.key, b.table+"/"+b.key) })
	dir := t.TempDir()
	found := map[string]int{}
	// Every row, not a draw of them: a finished record of two runs has a
	// few dozen.
	for n, r := range rows {
		what := fmt.Sprintf("%s[%s] of run %s removed", r.table, r.key, r.run)
		path := drawCopy(t, dir, n, base)
		if err := removeRow(path, r.table, r.key); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		ro, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(ctx, ro, nil, r.run)
		switch {
		case err != nil:
			found["(unreadable)"]++
		case rep.OK():
			t.Errorf("%s: verify finds nothing", what)
		default:
			found[rep.Findings[0].Check]++
		}
		other := map[string]string{"small": "large", "large": "small"}[r.run]
		if orep, err := Run(ctx, ro, nil, other); err != nil || !orep.OK() {
			t.Errorf("%s: the other run %s: %v %+v", what, other, err, orep)
		}
		checkedAlike(t, ro, wf, []string{"small", "large"}, what)
		ro.Close()
		removeDraw(path)
	}
	t.Logf("%d rows removed one at a time; the first finding of each: %v", len(rows), found)
}

// removeRow removes one row of the database at path (tamperdb.Remove) and
// closes the store.
func removeRow(path, table, key string) error {
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := tamperdb.Remove(st.DB(), table, key); err != nil {
		return err
	}
	return st.Close()
}
