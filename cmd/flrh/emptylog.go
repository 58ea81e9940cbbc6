package main

import (
	"context"
	"fmt"
	"io"

	"flrh.dev/flrh/store"
)

// logEmptied is what emptying the store's log after a prune or a reseal
// did, for stores that keep one (store.LogEmptier, SQLite): pruning and
// resealing zero what they remove, and once the log holding the earlier
// pages is emptied, neither file holds it. Failing to empty it fails
// nothing: what was removed stays in the log until its next checkpoint,
// or flrh store compact.
type logEmptied struct {
	Emptied bool   `json:"emptied"`
	Error   string `json:"error,omitempty"`
}

// emptyStoreLog empties st's log when it keeps one; nil when it does not.
func emptyStoreLog(ctx context.Context, st store.Store) *logEmptied {
	e, ok := store.As[store.LogEmptier](st)
	if !ok {
		return nil
	}
	if err := e.EmptyLog(ctx); err != nil {
		return &logEmptied{Error: err.Error()}
	}
	return &logEmptied{Emptied: true}
}

func (l *logEmptied) print(w io.Writer, what string) {
	switch {
	case l == nil:
	case l.Emptied:
		fmt.Fprintf(w, "log emptied: the store's files keep no byte of the %s\n", what)
	default:
		fmt.Fprintf(w, "log not emptied (%s): the %s stay in the store's log until its next checkpoint; run again, or flrh store compact\n", l.Error, what)
	}
}
