// Package sqlitedriver compares the two SQLite drivers flrh could embed, on
// the shape of transaction the store commits every tick: BEGIN IMMEDIATE,
// a fenced read of the run header, a few inserts (event, intent, outbox,
// checkpoint), an update of the header, COMMIT — with WAL and
// synchronous=FULL, so each commit waits for one fsync.
//
//	cd bench && go test ./sqlitedriver -bench . -count 5 | tee out.txt && benchstat out.txt
package sqlitedriver

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3" // cgo driver, name "sqlite3"
	_ "modernc.org/sqlite"          // pure-Go driver, name "sqlite"
)

const schema = `
CREATE TABLE runs (run_id TEXT PRIMARY KEY, head INTEGER NOT NULL, gen INTEGER NOT NULL) STRICT;
CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (run_id, seq)) STRICT, WITHOUT ROWID;
CREATE TABLE intents (intent_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, body BLOB NOT NULL) STRICT;
CREATE TABLE outbox (intent_id TEXT PRIMARY KEY, status TEXT NOT NULL) STRICT;
CREATE TABLE checkpoints (run_id TEXT NOT NULL, n INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (run_id, n)) STRICT, WITHOUT ROWID;
INSERT INTO runs VALUES ('r', 0, 1);
`

func open(b *testing.B, driver string) *sql.DB {
	path := filepath.Join(b.TempDir(), "bench.db")
	var dsn string
	switch driver {
	case "sqlite":
		dsn = "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"
	case "sqlite3":
		dsn = "file:" + path + "?_journal_mode=WAL&_synchronous=FULL&_foreign_keys=1&_txlock=immediate"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		b.Fatal(err)
	}
	var mode string
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	if mode != "wal" {
		b.Fatalf("%s: journal_mode %s", driver, mode)
	}
	return db
}

var body = []byte(`{"kind":"control","record":"` + strings.Repeat("x", 600) + `"}`)

func tick(db *sql.DB, i int) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var head, gen int64
	if err := tx.QueryRow(`SELECT head, gen FROM runs WHERE run_id = 'r'`).Scan(&head, &gen); err != nil {
		return err
	}
	if gen != 1 {
		return fmt.Errorf("fenced")
	}
	for k := 0; k < 4; k++ {
		head++
		if _, err := tx.Exec(`INSERT INTO events VALUES ('r', ?, ?, 'sha256:x')`, head, body); err != nil {
			return err
		}
	}
	id := fmt.Sprintf("i%d", i)
	if _, err := tx.Exec(`INSERT INTO intents VALUES (?, 'r', ?)`, id, body); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO outbox VALUES (?, 'pending')`, id); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO checkpoints VALUES ('r', ?, ?)`, i, body); err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE runs SET head = ? WHERE run_id = 'r'`, head); err != nil {
		return err
	}
	return tx.Commit()
}

func bench(b *testing.B, driver string) {
	db := open(b, driver)
	defer db.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tick(db, i); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTickModernc(b *testing.B) { bench(b, "sqlite") }
func BenchmarkTickMattn(b *testing.B)   { bench(b, "sqlite3") }

// The same transaction without the fsync, to separate driver CPU from disk.
func benchNoSync(b *testing.B, driver string) {
	db := open(b, driver)
	defer db.Close()
	if _, err := db.Exec("PRAGMA synchronous = OFF"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tick(db, i); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTickNoSyncModernc(b *testing.B) { benchNoSync(b, "sqlite") }
func BenchmarkTickNoSyncMattn(b *testing.B)   { benchNoSync(b, "sqlite3") }
