package workflow

import (
	"bytes"

	"flrh.dev/flrh/kernel"
)

// firstState is a run's initial state document, and its kernel snapshot's
// bytes, cut around the run id. The run id is all in them that depends on
// the run; the rest depends only on the loaded workflow, so it is written
// once at Compile and a run's Init joins the pieces with its id instead of
// building and encoding both from scratch (TestInitFromPiecesIsFromScratch
// holds the two ways to the same bytes and state).
type firstState struct {
	doc  [][]byte // the document: the run id goes between each two pieces
	snap [][]byte // the snapshot the same way
	size int      // len of the pieces of doc together
	ssz  int      // and of snap
}

// cutFirst writes the initial state from scratch for two run ids of one
// byte that differ, and cuts both encodings where they differ: at each
// such byte the id was written, since an id needs no escaping in a
// string. A third, longer id joined from the pieces must give what
// writing it from scratch gives, or there are no pieces (nil) and Init
// writes every run's state from scratch.
func (w *Workflow) cutFirst() *firstState {
	docA, snapA, okA := w.initialFresh("x")
	docB, snapB, okB := w.initialFresh("y")
	if !okA || !okB {
		return nil
	}
	f := &firstState{doc: cutAt(docA, docB), snap: cutAt(snapA, snapB)}
	if f.doc == nil || f.snap == nil {
		return nil
	}
	for _, p := range f.doc {
		f.size += len(p)
	}
	for _, p := range f.snap {
		f.ssz += len(p)
	}
	const check = "run-0.check_Z:9-" // longer than one byte, with every kind of id byte
	doc, snap, ok := w.initialFresh(check)
	if !ok || !bytes.Equal(doc, f.join(f.doc, f.size, check)) || !bytes.Equal(snap, f.join(f.snap, f.ssz, check)) {
		return nil
	}
	return f
}

// cutAt returns a's pieces between the bytes where a and b differ, each
// of them an 'x' in a and a 'y' in b; nil if a and b differ otherwise or
// nowhere.
func cutAt(a, b []byte) [][]byte {
	if len(a) != len(b) {
		return nil
	}
	var pieces [][]byte
	from := 0
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		if a[i] != 'x' || b[i] != 'y' {
			return nil
		}
		pieces = append(pieces, bytes.Clone(a[from:i]))
		from = i + 1
	}
	if pieces == nil {
		return nil
	}
	return append(pieces, bytes.Clone(a[from:]))
}

// join writes the pieces with id between each two, into a slice of
// exactly their length.
func (f *firstState) join(pieces [][]byte, size int, id string) []byte {
	b := make([]byte, 0, size+(len(pieces)-1)*len(id))
	for i, p := range pieces {
		if i > 0 {
			b = append(b, id...)
		}
		b = append(b, p...)
	}
	return b
}

// initialFresh is a run's initial state document and its snapshot's
// bytes, written from scratch; false when they are not the bytes a step
// takes as known.
func (w *Workflow) initialFresh(runID string) ([]byte, []byte, bool) {
	st, err := w.initial(runID)
	if err != nil || !st.kernelBytes || !st.canonSnapshot {
		return nil, nil, false
	}
	doc, err := st.encode()
	if err != nil {
		return nil, nil, false
	}
	return doc, st.Snapshot, true
}

// fromPieces is what initial and encode give for runID, which must be an
// id: the state (for the cache, and the run's first tick) and its
// document.
func (f *firstState) fromPieces(w *Workflow, runID string) (*state, []byte) {
	snap := kernel.NewSnapshot(w.domain, runID, w.versions)
	st := w.initialState(runID, f.join(f.snap, f.ssz, runID), &snap, true)
	return st, f.join(f.doc, f.size, runID)
}
