// Package idtoken verifies identity tokens: JSON Web Tokens (RFC 7519)
// that an identity provider signed (JWS compact serialization, RFC 7515)
// with a key it publishes in a JSON Web Key Set (RFC 7517).
//
// It is pure: ParseKeySet takes the key set's bytes, Verifier.Verify a
// token, a key set and the time to judge it at. Fetching the key set,
// refreshing it when the provider rotates its keys, and mapping a token's
// claims to a caller are the server's.
//
// What it accepts is deliberately narrow, after RFC 8725 (JWT best
// current practices):
//
//   - Only public-key signatures: RS256/384/512, PS256/384/512,
//     ES256/384/512 and EdDSA (Ed25519). "none" and the HMAC algorithms
//     are refused: a server that verifies with a shared secret can also
//     mint tokens, and a key set holds no secrets.
//   - The key comes from the key set the server was given, chosen by the
//     token's "kid" (or, without one, the one key of the algorithm's
//     type); a key must fit the algorithm (type, curve, its own "alg",
//     "use": "sig"). Keys a token carries or points to ("jwk", "jku",
//     "x5u", "x5c") are never used.
//   - Encodings are canonical: unpadded base64url with no stray bits, one
//     JSON object per part with no member named twice, no "crit"
//     extension, "typ" absent or JWT or at+jwt. A token therefore has one
//     meaning, whatever parser reads it next.
//   - The claims are checked at the instant given: "iss" is the provider,
//     "aud" holds the audience, "exp" is required and not passed, "nbf"
//     and "iat" not in the future, each with the leeway the verifier
//     allows for clocks apart; a verifier may also bound a token's
//     lifetime.
//
// Every refusal is an *Error whose Reason says which check failed.
package idtoken
