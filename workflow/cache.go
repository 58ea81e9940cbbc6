package workflow

import (
	"sync"

	"flrh.dev/flrh/internal/unchanged"
	"flrh.dev/flrh/logic"
)

// matCache memoizes, by the bytes of a state document, the L
// materialization of its live supports and the decoded state Decide
// encoded it from. The key is the document itself rather than its
// digest: hashing it for the map and comparing it on a hit costs a
// fraction of a SHA-256 over the whole state, which grows with the run,
// twice a tick (once to store, once to find). It only saves work: a miss evaluates the supports from
// scratch and decodes the document, which is what a replay without the
// cache does, and gives the same materialization and the same state.
// A cached materialization is never modified: a tick that finds the
// state already taken gets a clone. The tick that takes the state takes
// the materialization with it, since the next input of a run is decided
// from the state the tick before wrote, once.
type matCache struct {
	mu sync.Mutex
	m  map[string]cached // by value: an entry is not an allocation of its own
	// spares are the update scratches of the materializations the cache
	// dropped when it started over, for fresh clones (see spare).
	spares []logic.Scratch
	// husks are materializations of runs that are over, which no tick
	// holds and nothing reads any more, for a run's first tick to copy the
	// empty materialization into (see husk).
	husks []*logic.Materialization
}

// maxHusks bounds the husks the cache keeps: about as many as runs start
// at once. huskMaxFootprint bounds the storage of one it keeps, which a
// copy of the empty materialization keeps for its own rows.
const (
	maxHusks         = 32
	huskMaxFootprint = 64 << 10
)

type cached struct {
	key string // the document: the map's key, kept to be handed back without copying it again
	mat *logic.Materialization
	st  *state // nil once taken
}

// maxCached bounds the cache; when full it starts over.
const maxCached = 512

func newMatCache() *matCache { return &matCache{m: map[string]cached{}} }

func (c *matCache) get(key string) *logic.Materialization {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e.mat == nil {
		return nil
	}
	// Cloned under the lock: startOver may take the scratch of the
	// materialization once the entry is dropped.
	return e.mat.Clone()
}

// startOver empties the full cache, keeping the scratches of the
// materializations it drops (see keepScratch). The caller holds the lock.
func (c *matCache) startOver() {
	for _, e := range c.m { //flrh:orderfree every scratch is cleared: which one a clone gets changes nothing it computes
		if len(c.spares) >= maxCached {
			break
		}
		c.keepScratch(e.mat)
	}
	c.m = map[string]cached{}
}

// keepScratch keeps the scratch of a materialization the cache drops, if
// there is room: no tick holds it (a cached one is only cloned, under the
// lock, or taken out of the cache), and nothing will update it. The caller
// holds the lock.
func (c *matCache) keepScratch(m *logic.Materialization) {
	if m == nil || len(c.spares) >= maxCached {
		return
	}
	if s := m.TakeScratch(); s != (logic.Scratch{}) {
		c.spares = append(c.spares, s)
	}
}

// drop keeps the materialization of a run that is over, which the tick
// deciding it owns and will not cache, for a run's first tick to copy the
// empty materialization into (see husk), or else its scratch (see
// keepScratch). The tick hands out nothing that points into it: its
// effects, trace and state are copied out of what it answered.
func (c *matCache) drop(m *logic.Materialization) {
	if c == nil || m == nil {
		return
	}
	small := m.Footprint() <= huskMaxFootprint
	c.mu.Lock()
	if small && len(c.husks) < maxHusks {
		c.husks = append(c.husks, m)
	} else {
		c.keepScratch(m)
	}
	c.mu.Unlock()
}

// husk returns a materialization drop kept, for the caller to own, or nil.
func (c *matCache) husk() *logic.Materialization {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.husks)
	if n == 0 {
		return nil
	}
	h := c.husks[n-1]
	c.husks[n-1] = nil
	c.husks = c.husks[:n-1]
	return h
}

// spare gives a fresh clone one of the scratches startOver kept, for its
// first update to use instead of making its own.
func (c *matCache) spare(m *logic.Materialization) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if n := len(c.spares); n > 0 && m.UseScratch(c.spares[n-1]) {
		c.spares[n-1] = logic.Scratch{}
		c.spares = c.spares[:n-1]
	}
	c.mu.Unlock()
}

// take returns the decoded state and the materialization cached for
// the document doc, both for the caller to own, while the state is there:
// the tick that wrote the document left it and no tick has taken it
// since, the way a run goes from one input to the next. The entry is then
// empty, so deciding the same document again evaluates it from its
// supports. It returns the document's key too (a copy of doc), or "" with
// no state there, and nil, nil.
func (c *matCache) take(doc []byte) (string, *state, *logic.Materialization) {
	if c == nil {
		return "", nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[string(doc)]
	if e.st == nil {
		return "", nil, nil
	}
	delete(c.m, e.key)
	return e.key, e.st, e.mat
}

// putBack returns a materialization a tick took and did not consume (it
// refused the input before L) to the entry of the document it came from.
func (c *matCache) putBack(key string, m *logic.Materialization) {
	if c == nil || m == nil {
		return
	}
	c.mu.Lock()
	if e, ok := c.m[key]; !ok {
		if len(c.m) >= maxCached {
			c.startOver()
		}
		c.m[key] = cached{key: key, mat: m}
	} else if e.mat == nil {
		e.mat = m
		c.m[key] = e
	}
	c.mu.Unlock()
}

// put caches the materialization and the state of the document doc
// (copied: the caller's bytes may change). st must be what decoding that
// document gives (see state.normalize) and must not be changed
// afterwards.
func (c *matCache) put(doc []byte, m *logic.Materialization, st *state) {
	if c == nil || (m == nil && st == nil) {
		return
	}
	c.putKey(string(doc), m, st)
}

// putResult is put of a document Decide returns as Result.State, keyed
// by the document's own bytes rather than a copy of them: nobody changes
// a Result's State (see Result), and the entry holds the bytes as its
// key for as long as it is cached (decision 1725).
func (c *matCache) putResult(doc []byte, m *logic.Materialization, st *state) {
	if c == nil || (m == nil && st == nil) {
		return
	}
	c.putKey(unchanged.String(doc), m, st)
}

// putKey is put under key, the document's bytes as a string. It hashes
// the document once, assigning without looking for an entry first: a
// tick's new document is almost never there (the tick took the one it
// decided from), and when it is, as when a state is decided again, the
// entry's materialization is replaced and left to the collector rather
// than its scratch kept, which changes nothing it computes (decision
// 0934).
func (c *matCache) putKey(key string, m *logic.Materialization, st *state) {
	c.mu.Lock()
	if len(c.m) >= maxCached {
		c.startOver()
	}
	c.m[key] = cached{key: key, mat: m, st: st}
	c.mu.Unlock()
}

// materialize returns a materialization of the state's live supports that
// the caller owns: the one taken with the state, a clone of a cached one,
// or a fresh evaluation. key is the state document.
func (w *Workflow) materialize(key string, st *state, taken *logic.Materialization) (*logic.Materialization, error) {
	if taken != nil {
		return taken, nil
	}
	if m := w.cache.get(key); m != nil {
		w.cache.spare(m)
		return m, nil
	}
	if len(st.Supports) == 0 && st.Time == 0 && w.empty != nil {
		// What rebuild(nil, 0) gives, which depends only on the bundle:
		// copied into the storage of a run that is over, when there is one.
		if h := w.cache.husk(); h != nil && w.empty.CloneInto(h) {
			return h, nil
		}
		m := w.empty.Clone()
		w.cache.spare(m)
		return m, nil
	}
	return w.rebuild(st.Supports, st.Time)
}

// stateOf returns the state document decoded, from the cache when the
// tick that wrote the document left it there (with its materialization,
// if cached), and the document's key in the cache.
func (w *Workflow) stateOf(stateJSON []byte) (*state, string, *logic.Materialization, error) {
	if key, st, mat := w.cache.take(stateJSON); st != nil {
		if verifyCachedState != nil {
			if err := verifyCachedState(w, stateJSON, st); err != nil {
				return nil, "", nil, err
			}
		}
		return st, key, mat, nil
	}
	st, err := decodeState(stateJSON)
	if err != nil || w.cache == nil {
		return st, "", nil, err
	}
	return st, string(stateJSON), nil, nil
}

// verifyCachedState, when set (by tests), checks a cached state against
// the decoding of its document.
var verifyCachedState func(w *Workflow, stateJSON []byte, st *state) error
