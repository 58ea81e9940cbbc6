package workflow

import (
	"bytes"
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

// SigningPlan is a bundle's capability chains ready to be signed by its
// operator key: read, checked and parented (authority.ParentChain), with
// the message each capability is signed over. PlanSigning makes one and
// Finish turns the signatures into the file to write; between the two the
// caller signs, with a key in memory (SignCapabilities) or one held by a
// key service, which is I/O this package does not do.
type SigningPlan struct {
	// File is the capabilities file the manifest names: what Finish
	// writes.
	File string
	// Chains are the capabilities, root first, each parented on the one
	// before: Chains[i][j] is signed over Message(i, j).
	Chains [][]authority.Capability

	key      ed25519.PublicKey // the manifest's operator_key
	from     string            // where the chains were read
	manifest string
	c        *compiler // for the places of errors in YAML files
}

// Message is what the capability Chains[i][j] is signed over: its digest.
func (p *SigningPlan) Message(i, j int) []byte { return []byte(p.Chains[i][j].Digest()) }

// OperatorKey is the public key the manifest names: every signature Finish
// is given must verify under it.
func (p *SigningPlan) OperatorKey() ed25519.PublicKey { return p.key }

// CheckKey refuses a signing key other than the manifest's operator_key
// (CodeKeyMismatch, both keys named) before anything is signed.
func (p *SigningPlan) CheckKey(pub ed25519.PublicKey) error {
	if pub.Equal(p.key) {
		return nil
	}
	return p.c.located(bundleErr(CodeKeyMismatch, ManifestFile, "/operator_key",
		"the bundle trusts %s, and the signing key is %s: set operator_key to the signing key's, or sign with the bundle's",
		hex.EncodeToString(p.key), hex.EncodeToString(pub)), p.manifest)
}

// PlanSigning reads the capability chains of the bundle in files to sign:
// from the file named from, whose bytes are src (JSON, or YAML when from
// is named so), or from the bundle's capabilities file itself when from
// is "". A link is either a capability written bare ({"id",
// "effect_type", "destination", "scopes", "limits", "not_before",
// "expiry"}) or one signed before ({"capability", "key_id", "signature"}),
// which is signed again: signing is how an operator adds a capability,
// changes one, or moves the bundle to a new key. It is pure, and any
// problem is an *Error naming the file and the place in it.
func PlanSigning(files map[string][]byte, from string, src []byte) (*SigningPlan, error) {
	name, merr := Manifest(files)
	if merr != nil {
		return nil, merr
	}
	c := &compiler{files: files, used: map[string]bool{name: true}}
	p, err := c.planSigning(name, from, src)
	if err != nil {
		return nil, c.located(err, name)
	}
	return p, nil
}

func (c *compiler) planSigning(manifest, from string, src []byte) (*SigningPlan, *Error) {
	if err := c.readManifest(manifest); err != nil {
		return nil, err
	}
	key, err := c.operatorKey()
	if err != nil {
		return nil, err
	}
	capName, doc, err := c.file("/capabilities")
	if err != nil {
		return nil, err
	}
	if from != "" {
		if doc, err = c.document(from, src, false); err != nil {
			return nil, err
		}
	} else {
		from = capName
	}
	raw, err := rawChains(from, doc)
	if err != nil {
		return nil, err
	}
	p := &SigningPlan{File: capName, Chains: make([][]authority.Capability, len(raw)), key: key, from: from, manifest: manifest, c: c}
	for i, links := range raw {
		ptr := fmt.Sprintf("/chains/%d", i)
		caps := make([]authority.Capability, len(links))
		for j, l := range links {
			if caps[j], err = readLink(from, fmt.Sprintf("%s/%d", ptr, j), l); err != nil {
				return nil, err
			}
		}
		parented, perr := authority.ParentChain(caps)
		if perr != nil {
			return nil, bundleErr(CodeBadCapability, from, ptr, "%v", perr)
		}
		p.Chains[i] = parented
	}
	return p, nil
}

// Finish makes the capabilities file from the signatures of the plan's
// capabilities, sigs[i][j] over Message(i, j) (64 bytes, Ed25519). Every
// chain must verify under the manifest's operator_key: a signature that
// does not is CodeKeyMismatch (the signer holds another key) and nothing
// is returned to write.
func (p *SigningPlan) Finish(sigs [][][]byte) (*Signed, error) {
	s, err := p.finish(sigs)
	if err != nil {
		return nil, p.c.located(err, p.manifest)
	}
	return s, nil
}

func (p *SigningPlan) finish(sigs [][][]byte) (*Signed, *Error) {
	if len(sigs) != len(p.Chains) {
		return nil, bundleErr(CodeKeyMismatch, p.from, "", "%d chains signed of %d", len(sigs), len(p.Chains))
	}
	keyID := authority.KeyID(p.key)
	keyring := authority.NewKeyring(p.key)
	out := &Signed{File: p.File, KeyID: keyID, Chains: len(p.Chains)}
	chains := make([]any, len(p.Chains))
	for i, caps := range p.Chains {
		if len(sigs[i]) != len(caps) {
			return nil, bundleErr(CodeKeyMismatch, p.from, fmt.Sprintf("/chains/%d", i), "%d capabilities signed of %d", len(sigs[i]), len(caps))
		}
		chain := make([]authority.SignedCapability, len(caps))
		for j, c := range caps {
			chain[j] = authority.SignedCapability{Capability: c, KeyID: keyID, Signature: hex.EncodeToString(sigs[i][j])}
		}
		if _, err := keyring.Verify(chain); err != nil {
			return nil, bundleErr(CodeKeyMismatch, ManifestFile, "/operator_key",
				"a signature of chain %d does not verify under the bundle's operator_key %s (does the signer hold that key?): %v",
				i, hex.EncodeToString(p.key), err)
		}
		chains[i] = chain
		out.Links += len(chain)
	}
	b, merr := cjson.Marshal(map[string]any{"chains": chains})
	if merr != nil {
		return nil, bundleErr(CodeMalformed, p.from, "", "%v", merr)
	}
	out.Bytes = append(b, '\n')
	if yamljson.Named(p.File) {
		y, yerr := yamljson.FromJSON(b, signedHeader, nil)
		if yerr != nil {
			return nil, bundleErr(CodeMalformed, p.File, "", "%v", yerr)
		}
		out.Bytes = y
	}
	return out, nil
}

// SignCapabilities signs the bundle's capability chains (PlanSigning) with
// key, held in memory, and returns the capabilities file to write. key
// must be the one the manifest's operator_key names, or nothing is signed
// (CodeKeyMismatch): a bundle signed by a key it does not trust would not
// load. Ed25519 signatures are deterministic, so signing the same chains
// with the same key gives the same bytes.
func SignCapabilities(files map[string][]byte, from string, src []byte, key ed25519.PrivateKey) (*Signed, error) {
	p, err := PlanSigning(files, from, src)
	if err != nil {
		return nil, err
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, p.c.located(bundleErr(CodeKeyMismatch, ManifestFile, "/operator_key", "no usable Ed25519 signing key"), p.manifest)
	}
	if err := p.CheckKey(key.Public().(ed25519.PublicKey)); err != nil {
		return nil, err
	}
	sigs := make([][][]byte, len(p.Chains))
	for i, caps := range p.Chains {
		sigs[i] = make([][]byte, len(caps))
		for j := range caps {
			sigs[i][j] = ed25519.Sign(key, p.Message(i, j))
		}
	}
	return p.Finish(sigs)
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

// SetOperatorKey returns the manifest (file name, bytes manifest) with its
// operator_key set to pub, every other byte as it was: the key's text,
// which must occur once in the file, is replaced where it stands, so the
// manifest's layout and comments are kept. A bundle made from another
// (an example) thus trusts a key of its own; its capabilities are then
// signed again with that key (PlanSigning).
func SetOperatorKey(name string, manifest []byte, pub ed25519.PublicKey) ([]byte, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, bundleErr(CodeMalformed, name, "/operator_key", "no Ed25519 public key to set")
	}
	c := &compiler{files: map[string][]byte{name: manifest}}
	if err := c.readManifest(name); err != nil {
		return nil, c.located(err, name)
	}
	old, err := c.operatorKey()
	if err != nil {
		return nil, c.located(err, name)
	}
	// The key may be written in capitals: search a copy with ASCII letters
	// lowered, byte for byte, so that its offsets are the file's.
	low := bytes.Clone(manifest)
	for i, b := range low {
		if 'A' <= b && b <= 'Z' {
			low[i] = b + 'a' - 'A'
		}
	}
	oldHex := []byte(hex.EncodeToString(old))
	if n := bytes.Count(low, oldHex); n != 1 {
		return nil, c.located(bundleErr(CodeMalformed, ManifestFile, "/operator_key",
			"the key's text occurs %d times in the file, so it cannot be replaced where it stands: set operator_key by hand", n), name)
	}
	i := bytes.Index(low, oldHex)
	out := append(append(append([]byte(nil), manifest[:i]...), hex.EncodeToString(pub)...), manifest[i+len(oldHex):]...)
	return out, nil
}
