package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"flrh.dev/flrh/store/sqlite"
)

// readOnlyRig is a directory its caller cannot write, holding a store, and
// the flrh binary run as a user who cannot write it either: the test's own
// user, or, when the test runs as root (whom no permission stops), the
// unprivileged user nobody.
type readOnlyRig struct {
	t   *testing.T
	dir string
	bin string
}

func newReadOnlyRig(t *testing.T, bin string, files map[string]string) *readOnlyRig {
	t.Helper()
	// A directory of its own, reachable by nobody: t.TempDir's are not.
	dir, err := os.MkdirTemp("", "flrh-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.RemoveAll(dir) })
	for name, from := range files {
		copyFile(t, from, filepath.Join(dir, name), 0o444)
	}
	copyFile(t, bin, filepath.Join(dir, "flrh"), 0o555)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	return &readOnlyRig{t: t, dir: dir, bin: filepath.Join(dir, "flrh")}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// run runs flrh against the rig's store, in the rig's directory.
func (r *readOnlyRig) run(args ...string) (string, int) {
	r.t.Helper()
	cmd := exec.Command(r.bin, append(args, "--store=sqlite:"+filepath.Join(r.dir, "flrh.db"))...)
	cmd.Dir = r.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + r.dir}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := exitStatus(r.t, cmd.Run())
	return out.String(), code
}

// A store in a directory nobody may write (an archived copy, a read-only
// mount) is read by every read-only command: SQLite cannot create the
// shared-memory file a WAL reader needs there, so with no log beside it
// the database is read as immutable. A store whose log still holds
// commits cannot be read so, and the command says why instead of reading
// a stale database.
func TestReadOnlyDirectory(t *testing.T) {
	c := newCLIRig(t)
	c.ok("run", "start", "example:refund-agent", "--id", "paid", "--input-json", refundRequest("r-1", 40), c.dest)
	path := strings.TrimPrefix(c.store, "--store=sqlite:")
	if _, err := os.Stat(path + "-shm"); !os.IsNotExist(err) {
		t.Fatalf("a cleanly closed store left its shared-memory file (%v)", err)
	}
	ro := newReadOnlyRig(t, c.bin, map[string]string{"flrh.db": path})
	if out, code := ro.run("verify", "paid"); code != 0 || !strings.Contains(out, "run paid: verified — SUCCEEDED") {
		t.Fatalf("verify in a read-only directory: exit %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{{[]string{"run", "list"}, "paid"}, {[]string{"run", "show", "paid"}, "run paid"}, {[]string{"run", "events", "paid"}, "VERIFIED_COMPLETE"}, {[]string{"replay", "paid"}, "run paid: identical"}} {
		args := tc.args
		if out, code := ro.run(args...); code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("flrh %s in a read-only directory: exit %d:\n%s", strings.Join(args, " "), code, out)
		}
	}
	if entries, err := os.ReadDir(ro.dir); err != nil || len(entries) != 2 {
		t.Errorf("the read-only directory holds %d entries (%v), want the store and the binary", len(entries), err)
	}

	// A copy taken while a writer holds commits in the log, without the
	// shared-memory file.
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.DB().ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`); err != nil {
		t.Fatal(err)
	}
	c.ok("run", "start", "example:refund-agent", "--id", "later", "--input-json", refundRequest("r-2", 30), c.dest)
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no log to copy (%v)", err)
	}
	stale := newReadOnlyRig(t, c.bin, map[string]string{"flrh.db": path, "flrh.db-wal": path + "-wal"})
	out, code := stale.run("verify", "later")
	if code != 1 || !strings.Contains(out, "its directory cannot be written and its write-ahead log") || !strings.Contains(out, "copy it with its -wal file") {
		t.Fatalf("verify of a copy whose log holds commits: exit %d, want 1 and why:\n%s", code, out)
	}
}
