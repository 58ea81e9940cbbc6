//go:build !linux

package main

// releaseStartPages is a no-op where the executable's start-up pages
// cannot be released (see startpages_linux.go).
func releaseStartPages() {}
