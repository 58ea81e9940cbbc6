//go:build linux && cgo

package startpages

import (
	"os"
	"os/user"
	"runtime"
	"strings"
	"sync"
	"testing"

	_ "runtime/cgo" // links the C library and the loader into the test binary
)

// In a binary that maps the C library and the loader, Libraries plans
// pages of theirs only: each range inside one non-writable, private
// mapping of a file other than the executable. After the release the C
// library still answers (a user lookup through it, threads it starts).
func TestLibrariesReleasesOnlyReadOnlyPagesOfSharedObjects(t *testing.T) {
	before, err := user.Current()
	if err != nil {
		t.Skip("no user lookup here:", err)
	}
	ranges := Libraries()
	if len(ranges) == 0 {
		t.Fatal("nothing planned for the shared objects of a cgo binary")
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	ro := readOnlyMappings(t, func(p string) bool { return strings.HasPrefix(p, "/") && p != exe }, true)
	requireInside(t, ranges, ro, "a shared object")
	p := &Pages{ranges: ranges}
	if n, err := p.Release(); err != nil || n == 0 {
		t.Fatalf("released %d bytes: %v", n, err)
	}
	after, err := user.Current()
	if err != nil || after.Uid != before.Uid || after.Username != before.Username {
		t.Fatalf("after release: %+v, %v; before %+v", after, err, before)
	}
	// New threads come from the C library's pthread_create.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}()
	}
	wg.Wait()
}

// Find and WithLibraries: the extended plan is the executable's and the
// shared objects', and releasing it twice advises the same bytes.
func TestWithLibrariesExtendsThePlan(t *testing.T) {
	p, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	q := p.WithLibraries()
	if len(q.ranges) <= len(p.ranges) {
		t.Fatalf("%d ranges with the libraries, %d without", len(q.ranges), len(p.ranges))
	}
	a, err1 := q.Release()
	b, err2 := q.Release()
	if err1 != nil || err2 != nil || a != b || a == 0 {
		t.Fatalf("releases %d, %d: %v, %v", a, b, err1, err2)
	}
}
