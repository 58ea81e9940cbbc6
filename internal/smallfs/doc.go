// Package smallfs gives a test a real filesystem of a few hundred
// kilobytes, so that a store can be made to run out of disk space for
// real: the kernel's ENOSPC, not an injected error.
//
// The filesystem is a tmpfs mounted over a fresh directory, which needs
// root (CAP_SYS_ADMIN). Where that is not allowed the test is skipped with
// a message that says so. Resize grows or shrinks it in place, so a test
// can free space without moving anything.
package smallfs
