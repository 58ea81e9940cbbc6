package logic

import "io"

// Results is what a materialization leaves for rendering its relations:
// the rows and the symbol table, without the hash sets, indexes, rounds
// and base supports that queries and updates need. A shell that evaluates
// once and writes every output keeps only this, which lowers its peak
// memory: the output sort then allocates after those structures are free.
type Results struct {
	m *Materialization // rows and symbols only; never consumed
}

// Results consumes m and returns its relations for rendering. Like
// [Materialization.Apply], it leaves m answering every later call with
// MATERIALIZATION_CONSUMED (Clone first to keep it); [Materialization.Stats]
// still reports the evaluation.
func (m *Materialization) Results() (*Results, error) {
	if m.consumed {
		return nil, errConsumed()
	}
	r := &Materialization{c: m.c, syms: m.syms, tables: m.tables, stats: m.stats, time: m.time}
	for _, tb := range m.tables {
		// Rendering reads rows and liveness only.
		tb.set = rowSet{}
		clear(tb.idx)
		tb.round = rounds{}
	}
	m.consumed = true
	m.tables, m.base, m.ledger, m.byFact, m.symID = nil, nil, nil, nil, nil
	return &Results{m: r}, nil
}

// Program returns the compiled program the results belong to.
func (r *Results) Program() *Compiled { return r.m.c }

// WriteFacts is [Materialization.WriteFacts] on the results.
func (r *Results) WriteFacts(rel string, neg bool) ([]byte, error) { return r.m.WriteFacts(rel, neg) }

// WriteFactsTo is [Materialization.WriteFactsTo] on the results.
func (r *Results) WriteFactsTo(w io.Writer, rel string, neg bool) (int64, error) {
	return r.m.WriteFactsTo(w, rel, neg)
}
