//go:build race

package frontier

// raceBuild: this test binary runs under the race detector, which drops a
// quarter of what is put into a sync.Pool, so counts of allocations that
// pooled buffers keep down do not hold there.
const raceBuild = true
