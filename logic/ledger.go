package logic

// ledgerEntry is one named base support.
type ledgerEntry struct {
	fact    Fact
	content string
}

// baseIDs lists the named supports of a base tuple, sorted.
func (m *Materialization) baseIDs(t int, tup []int64) []string {
	return nil
}
