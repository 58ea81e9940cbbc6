package sqlite

import (
	"fmt"
	"strconv"
	"time"
)

// blob is a Scan destination for a BLOB column read into a []byte. Scanning
// into a *[]byte makes database/sql copy the driver's value, because a
// driver may reuse that memory on the next row; this driver (modernc.org/
// sqlite) copies every BLOB out of SQLite into a new slice of its own per
// row and per column, so the second copy is pure cost: on a run's events
// it was as many bytes again as the bodies themselves. blob keeps the
// driver's slice. TestBlobScanMatchesDatabaseSQL holds it to what a
// *[]byte destination reads, row after row, should the driver change.
type blob struct{ b *[]byte }

// Scan implements sql.Scanner. A value that is not a BLOB converts as
// database/sql converts it for a *[]byte.
func (x blob) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		*x.b = v
	case nil:
		*x.b = nil
	case string:
		*x.b = []byte(v)
	case int64:
		*x.b = strconv.AppendInt(nil, v, 10)
	case float64:
		*x.b = strconv.AppendFloat(nil, v, 'g', -1, 64)
	case bool:
		*x.b = strconv.AppendBool(nil, v)
	case time.Time:
		*x.b = []byte(v.Format(time.RFC3339Nano))
	default:
		return fmt.Errorf("unsupported Scan, storing driver.Value type %T into type *[]byte", src)
	}
	return nil
}
