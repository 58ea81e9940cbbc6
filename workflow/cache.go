package workflow

import (
	"sync"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
)

// matCache memoizes the L materialization of a state's live supports, by
// the digest of the state document. It only saves work: a miss evaluates
// the supports from scratch, which is what a replay without the cache
// does, and gives the same materialization. Entries are never modified;
// users get clones.
type matCache struct {
	mu sync.Mutex
	m  map[string]*logic.Materialization
}

// maxCached bounds the cache; when full it starts over.
const maxCached = 512

func newMatCache() *matCache { return &matCache{m: map[string]*logic.Materialization{}} }

func (c *matCache) get(key string) *logic.Materialization {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	m := c.m[key]
	c.mu.Unlock()
	if m == nil {
		return nil
	}
	return m.Clone()
}

func (c *matCache) put(key string, m *logic.Materialization) {
	if c == nil || m == nil {
		return
	}
	c.mu.Lock()
	if len(c.m) >= maxCached {
		c.m = map[string]*logic.Materialization{}
	}
	c.m[key] = m
	c.mu.Unlock()
}

// materialize returns a materialization of the state's live supports that
// the caller owns: a clone of the cached one, or a fresh evaluation.
func (w *Workflow) materialize(stateJSON []byte, st *state) (*logic.Materialization, error) {
	if m := w.cache.get(cjson.Digest(stateJSON)); m != nil {
		return m, nil
	}
	return w.rebuild(st.Supports, st.Time)
}
