package workflow

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/yamljson"
)

// Signed is a bundle's capabilities file as SignCapabilities writes it.
type Signed struct {
	// File is the capabilities file the manifest names, and Bytes what
	// it is to hold: canonical JSON, or YAML when File is named *.yaml
	// or *.yml.
	File  string
	Bytes []byte
	// KeyID names the operator key that signed every link.
	KeyID string
	// Chains and Links count what was signed.
	Chains, Links int
}

// signedHeader heads a capabilities file written in YAML by
// SignCapabilities: comments do not survive signing, so the file says so.
const signedHeader = "Signed by the bundle's operator key (flrh bundle sign). Edit a capability\n" +
	"and sign again: a changed capability no longer verifies, and comments here\n" +
	"are not kept."

// bareMembers are the members a capability written before signing must
// have; limits, not_before and parent may be left out (no limits, valid
// from 0, parented by SignCapabilities).
var bareMembers = []string{"id", "effect_type", "destination", "scopes", "expiry"}

// SignCapabilities signs, with key, the capability chains of the bundle in
// files, and returns the capabilities file the manifest names as it is to
// be written. The chains are read from the file named from, whose bytes
// are src (JSON, or YAML when from is named so), or from the bundle's
// capabilities file itself when from is "". A link is either a capability
// written bare ({"id", "effect_type", "destination", "scopes", "limits",
// "not_before", "expiry"}) or one signed before ({"capability", "key_id",
// "signature"}), which is signed again: signing is how an operator adds
// a capability, changes one, or moves the bundle to a new key. Each link
// after a chain's root is parented on the link before it and must narrow
// it (authority.SignChain).
//
// key must be the one the manifest's operator_key names, or nothing is
// signed (CodeKeyMismatch): a bundle signed by a key it does not trust
// would not load. Ed25519 signatures are deterministic, so signing the
// same chains with the same key gives the same bytes. It is pure, and
// any problem is an *Error naming the file and the place in it.
func SignCapabilities(files map[string][]byte, from string, src []byte, key ed25519.PrivateKey) (*Signed, error) {
	name, merr := Manifest(files)
	if merr != nil {
		return nil, merr
	}
	c := compiler{files: files, used: map[string]bool{name: true}}
	s, err := c.sign(name, from, src, key)
	if err != nil {
		return nil, c.located(err, name)
	}
	return s, nil
}

func (c *compiler) sign(manifest, from string, src []byte, key ed25519.PrivateKey) (*Signed, *Error) {
	if err := c.readManifest(manifest); err != nil {
		return nil, err
	}
	trusted, err := c.operatorKey()
	if err != nil {
		return nil, err
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, bundleErr(CodeKeyMismatch, ManifestFile, "/operator_key", "no usable Ed25519 signing key")
	}
	pub := key.Public().(ed25519.PublicKey)
	if !pub.Equal(trusted) {
		return nil, bundleErr(CodeKeyMismatch, ManifestFile, "/operator_key",
			"the bundle trusts %s, and the signing key is %s: set operator_key to the signing key's, or sign with the bundle's",
			hex.EncodeToString(trusted), hex.EncodeToString(pub))
	}
	capName, doc, cerr := c.file("/capabilities")
	if cerr != nil {
		return nil, cerr
	}
	if from != "" {
		if doc, cerr = c.document(from, src, false); cerr != nil {
			return nil, cerr
		}
	} else {
		from = capName
	}
	raw, cerr := rawChains(from, doc)
	if cerr != nil {
		return nil, cerr
	}
	out := &Signed{File: capName, KeyID: authority.KeyID(pub), Chains: len(raw)}
	chains := make([]any, len(raw))
	for i, links := range raw {
		ptr := fmt.Sprintf("/chains/%d", i)
		caps := make([]authority.Capability, len(links))
		for j, l := range links {
			if caps[j], cerr = readLink(from, fmt.Sprintf("%s/%d", ptr, j), l); cerr != nil {
				return nil, cerr
			}
		}
		chain, serr := authority.SignChain(caps, key)
		if serr != nil {
			return nil, bundleErr(CodeBadCapability, from, ptr, "%v", serr)
		}
		chains[i] = chain
		out.Links += len(chain)
	}
	b, merr := cjson.Marshal(map[string]any{"chains": chains})
	if merr != nil {
		return nil, bundleErr(CodeMalformed, from, "", "%v", merr)
	}
	out.Bytes = append(b, '\n')
	if yamljson.Named(capName) {
		y, yerr := yamljson.FromJSON(b, signedHeader, nil)
		if yerr != nil {
			return nil, bundleErr(CodeMalformed, capName, "", "%v", yerr)
		}
		out.Bytes = y
	}
	return out, nil
}

// readLink reads one link of a chain to sign: a capability written bare,
// or the capability of one signed before (its signature is dropped).
func readLink(file, ptr string, l any) (authority.Capability, *Error) {
	var c authority.Capability
	if m, ok := l.(map[string]any); ok && !unsigned(l) {
		var sc authority.SignedCapability
		if err := strictDecode(m, &sc); err != nil {
			return c, bundleErr(CodeMalformed, file, ptr, "neither a capability nor a signed one: %v", err)
		}
		return sc.Capability, nil
	}
	m, ok := l.(map[string]any)
	if !ok {
		return c, bundleErr(CodeMalformed, file, ptr, "must be a capability: an object of id, effect_type, destination, scopes, limits, not_before and expiry")
	}
	for _, k := range bareMembers {
		if _, ok := m[k]; !ok {
			return c, bundleErr(CodeMalformed, file, ptr+"/"+k, "required member is missing")
		}
	}
	if err := strictDecode(m, &c); err != nil {
		return c, bundleErr(CodeMalformed, file, ptr, "not a capability: %v", err)
	}
	if c.Limits == nil {
		c.Limits = map[string]int64{}
	}
	return c, nil
}
