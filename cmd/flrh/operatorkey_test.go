package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"flrh.dev/flrh/internal/testpki"
)

// An operator key is read as one PEM PKCS#8 Ed25519 block, as openssl
// genpkey -algorithm ed25519 writes it; anything else is refused with
// what was found.
func TestParseOperatorKey(t *testing.T) {
	good, err := encodeOperatorKey(testpki.ExampleOperator())
	if err != nil {
		t.Fatal(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), bytes.NewReader(bytes.Repeat([]byte{7}, 256)))
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	block := func(typ string, der []byte, headers map[string]string) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Headers: headers, Bytes: der}))
	}
	goodDER, _ := pem.Decode(good)
	for _, c := range []struct {
		name, text string
		want       string // in the error; "" when the key is read
	}{
		{"as written", string(good), ""},
		{"with blank space around", "\n\n" + string(good) + "\n  \n", ""},
		// A key openssl genpkey -algorithm ed25519 wrote (its public key,
		// as openssl pkey -pubout gave it, is opensslPublic).
		{"as openssl writes it", "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIL5lkS+C26JWPfa1BjG+0UY00xiTgt8/tEsXMzNM1i/D\n-----END PRIVATE KEY-----\n", ""},
		{"empty", "", "not a PEM key"},
		{"hex", hex.EncodeToString(testpki.ExampleOperator().Seed()), "not a PEM key"},
		{"two blocks", string(good) + string(good), "more than one PEM block"},
		{"trailing words", string(good) + "and more", "more than one PEM block"},
		{"encrypted", block("ENCRYPTED PRIVATE KEY", goodDER.Bytes, nil), "an encrypted key"},
		{"an EC key block", block("EC PRIVATE KEY", ecDER, nil), "a PEM EC PRIVATE KEY block"},
		{"a public key", block("PUBLIC KEY", goodDER.Bytes, nil), "a PEM PUBLIC KEY block"},
		{"headers", block("PRIVATE KEY", goodDER.Bytes, map[string]string{"Proc-Type": "4,ENCRYPTED"}), "headers"},
		{"not DER", block("PRIVATE KEY", []byte("not der"), nil), "not a PKCS#8 private key"},
		{"an ECDSA key", block("PRIVATE KEY", ecDER, nil), "an operator key is Ed25519"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := parseOperatorKey([]byte(c.text))
			if c.want == "" {
				if err != nil || len(k) != ed25519.PrivateKeySize {
					t.Fatalf("%v", err)
				}
				want := hex.EncodeToString(testpki.ExampleOperator().Public().(ed25519.PublicKey))
				if c.name == "as openssl writes it" {
					want = opensslPublic
				}
				if got := hex.EncodeToString(k.Public().(ed25519.PublicKey)); got != want {
					t.Fatalf("read the key of %s, want %s", got, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || k != nil {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

const opensslPublic = "da50ab2b033a939f277fd0a502c33d9c816ac8266a8e8ae52426339aca83d140"

// A signing command's output is read as a signature raw, in hex or in
// base64, and nothing else is.
func TestParseSignature(t *testing.T) {
	sig := ed25519.Sign(testpki.ExampleOperator(), []byte("m"))
	for _, c := range []struct {
		name string
		out  []byte
		ok   bool
	}{
		{"raw", sig, true},
		{"hex", []byte(hex.EncodeToString(sig) + "\n"), true},
		{"base64", []byte(base64.StdEncoding.EncodeToString(sig) + "\n"), true},
		{"base64, no padding", []byte(base64.RawStdEncoding.EncodeToString(sig)), true},
		{"base64url", []byte(base64.URLEncoding.EncodeToString(sig)), true},
		{"raw, cut", sig[:63], false},
		{"raw and a line break", append(append([]byte(nil), sig...), '\n'), false},
		{"hex, cut", []byte(hex.EncodeToString(sig)[:126]), false},
		{"nothing", nil, false},
		{"words", []byte("signed\n"), false},
	} {
		got, err := parseSignature(c.out)
		switch {
		case c.ok && (err != nil || !bytes.Equal(got, sig)):
			t.Errorf("%s: %x, %v", c.name, got, err)
		case !c.ok && err == nil:
			t.Errorf("%s: read %x", c.name, got)
		}
	}
}

func FuzzParseSignature(f *testing.F) {
	sig := ed25519.Sign(testpki.ExampleOperator(), []byte("m"))
	f.Add(sig)
	f.Add([]byte(hex.EncodeToString(sig)))
	f.Add([]byte(base64.StdEncoding.EncodeToString(sig) + "\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		got, err := parseSignature(out)
		if err == nil && len(got) != ed25519.SignatureSize {
			t.Fatalf("a signature of %d bytes", len(got))
		}
	})
}

func FuzzParseOperatorKey(f *testing.F) {
	good, _ := encodeOperatorKey(testpki.ExampleOperator())
	f.Add(good)
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIL5lkS+C26JWPfa1BjG+0UY00xiTgt8/tEsXMzNM1i/D\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMC4=\n-----END ENCRYPTED PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := parseOperatorKey(b)
		if err != nil {
			if k != nil {
				t.Fatal("a key and an error")
			}
			return
		}
		// A key read is a usable Ed25519 key that writes back as read.
		if len(k) != ed25519.PrivateKeySize || !ed25519.Verify(k.Public().(ed25519.PublicKey), []byte("m"), ed25519.Sign(k, []byte("m"))) {
			t.Fatal("an unusable key read")
		}
		again, err := encodeOperatorKey(k)
		if err != nil {
			t.Fatal(err)
		}
		if k2, err := parseOperatorKey(again); err != nil || !k2.Equal(k) {
			t.Fatalf("written back and read: %v", err)
		}
	})
}

// An operator writes a bundle from nothing but the CLI: a new operator key,
// its public key set in the manifest, capabilities written bare. The
// bundle does not load until they are signed; signed, it runs, and the
// signed limit governs what it may pay. Signing again changes nothing;
// another key is refused and writes nothing; the key may come from a
// command or a variable, never two sources at once, never from a file
// others can read or one inside the bundle; and a rotation to a new key
// is a new operator_key and a signing.
func TestOperatorSignsANewBundle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	run := func(env []string, args ...string) (string, int) {
		t.Helper()
		out, err := flrh(bin, env, args...)
		return out, exitStatus(t, err)
	}
	newKey := func(name string) (string, string) {
		t.Helper()
		path := filepath.Join(dir, name)
		out, code := run(nil, "bundle", "key", "new", path, "--json")
		var rep operatorKeyReport
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.OperatorKey) != 64 || rep.KeyID != "ed25519:"+rep.OperatorKey {
			t.Fatalf("key new: %d\n%s", code, out)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("the key file: %v %v", fi, err)
		}
		if out, code := run(nil, "bundle", "key", "public", "--key", path); code != 0 || out != "operator_key: "+rep.OperatorKey+"\n" {
			t.Fatalf("key public: %d\n%s", code, out)
		}
		return path, rep.OperatorKey
	}
	key, pub := newKey("operator.pem")
	if out, code := run(nil, "bundle", "key", "new", key); code != 2 || !strings.Contains(out, "exists") {
		t.Fatalf("key new over a key: %d\n%s", code, out)
	}

	b := filepath.Join(dir, "refunds")
	if err := os.CopyFS(b, os.DirFS(filepath.Join("..", "..", "examples", "refund-agent"))); err != nil {
		t.Fatal(err)
	}
	setOperatorKey := func(pub string) {
		t.Helper()
		wf, err := os.ReadFile(filepath.Join(b, "workflow.json"))
		if err != nil {
			t.Fatal(err)
		}
		wf = regexp.MustCompile(`"operator_key": "[0-9a-f]+"`).ReplaceAll(wf, []byte(`"operator_key": "`+pub+`"`))
		if err := os.WriteFile(filepath.Join(b, "workflow.json"), wf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setOperatorKey(pub)
	caps := filepath.Join(b, "capabilities.json")
	bare := `{"chains": [[{"id": "capability:refund.pay", "effect_type": "refund.pay", "destination": "dest:payments",
  "scopes": ["scope:refunds"], "limits": {"amount": 500}, "expiry": 1099511627776}]]}
`
	if err := os.WriteFile(caps, []byte(bare), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := run(nil, "bundle", "check", b); code != 1 || !strings.Contains(out, "not signed yet") {
		t.Fatalf("check before signing: %d\n%s", code, out)
	}
	if out, code := run(nil, "bundle", "key", "new", filepath.Join(b, "k.pem")); code != 2 || !strings.Contains(out, "bundle directory") {
		t.Fatalf("key new into the bundle: %d\n%s", code, out)
	}

	out, code := run(nil, "bundle", "sign", b, "--key", key)
	if code != 0 || !strings.Contains(out, "signed "+caps+": 1 chains, 1 capabilities, under ed25519:"+pub) || !strings.Contains(out, "ok   "+b+": refund-agent@1") {
		t.Fatalf("sign: %d\n%s", code, out)
	}
	signed, err := os.ReadFile(caps)
	if err != nil {
		t.Fatal(err)
	}
	digest := regexp.MustCompile(`sha256:[0-9a-f]{64}`).FindString(out)

	// Signed again, from a command and from the variable: the same bytes.
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--key-command", "cat " + key}},
		{[]string{operatorKeyFileEnv + "=" + key}, nil},
		{[]string{operatorKeyCommandEnv + "=cat " + key}, nil},
	} {
		out, code := run(c.env, append([]string{"bundle", "sign", b, "--json"}, c.args...)...)
		var rep signReport
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.Unchanged || rep.Bundle.Digest != digest || !rep.Bundle.OK {
			t.Fatalf("signed again (%v %v): %d\n%s", c.env, c.args, code, out)
		}
	}
	unchanged := func(what string) {
		t.Helper()
		if now, err := os.ReadFile(caps); err != nil || !bytes.Equal(now, signed) {
			t.Fatalf("%s changed the capabilities:\n%s", what, now)
		}
	}
	unchanged("signing again")

	// Refusals write nothing.
	other, otherPub := newKey("other.pem")
	loose := filepath.Join(dir, "loose.pem")
	kb, _ := os.ReadFile(key)
	if err := os.WriteFile(loose, kb, 0o644); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(b, "key.pem")
	if err := os.WriteFile(inside, kb, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"another key", nil, []string{"--key", other}, "KEY_MISMATCH: the bundle trusts " + pub + ", and the signing key is " + otherPub},
		{"no key", nil, nil, "no operator key"},
		{"two sources", []string{operatorKeyFileEnv + "=" + key}, []string{"--key", key}, "--key and " + operatorKeyFileEnv + " are all given"},
		{"a key others can read", nil, []string{"--key", loose}, "readable by others"},
		{"a key inside the bundle", nil, []string{"--key", inside}, "must not travel with the bundle"},
		// A key service that fails may come back: a plain failure (1).
		{"a command that fails", nil, []string{"--key-command", "echo denied >&2; exit 3"}, `--key-command failed (exit status 3): "denied"`},
		{"a command printing no key", nil, []string{"--key-command", "echo nothing"}, "printed no operator key: not a PEM key"},
		{"a source file that is not there", nil, []string{"--key", key, "--from", filepath.Join(dir, "none.json")}, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, code := run(c.env, append([]string{"bundle", "sign", b}, c.args...)...)
			want := 2
			if c.name == "a command that fails" {
				want = 1
			}
			if code != want || !strings.Contains(out, c.want) {
				t.Fatalf("%d\n%s", code, out)
			}
			unchanged(c.name)
		})
	}
	os.Remove(inside)

	// A key that stays in its key service signs there: openssl stands
	// for the service, the message read from standard input or from the
	// variable, the signature printed raw, in base64 or in hex; each gives
	// the bytes signed before. A command signing with another key, one
	// that fails and one that prints no signature are refused and write
	// nothing.
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is needed to stand for a key service: install it")
	}
	viaStdin := `t=$(mktemp); cat >"$t"; openssl pkeyutl -sign -rawin -inkey %s -in "$t"; rm -f "$t"`
	viaEnv := `t=$(mktemp); printf %%s "$FLRH_SIGN_MESSAGE" >"$t"; openssl pkeyutl -sign -rawin -inkey %s -in "$t"; rm -f "$t"`
	for _, c := range []struct {
		name, command string
		env           bool
	}{
		{"raw, from standard input", fmt.Sprintf(viaStdin, key), false},
		{"base64, from the variable", fmt.Sprintf(viaEnv, key) + " | base64 -w0", false},
		{"hex, the command from a variable", fmt.Sprintf(viaStdin, key) + " | od -An -tx1 -v | tr -d ' \n'", true},
	} {
		args := []string{"bundle", "sign", b, "--json"}
		var env []string
		if c.env {
			env = []string{operatorSignCommandEnv + "=" + c.command}
		} else {
			args = append(args, "--sign-command", c.command)
		}
		out, code := run(env, args...)
		var rep signReport
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.Unchanged || rep.Bundle.Digest != digest {
			t.Fatalf("signed by a command (%s): %d\n%s", c.name, code, out)
		}
	}
	unchanged("signing by a command")
	for _, c := range []struct {
		name, command string
		code          int
		want          string
	}{
		{"another key", fmt.Sprintf(viaStdin, other), 2, "KEY_MISMATCH: a signature of chain 0 does not verify under the bundle's operator_key " + pub},
		{"a service that refuses", "echo 'permission denied' >&2; exit 2", 1, `--sign-command failed (exit status 2): "permission denied"`},
		{"no signature", "echo signed", 2, "--sign-command printed no signature"},
	} {
		out, code := run(nil, "bundle", "sign", b, "--sign-command", c.command)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Fatalf("%s: %d\n%s", c.name, code, out)
		}
		unchanged(c.name)
	}
	if out, code := run(nil, "bundle", "sign", b, "--sign-command", fmt.Sprintf(viaStdin, key), "--key", key); code != 2 || !strings.Contains(out, "--key and --sign-command are all given") {
		t.Fatalf("a key and a signing command: %d\n%s", code, out)
	}

	// The bundle runs under what was signed: a refund within the limit
	// is paid, one above it is not covered by the capability.
	base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	store := "--store=sqlite:" + filepath.Join(dir, "flrh.db")
	dest := "--destination=" + base + "/v1/effects"
	input := func(id string, amount int) string {
		return fmt.Sprintf(`{"type":"refund.requested/1","payload":{"refund_id":%q,"amount":%d,"payee":"alice","reason":"damaged item"}}`, id, amount)
	}
	if out, code := run(nil, "run", "start", b, "--id", "small", "--input-json", input("r-1", 40), store, dest); code != 0 || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("a refund within the signed limit: %d\n%s", code, out)
	}
	if out, code := run(nil, "run", "start", b, "--id", "over", "--input-json", input("r-2", 501), store, dest); !strings.Contains(out, "amount = 501 exceeds the limit 500") {
		t.Fatalf("a refund above the signed limit: %d\n%s", code, out)
	}
	if n := len(mutations(t, base)); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}

	// Rotation: the manifest names the new key, and the chains signed
	// under the old one are signed again under it.
	setOperatorKey(otherPub)
	if out, code := run(nil, "bundle", "check", b); code != 1 || !strings.Contains(out, "UNTRUSTED_KEY") {
		t.Fatalf("check after the manifest names a new key: %d\n%s", code, out)
	}
	if out, code := run(nil, "bundle", "sign", b, "--key", other); code != 0 || strings.Contains(out, "unchanged") || !strings.Contains(out, "under ed25519:"+otherPub) {
		t.Fatalf("sign under the new key: %d\n%s", code, out)
	}
	rotated, _ := os.ReadFile(caps)
	if bytes.Contains(rotated, []byte(pub)) || !bytes.Contains(rotated, []byte(otherPub)) || !bytes.Contains(rotated, []byte(`"amount":500`)) {
		t.Fatalf("rotated capabilities:\n%s", rotated)
	}
}

// flrh bundle init starts a bundle from an embedded example with the
// user's own key, from a key file or from a signing command and the
// public key; what it cannot do it refuses, writing nothing.
func TestBundleInitOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is needed to stand for a key service: install it")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "op.pem")
	out, err := flrh(bin, nil, "bundle", "key", "new", key, "--json")
	var k operatorKeyReport
	if err != nil || json.Unmarshal([]byte(out), &k) != nil {
		t.Fatalf("key new: %v\n%s", err, out)
	}
	signCmd := `t=$(mktemp); cat >"$t"; openssl pkeyutl -sign -rawin -inkey ` + key + ` -in "$t"; rm -f "$t"`
	for _, c := range []struct {
		name string
		args []string
	}{
		{"key", []string{"--key", key}},
		{"sign-command", []string{"--sign-command", signCmd, "--operator-key", k.OperatorKey}},
	} {
		b := filepath.Join(dir, "bundle-"+c.name)
		out, err := flrh(bin, nil, append([]string{"bundle", "init", b, "--example", "refund-agent", "--json"}, c.args...)...)
		var rep initReport
		if err != nil || json.Unmarshal([]byte(out), &rep) != nil || !rep.Bundle.OK || rep.OperatorKey != k.OperatorKey || len(rep.Files) != 6 {
			t.Fatalf("init with %s: %v\n%s", c.name, err, out)
		}
		if out, err := flrh(bin, nil, "bundle", "check", b); err != nil || !strings.Contains(out, "ok   "+b+": refund-agent@1") {
			t.Fatalf("check: %v\n%s", err, out)
		}
		// The example's policy tests came along, and pass under the new key.
		if out, err := flrh(bin, nil, "bundle", "test", b); err != nil || !strings.Contains(out, "12 cases, 0 failed") {
			t.Fatalf("test: %v\n%s", err, out)
		}
		if wf, _ := os.ReadFile(filepath.Join(b, "workflow.json")); !strings.Contains(string(wf), `"operator_key": "`+k.OperatorKey+`"`) {
			t.Fatalf("the manifest does not trust the new key:\n%s", wf)
		}
	}
	// Both ways wrote the same bytes: signing is deterministic.
	for _, f := range []string{"capabilities.json", "workflow.json"} {
		a, _ := os.ReadFile(filepath.Join(dir, "bundle-key", f))
		b, _ := os.ReadFile(filepath.Join(dir, "bundle-sign-command", f))
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs between a key file and a signing command", f)
		}
	}
	other := filepath.Join(dir, "other.pem")
	if out, err := flrh(bin, nil, "bundle", "key", "new", other); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	target := filepath.Join(dir, "refused")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--example", "refund-agent", "--sign-command", signCmd}, "--operator-key HEX is required"},
		{[]string{"--example", "refund-agent", "--key", other, "--operator-key", k.OperatorKey}, "is not the key's public key"},
		{[]string{"--example", "refund-agent", "--sign-command", strings.Replace(signCmd, key, other, 1), "--operator-key", k.OperatorKey}, "KEY_MISMATCH"},
		{[]string{"--example", "nope", "--key", key}, `no example bundle "nope"`},
		{[]string{"--key", key}, "--example NAME is required"},
		{[]string{"--example", "refund-agent", "--key", key, "--operator-key", "abc"}, "--operator-key must be a hex Ed25519 public key"},
	} {
		out, err := flrh(bin, nil, append([]string{"bundle", "init", target}, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("init %s: %v\n%s", strings.Join(c.args, " "), err, out)
		}
		if _, err := os.Stat(target); err == nil {
			t.Fatalf("init %s left %s", strings.Join(c.args, " "), target)
		}
	}
	if out, err := flrh(bin, nil, "bundle", "init", filepath.Join(dir, "bundle-key"), "--example", "ops-agent", "--key", key); err == nil || !strings.Contains(out, "exists") {
		t.Fatalf("init over a bundle: %v\n%s", err, out)
	}
}
