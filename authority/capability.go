package authority

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// CapabilityVersion names the capability profile; it is in every signed
// preimage.
const CapabilityVersion = "flrh-capability/1"

// Capability authorizes one class of effects: an effect type, to
// destinations matching a pattern, within scopes and limits, over a
// logical-time window [NotBefore, Expiry). A capability is only ever
// created by an operator key; attenuation narrows it and never widens it.
type Capability struct {
	ID          string `json:"id"`
	EffectType  string `json:"effect_type"`
	Destination string `json:"destination"` // an exact id, or a prefix ending in "*"
	// Scopes the capability may act in; the ticket's scope must be one.
	Scopes []string `json:"scopes"`
	// Limits cap integer parameters: a ticket whose parameter exceeds its
	// limit is not covered (a parameter a limit names must be present).
	Limits    map[string]int64 `json:"limits"`
	NotBefore int64            `json:"not_before"`
	Expiry    int64            `json:"expiry"`
	// Parent is the digest of the capability this one was attenuated
	// from, or "" for a root.
	Parent string `json:"parent"`
}

// SignedCapability is a capability with its issuer's Ed25519 signature
// over the capability digest.
type SignedCapability struct {
	Capability Capability `json:"capability"`
	KeyID      string     `json:"key_id"`
	Signature  string     `json:"signature"` // lowercase hex
}

// CapabilityError is a capability that cannot be trusted or does not
// cover an action.
type CapabilityError struct {
	Code string
	ID   string
	Msg  string
}

func (e *CapabilityError) Error() string {
	return fmt.Sprintf("capability %s: %s: %s", e.ID, e.Code, e.Msg)
}

// Digest is the capability's canonical digest: what is signed.
func (c Capability) Digest() string {
	scopes := append([]string(nil), c.Scopes...)
	sort.Strings(scopes)
	limits := map[string]any{}
	for k, v := range c.Limits {
		limits[k] = v
	}
	ss := make([]any, len(scopes))
	for i, s := range scopes {
		ss[i] = s
	}
	return mustDigest(map[string]any{
		"kind": "CapabilityPreimage", "capability_version": CapabilityVersion,
		"id": c.ID, "effect_type": c.EffectType, "destination": c.Destination, "scopes": ss,
		"limits": limits, "not_before": c.NotBefore, "expiry": c.Expiry, "parent": c.Parent,
	})
}

func (c Capability) validate() error {
	bad := func(msg string) error { return &CapabilityError{"MALFORMED_CAPABILITY", c.ID, msg} }
	if !ValidID(c.ID) {
		return bad("id is not a protocol id")
	}
	if !ValidID(c.EffectType) {
		return bad("effect type is not a protocol id")
	}
	dest := strings.TrimSuffix(c.Destination, "*")
	if c.Destination == "" || (dest != "" && !ValidID(dest)) || strings.Contains(dest, "*") {
		return bad("destination is neither an id nor an id prefix ending in *")
	}
	if len(c.Scopes) == 0 {
		return bad("a capability names at least one scope")
	}
	for _, s := range c.Scopes {
		if !ValidID(s) {
			return bad(fmt.Sprintf("scope %q is not a protocol id", s))
		}
	}
	for _, k := range sortedKeys(c.Limits) {
		if !ValidID(k) {
			return bad(fmt.Sprintf("limit %q is not a parameter name", k))
		}
	}
	if c.Expiry <= c.NotBefore || c.NotBefore < 0 {
		return bad("the validity window is empty")
	}
	return nil
}

// KeyID names an operator public key by its full hex encoding.
func KeyID(pub ed25519.PublicKey) string { return "ed25519:" + hex.EncodeToString(pub) }

// SignCapability signs a root capability with an operator key.
func SignCapability(c Capability, key ed25519.PrivateKey) (SignedCapability, error) {
	if err := c.validate(); err != nil {
		return SignedCapability{}, err
	}
	pub, ok := key.Public().(ed25519.PublicKey)
	if !ok || len(key) != ed25519.PrivateKeySize {
		return SignedCapability{}, &CapabilityError{"KEY_MISSING", c.ID, "no usable operator key"}
	}
	sig := ed25519.Sign(key, []byte(c.Digest()))
	return SignedCapability{Capability: c, KeyID: KeyID(pub), Signature: hex.EncodeToString(sig)}, nil
}

// Narrows reports whether child grants nothing parent does not: the same
// effect type, a destination set inside the parent's, a subset of its
// scopes, every parent limit kept at or below its value, and a window
// inside the parent's.
func Narrows(child, parent Capability) bool {
	if child.EffectType != parent.EffectType {
		return false
	}
	if !destWithin(child.Destination, parent.Destination) {
		return false
	}
	for _, s := range child.Scopes {
		if !slices.Contains(parent.Scopes, s) {
			return false
		}
	}
	for _, k := range sortedKeys(parent.Limits) {
		pv := parent.Limits[k]
		cv, ok := child.Limits[k]
		if !ok || cv > pv {
			return false
		}
	}
	return child.NotBefore >= parent.NotBefore && child.Expiry <= parent.Expiry
}

func destWithin(child, parent string) bool {
	if !strings.HasSuffix(parent, "*") {
		return child == parent
	}
	return strings.HasPrefix(strings.TrimSuffix(child, "*"), strings.TrimSuffix(parent, "*"))
}

// Attenuate derives a narrower capability from a verified parent and signs
// it with an operator key. It refuses anything that would widen.
func Attenuate(parent SignedCapability, narrower Capability, key ed25519.PrivateKey) (SignedCapability, error) {
	narrower.Parent = parent.Capability.Digest()
	if err := narrower.validate(); err != nil {
		return SignedCapability{}, err
	}
	if !Narrows(narrower, parent.Capability) {
		return SignedCapability{}, &CapabilityError{"ATTENUATION_WIDENS", narrower.ID, "an attenuated capability may only narrow its parent"}
	}
	return SignCapability(narrower, key)
}

// ParentChain readies a capability chain, root first, to be signed: each
// link after the root is parented on the one before it (its Parent set to
// that link's digest) and must narrow it. A link that names a parent
// already must name that one: a chain is never re-parented silently. It
// refuses what Keyring.Verify would refuse of the signed chain, so that
// nothing is signed that would not load.
func ParentChain(links []Capability) ([]Capability, error) {
	if len(links) == 0 {
		return nil, &CapabilityError{"CAPABILITY_MISSING", "", "a chain has at least its root"}
	}
	out := make([]Capability, 0, len(links))
	for i, c := range links {
		if err := c.validate(); err != nil {
			return nil, err
		}
		if i == 0 {
			if c.Parent != "" {
				return nil, &CapabilityError{"BROKEN_CHAIN", c.ID, "the root names a parent"}
			}
			out = append(out, c)
			continue
		}
		prev := out[i-1]
		if c.Parent != "" && c.Parent != prev.Digest() {
			return nil, &CapabilityError{"BROKEN_CHAIN", c.ID, "parent digest does not name the previous link"}
		}
		c.Parent = prev.Digest()
		if !Narrows(c, prev) {
			return nil, &CapabilityError{"ATTENUATION_WIDENS", c.ID, "an attenuated capability may only narrow its parent"}
		}
		out = append(out, c)
	}
	return out, nil
}

// SignChain signs a capability chain, root first, with an operator key,
// parented as ParentChain does. What it returns verifies under a Keyring
// that trusts key (Keyring.Verify).
func SignChain(links []Capability, key ed25519.PrivateKey) ([]SignedCapability, error) {
	parented, err := ParentChain(links)
	if err != nil {
		return nil, err
	}
	out := make([]SignedCapability, len(parented))
	for i, c := range parented {
		if out[i], err = SignCapability(c, key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Keyring is the set of operator public keys trusted to issue
// capabilities, by key id. It is configuration, never model output.
type Keyring map[string]ed25519.PublicKey

// NewKeyring trusts the given operator keys.
func NewKeyring(keys ...ed25519.PublicKey) Keyring {
	k := Keyring{}
	for _, p := range keys {
		k[KeyID(p)] = p
	}
	return k
}

func (k Keyring) verifyOne(sc SignedCapability) error {
	c := sc.Capability
	if err := c.validate(); err != nil {
		return err
	}
	pub, ok := k[sc.KeyID]
	if !ok {
		return &CapabilityError{"UNTRUSTED_KEY", c.ID, "signed by a key that is not an operator key"}
	}
	sig, err := hex.DecodeString(sc.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, []byte(c.Digest()), sig) {
		return &CapabilityError{"BAD_SIGNATURE", c.ID, "signature does not verify"}
	}
	return nil
}

// VerifyChain verifies a capability chain root first: every link signed
// by a trusted operator key, every link naming its predecessor's digest as
// parent and narrowing it, and the last link live at now (NotBefore <= now
// < Expiry). It returns the effective (last) capability.
func (k Keyring) VerifyChain(chain []SignedCapability, now int64) (Capability, error) {
	v, err := k.Verify(chain)
	if err != nil {
		return Capability{}, err
	}
	return v.c, v.liveAt(now)
}

// VerifiedCapability is a capability chain whose signatures and
// narrowing a Keyring checked. Only Keyring.Verify makes one, so holding
// one proves the check happened; its validity window is still checked at
// each use.
type VerifiedCapability struct {
	c       Capability
	keyring string
}

// Capability returns the effective (last) capability of the chain.
func (v VerifiedCapability) Capability() Capability { return v.c }

func (v VerifiedCapability) liveAt(now int64) error {
	switch {
	case v.keyring == "":
		return &CapabilityError{"CAPABILITY_MISSING", "", "not verified by a keyring"}
	case now < v.c.NotBefore:
		return &CapabilityError{"CAPABILITY_NOT_YET_VALID", v.c.ID, fmt.Sprintf("valid from %d, now %d", v.c.NotBefore, now)}
	case now >= v.c.Expiry:
		return &CapabilityError{"CAPABILITY_EXPIRED", v.c.ID, fmt.Sprintf("expired at %d, now %d", v.c.Expiry, now)}
	}
	return nil
}

// Fingerprint names the keyring: the sorted key ids, joined.
func (k Keyring) Fingerprint() string {
	ids := make([]string, 0, len(k))
	for id := range k {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

// hasFingerprint reports whether k.Fingerprint() is fp. When fp lists ids
// of k in strictly increasing order, as many as k has, it is k's sorted
// ids joined, so it is k's fingerprint and nothing is built; otherwise
// the fingerprint is built and compared (TestHasFingerprintIsFingerprint).
func (k Keyring) hasFingerprint(fp string) bool {
	n, prev := 0, ""
	for rest := fp; ; {
		id, after, more := strings.Cut(rest, ",")
		if _, ok := k[id]; !ok || (n > 0 && id <= prev) {
			return k.Fingerprint() == fp
		}
		n, prev = n+1, id
		if !more {
			break
		}
		rest = after
	}
	if n != len(k) {
		return k.Fingerprint() == fp
	}
	return true
}

// Verify checks a chain's signatures and narrowing once, so that a
// caller can present the verified capability to many authorizations
// without re-verifying signatures each time.
func (k Keyring) Verify(chain []SignedCapability) (VerifiedCapability, error) {
	if len(chain) == 0 {
		return VerifiedCapability{}, &CapabilityError{"CAPABILITY_MISSING", "", "no capability presented"}
	}
	for i, sc := range chain {
		if err := k.verifyOne(sc); err != nil {
			return VerifiedCapability{}, err
		}
		c := sc.Capability
		if i == 0 {
			if c.Parent != "" {
				return VerifiedCapability{}, &CapabilityError{"BROKEN_CHAIN", c.ID, "the root names a parent"}
			}
			continue
		}
		prev := chain[i-1].Capability
		if c.Parent != prev.Digest() {
			return VerifiedCapability{}, &CapabilityError{"BROKEN_CHAIN", c.ID, "parent digest does not name the previous link"}
		}
		if !Narrows(c, prev) {
			return VerifiedCapability{}, &CapabilityError{"ATTENUATION_WIDENS", c.ID, "a link widens its parent"}
		}
	}
	return VerifiedCapability{c: chain[len(chain)-1].Capability, keyring: k.Fingerprint()}, nil
}

// Covers reports whether a capability covers a ticket: effect type,
// destination, scope and every limit.
func (c Capability) Covers(t Ticket) error {
	no := func(msg string) error { return &CapabilityError{"NOT_COVERED", c.ID, msg} }
	if t.Action != c.EffectType {
		return no(fmt.Sprintf("covers %s, not %s", c.EffectType, t.Action))
	}
	if !destWithin(t.Destination, c.Destination) || strings.HasSuffix(t.Destination, "*") {
		return no(fmt.Sprintf("destination %s outside %s", t.Destination, c.Destination))
	}
	if !slices.Contains(c.Scopes, t.Scope) {
		return no(fmt.Sprintf("scope %s not granted", t.Scope))
	}
	for _, k := range sortedKeys(c.Limits) {
		v, ok := t.Parameters[k].(int64)
		if !ok {
			return no(fmt.Sprintf("limit on %s but the parameter is not an integer", k))
		}
		if v > c.Limits[k] {
			return no(fmt.Sprintf("%s = %d exceeds the limit %d", k, v, c.Limits[k]))
		}
	}
	return nil
}
