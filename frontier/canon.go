package frontier

import (
	"crypto/sha256"
	"strconv"

	"flrh.dev/flrh/cjson"
)

// This file holds the small flrh-cjson/1 writer the kernel uses for its own
// objects. Every object is written with its keys already in sorted order, so
// the bytes are canonical by construction and no intermediate tree is built;
// tests check each writer against an independent canonicalizer.

// appendString appends s as a JSON string the way flrh-cjson/1 spells it.
func appendString(b []byte, s string) []byte { return cjson.AppendString(b, s) }

// Strings this package writes with cjson.AppendChecked, which skips the
// scan for bytes to escape, are ids, digests, version labels and
// enumerated words, each checked where the value holding it was built (or
// a constant of this package). Every frontier test runs with
// cjson.MustBePlain as the check, which panics if a string that needs
// escaping reaches it.

// appendKey appends a member name and its colon, preceded by a comma unless
// the member opens its object.
func appendKey(b []byte, key string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

// appendNullableInt writes null for an absent watermark.
func appendNullableInt(b []byte, v int64, ok bool) []byte {
	if !ok {
		return append(b, "null"...)
	}
	return appendInt(b, v)
}

func appendStrings(b []byte, ss []string) []byte { return cjson.AppendStringList(b, ss) }

// appendPlains is appendStrings for strings cjson.AppendChecked may write.
func appendPlains(b []byte, ss []string) []byte { return cjson.AppendCheckedList(b, ss) }

// digestOf returns the sha256:<hex> form of canonical bytes.
func digestOf(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return digestString(sum)
}

func digestString(sum [32]byte) string {
	var out [7 + 64]byte
	copy(out[:], "sha256:")
	cjson.HexSum((*[64]byte)(out[7:]), &sum)
	return string(out[:])
}

// writeDigest writes sha256:<hex of sum> in out, digestLen bytes.
func writeDigest(out []byte, sum *[32]byte) {
	copy(out, "sha256:")
	cjson.HexSum((*[64]byte)(out[len("sha256:"):digestLen]), sum)
}

// hexOf strips the "sha256:" prefix of a digest.
func hexOf(digest string) string { return digest[len("sha256:"):] }

// validDigest reports whether s is sha256:<64 lowercase hex>.
func validDigest(s string) bool {
	if len(s) != 71 || s[:7] != "sha256:" {
		return false
	}
	for i := 7; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
