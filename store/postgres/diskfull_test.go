package postgres

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"flrh.dev/flrh/internal/smallfs"
	"flrh.dev/flrh/store/storetest"
)

// The disk under the store's tables fills for real (a tablespace on a
// small tmpfs, the kernel's ENOSPC): storetest.DiskFull's promises hold,
// and the server's report is SQLSTATE 53100, which the store does not
// retry (TestErrorMapping).
func TestDiskFullLeavesNothingHalfWritten(t *testing.T) {
	adm := admin(t)
	var dataDir string
	must(t, adm.QueryRow(ctx, `SHOW data_directory`).Scan(&dataDir))
	fi, err := os.Stat(dataDir)
	if err != nil {
		t.Skipf("the server's data directory %s is not on this machine (%v): a full disk is tested against a local server", dataDir, err)
	}
	owner := fi.Sys().(*syscall.Stat_t)
	uid, gid := int(owner.Uid), int(owner.Gid)
	dir := smallfs.Mount(t, 8<<20, uid, gid)

	var b [6]byte
	rand.Read(b[:])
	ts := pgx.Identifier{"flrh_full_" + hex.EncodeToString(b[:])}.Sanitize()
	if _, err := adm.Exec(ctx, `CREATE TABLESPACE `+ts+` LOCATION '`+dir+`'`); err != nil {
		t.Skipf("cannot make a tablespace on the small filesystem (%v): a full disk is tested with a superuser on a local server", err)
	}
	t.Cleanup(func() {
		if _, err := adm.Exec(ctx, `DROP TABLESPACE IF EXISTS `+ts); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})

	schema := freshSchema(t)
	s := openNamed(t, schema, "flrh-full-"+schema, Options{})
	storetest.DiskFull(t, s, storetest.DiskFullDisk{
		// Every table and index of the store's schema onto the small
		// filesystem, which is then cut to what they use and a little more.
		Cut: func() {
			rows, err := adm.Query(ctx, `SELECT format('ALTER TABLE %I.%I SET TABLESPACE `+ts+`', schemaname, tablename) FROM pg_tables WHERE schemaname = $1
UNION ALL SELECT format('ALTER INDEX %I.%I SET TABLESPACE `+ts+`', schemaname, indexname) FROM pg_indexes WHERE schemaname = $1`, schema)
			must(t, err)
			moves, err := pgx.CollectRows(rows, pgx.RowTo[string])
			must(t, err)
			if len(moves) < 10 {
				t.Fatalf("%d tables and indexes to move; the schema was not found", len(moves))
			}
			for _, q := range moves {
				_, err := adm.Exec(ctx, q)
				must(t, err)
			}
			var fs syscall.Statfs_t
			must(t, syscall.Statfs(dir, &fs))
			smallfs.Resize(t, dir, int64(fs.Blocks-fs.Bfree)*fs.Bsize+256<<10, uid, gid)
		},
		Free: func() { smallfs.Resize(t, dir, 64<<20, uid, gid) },
		Cause: func(err error) bool {
			var pe *pgconn.PgError
			return errors.As(err, &pe) && pe.Code == "53100"
		},
	})
}
