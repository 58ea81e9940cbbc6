package testpki

import (
	"crypto/ed25519"
	"crypto/sha256"
)

// ExampleOperator is the examples' operator key, derived from a fixed
// seed so that their committed signatures can be made again and checked.
// Its seed is public: it signs nothing outside the examples and tests.
func ExampleOperator() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("flrh example operator key"))
	return ed25519.NewKeyFromSeed(seed[:])
}
