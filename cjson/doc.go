// Package cjson implements flrh-cjson/1, the canonical JSON profile every
// flrh digest is computed over.
//
// Two processes that agree on a value must agree on its bytes, or replay,
// approvals bound to an action digest and hash chains all break. The profile
// therefore admits one spelling per value:
//
//   - UTF-8 without BOM; every string and object key already in Unicode NFC
//     (non-NFC input is rejected, never silently normalized);
//   - object keys are ASCII, unique, and sorted; no insignificant whitespace;
//   - numbers are signed 64-bit integers in shortest decimal form; floats,
//     exponents, NaN, Infinity and negative zero are rejected;
//   - null is distinct from an absent member;
//   - arrays keep their order, except the set-like arrays named per root
//     object kind (for example /preconditions of an EffectProposal), which
//     are sorted by each element's canonical bytes with duplicates rejected;
//   - containers nest at most [MaxDepth] deep.
//
// Strings are escaped the way the reference encoder does: the quotation mark,
// the reverse solidus and the control characters U+0000–U+001F are escaped
// (with \b \f \n \r \t where they exist and \u00xx otherwise); every other
// character, including non-ASCII ones, is written as its UTF-8 bytes.
//
// A digest is "sha256:" followed by the lowercase hexadecimal SHA-256 of the
// canonical bytes. Domain separation is the caller's job: every preimage in
// flrh names its kind and version as members of the hashed object.
//
// Every failure is an [*Error] carrying a stable [Code] and the JSON Pointer
// of the offending value, so callers can report exactly what and where.
//
// NFC verdicts use golang.org/x/text/unicode/norm. The profile pins Unicode
// 15.1.0 and treats code points unassigned at the pin as inert starters; the
// package's tests fail if the normalization tables move past 15.x so that an
// upgrade is reviewed against that rule rather than changing verdicts silently.
package cjson
