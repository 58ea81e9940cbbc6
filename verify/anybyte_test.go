package verify

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"pgregory.net/rapid"
)

// evidenceCells lists the columns a finished run's evidence lives in: the
// accepted events and their chain, the latest checkpoint, the intents, the
// receipts and the approvals, each named by the table, a key that finds
// its row, and which of the table's rows are evidence. A run's earlier
// checkpoints are history that nothing reads (a run resumes from its
// latest, and replay starts from the events), so verify leaves them alone.
// An intent's content_digest column is left out too: the digest of what
// the adapter sends is recorded nowhere else once the effect has closed
// (its open effect in a checkpoint carries it until then), and the store
// reads it only to tell a reused key's refusal as a conflict rather than
// a repeat; the key itself is unique either way.
var evidenceCells = []struct {
	table, key, where string
	cols              []string
}{
	{"events", "run_id || '/' || seq", "true", []string{"body", "digest", "prev_hash", "chain_hash", "kind"}},
	{"checkpoints", "run_id || '/' || n", "n = (SELECT max(n) FROM checkpoints c WHERE c.run_id = checkpoints.run_id)", []string{"body", "digest"}},
	{"intents", "intent_id", "true", []string{"body", "digest", "idempotency_key", "effect_type"}},
	{"receipts", "intent_id", "true", []string{"body", "digest", "outcome"}},
	{"approvals", "approval_id", "true", []string{"body", "digest", "request_digest", "status"}},
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
			q := fmt.Sprintf(`SELECT %s, run_id, typeof(%s), CAST(%s AS BLOB) FROM %s WHERE %s ORDER BY 1`, e.key, col, col, e.table, e.where)
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
// are drawn both as stored (packed) and as their body's own text, so a
// changed byte lands in the packed form and in the document alike.
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
	bases := []string{packedBase, textBase}
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
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		which := rapid.IntRange(0, 1).Draw(rt, "checkpoints as text")
		// A column first, then one of its cells: the events' many rows
		// would otherwise take most draws.
		col := rapid.SampledFrom(columns[which]).Draw(rt, "column")
		c := rapid.SampledFrom(col).Draw(rt, "cell")
		pos := rapid.IntRange(0, len(c.val)-1).Draw(rt, "byte")
		delta := byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
		val := append([]byte(nil), c.val...)
		val[pos] ^= delta

		path := filepath.Join(dir, fmt.Sprintf("draw%d.db", draws))
		defer func() {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(path + suffix)
			}
		}()
		copyFile(t, bases[which], path)
		var arg any = val
		if c.typ == "text" {
			arg = string(val)
		}
		{
			// As tamper does, dropping the append-only triggers first, but
			// closing the store at once: a draw leaves no file open.
			st, err := sqlite.Open(ctx, path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, trig := range []string{"events", "receipts", "intents", "checkpoints"} {
				if _, err := st.DB().Exec("DROP TRIGGER IF EXISTS " + trig + "_no_update"); err != nil {
					t.Fatal(err)
				}
			}
			q := fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s = ?`, c.table, c.col, evidenceKey(c.table))
			res, err := st.DB().Exec(q, arg, c.key)
			if err != nil {
				// A constraint of the schema refuses the value (a status
				// outside its CHECK): nothing to find.
				st.Close()
				rt.Skipf("%s: %v", c, err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("%s: %d rows changed", c, n)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		}

		st, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		other := "large"
		if c.run == "large" {
			other = "small"
		}
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
		orep, err := Run(ctx, st, nil, other)
		if err != nil || !orep.OK() {
			rt.Fatalf("%s byte %d ^%#x: the other run %s: %v %+v", c, pos, delta, other, err, orep)
		}
	})
	t.Logf("%d draws; the first finding of each: %v", draws, found)
}

// evidenceKey is the key expression of evidenceCells for table.
func evidenceKey(table string) string {
	for _, e := range evidenceCells {
		if e.table == table {
			return e.key
		}
	}
	panic("no evidence table " + table)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
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
