// Package httpwire defines flrh-effect-http/1, the small HTTP protocol the
// flrh HTTP adapter speaks and the sandbox destination answers: how an
// effect request is encoded and bound to its idempotency key and content
// digest, what a destination's result, lookup answer and problem look like,
// and how an answer is classified.
//
// Everything here is pure: values in, values out, no I/O. The adapter and the
// sandbox share these functions so that the two ends cannot drift apart.
//
// A mutation is one POST to the destination's base URL whose body is the
// canonical flrh-cjson/1 encoding of a [Request]. It carries two headers:
//
//	Idempotency-Key: effect:4f1c…          the intent's idempotency key
//	Content-Digest: sha-256=:<base64>:     RFC 9530, over the body bytes
//
// Because the body is canonical, its digest ("sha256:<hex>", see
// [ContentDigest]) names exactly the content the key is bound to: the same
// key with the same content is a replay and answers the original [Result];
// the same key with different content is a [CodeKeyConflict] problem, never
// the old result. A lookup is GET <base>/<path-escaped key>, optionally with
// ?content_digest=…, and answers a [LookupAnswer].
//
// Request, Result, LookupAnswer and Problem each name their kind and the
// protocol version in the object itself, so every digest over them is domain
// separated.
package httpwire
