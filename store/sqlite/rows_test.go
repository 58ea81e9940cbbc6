package sqlite

import "database/sql"

// queryRows runs q and returns every row's columns as the driver scanned
// them, for tests that compare tables' contents. A failed query or scan
// fails the test through fatal.
func queryRows(fatal func(...any), q interface {
	Query(string, ...any) (*sql.Rows, error)
}, query string) [][]any {
	rows, err := q.Query(query)
	if err != nil {
		fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		fatal(err)
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		fatal(err)
	}
	return out
}
