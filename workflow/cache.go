package workflow

import (
	"sync"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
)

// matCache memoizes, by the digest of a state document, the L
// materialization of its live supports and the decoded state Decide
// encoded it from. It only saves work: a miss evaluates the supports from
// scratch and decodes the document, which is what a replay without the
// cache does, and gives the same materialization and the same state.
// Materializations are never modified; users get clones. A state is
// handed out once (Decide changes it as it goes), then the entry keeps
// only the materialization.
type matCache struct {
	mu sync.Mutex
	m  map[string]*cached
}

type cached struct {
	mat *logic.Materialization
	st  *state // nil once taken
}

// maxCached bounds the cache; when full it starts over.
const maxCached = 512

func newMatCache() *matCache { return &matCache{m: map[string]*cached{}} }

func (c *matCache) get(key string) *logic.Materialization {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	e := c.m[key]
	c.mu.Unlock()
	if e == nil || e.mat == nil {
		return nil
	}
	return e.mat.Clone()
}

// takeState returns the decoded state cached under key, which the caller
// then owns, or nil.
func (c *matCache) takeState(key string) *state {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e == nil {
		return nil
	}
	st := e.st
	e.st = nil
	return st
}

// put caches the materialization and the state of the document whose
// digest is key. st must be what decoding that document gives (see
// state.normalize) and must not be changed afterwards.
func (c *matCache) put(key string, m *logic.Materialization, st *state) {
	if c == nil || (m == nil && st == nil) {
		return
	}
	c.mu.Lock()
	if len(c.m) >= maxCached {
		c.m = map[string]*cached{}
	}
	c.m[key] = &cached{mat: m, st: st}
	c.mu.Unlock()
}

// materialize returns a materialization of the state's live supports that
// the caller owns: a clone of the cached one, or a fresh evaluation. key
// is the digest of the state document.
func (w *Workflow) materialize(key string, st *state) (*logic.Materialization, error) {
	if m := w.cache.get(key); m != nil {
		return m, nil
	}
	if len(st.Supports) == 0 && st.Time == 0 && w.empty != nil {
		// What rebuild(nil, 0) gives, which depends only on the bundle.
		return w.empty.Clone(), nil
	}
	return w.rebuild(st.Supports, st.Time)
}

// stateOf returns the state document decoded, from the cache when the
// tick that wrote the document left it there, and the document's digest.
func (w *Workflow) stateOf(stateJSON []byte) (*state, string, error) {
	key := cjson.Digest(stateJSON)
	if st := w.cache.takeState(key); st != nil {
		if verifyCachedState != nil {
			if err := verifyCachedState(w, stateJSON, st); err != nil {
				return nil, "", err
			}
		}
		return st, key, nil
	}
	st, err := decodeState(stateJSON)
	return st, key, err
}

// verifyCachedState, when set (by tests), checks a cached state against
// the decoding of its document.
var verifyCachedState func(w *Workflow, stateJSON []byte, st *state) error
