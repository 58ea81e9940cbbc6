package main

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/examples"
	"flrh.dev/flrh/workflow"
)

// operatorKeyFileEnv and operatorKeyCommandEnv give the operator key to
// flrh bundle sign and flrh bundle key public when no flag does;
// operatorSignCommandEnv names a command that signs with it, to flrh
// bundle sign.
const (
	operatorKeyFileEnv     = "FLRH_OPERATOR_KEY_FILE"
	operatorKeyCommandEnv  = "FLRH_OPERATOR_KEY_COMMAND"
	operatorSignCommandEnv = "FLRH_OPERATOR_SIGN_COMMAND"
)

// signMessageEnv holds, for a signing command, what it is to sign (it is
// on its standard input too).
const signMessageEnv = "FLRH_SIGN_MESSAGE"

// operatorKeyFlags are the flags naming where an operator key is read, or
// (signing) which command signs with it.
type operatorKeyFlags struct {
	file, command, signCommand string
	signing                    bool // --sign-command is one of the flags
}

func (f *operatorKeyFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.file, "key", "", "the operator's private key: a PEM PKCS#8 Ed25519 key file, mode 0600 (flrh bundle key new, or openssl genpkey -algorithm ed25519, writes one); default: "+operatorKeyFileEnv+" if set")
	cmd.Flags().StringVar(&f.command, "key-command", "", "run this shell command and read the key from what it prints, in the key file's format (a key service's or a password manager's CLI: nothing written to disk); default: "+operatorKeyCommandEnv+" if set")
}

// addSigning adds --sign-command too: a key that never leaves its key
// service signs there.
func (f *operatorKeyFlags) addSigning(cmd *cobra.Command) {
	f.add(cmd)
	f.signing = true
	cmd.Flags().StringVar(&f.signCommand, "sign-command", "", "run this shell command once a capability to sign it with a key that stays in its key service or hardware module: it gets the message on standard input and in "+signMessageEnv+", and prints the Ed25519 signature (64 bytes, 128 hex digits, or base64); default: "+operatorSignCommandEnv+" if set")
}

// read returns the operator key from the one source given (a flag or a
// variable; more than one is refused rather than guessed at). A key file
// inside the bundle directory dir (when dir is not "") is refused: it
// would travel with the bundle.
func (f operatorKeyFlags) read(dir string) (crypto.Signer, error) {
	sources := []keySource{
		{"--key", f.file}, {"--key-command", f.command},
		{operatorKeyFileEnv, os.Getenv(operatorKeyFileEnv)}, {operatorKeyCommandEnv, os.Getenv(operatorKeyCommandEnv)},
	}
	if f.signing {
		sources = append(sources, keySource{"--sign-command", f.signCommand}, keySource{operatorSignCommandEnv, os.Getenv(operatorSignCommandEnv)})
	}
	src, err := oneSource("are all given; give one source of the operator key", sources...)
	if err != nil {
		return nil, err
	}
	switch src.name {
	case "":
		return nil, usagef("no operator key: give --key FILE or --key-command CMD (or set %s or %s)", operatorKeyFileEnv, operatorKeyCommandEnv)
	case "--sign-command", operatorSignCommandEnv:
		return commandSigner(src), nil
	case "--key-command", operatorKeyCommandEnv:
		out, err := commandOutput(src.name, src.value, "")
		if err != nil {
			return nil, err
		}
		k, err := parseOperatorKey([]byte(out))
		if err != nil {
			return nil, usagef("%s printed no operator key: %v", src.name, err)
		}
		return k, nil
	}
	if dir != "" && within(src.value, dir) {
		return nil, usagef("%s %s is inside the bundle %s: a private key must not travel with the bundle; move it out", src.name, src.value, dir)
	}
	b, err := readSecretFile(src)
	if err != nil {
		return nil, err
	}
	k, err := parseOperatorKey(b)
	if err != nil {
		return nil, usagef("%s %s: %v", src.name, src.value, err)
	}
	return k, nil
}

// commandSigner signs with a key that stays where it is (a key service, a
// hardware module): the command is run once a message, which it gets on
// standard input and in FLRH_SIGN_MESSAGE, and prints the signature. It
// knows no public key: what it signs is checked against the bundle's.
type commandSigner keySource

func (c commandSigner) Public() crypto.PublicKey { return nil }

func (c commandSigner) Sign(_ io.Reader, message []byte, _ crypto.SignerOpts) ([]byte, error) {
	out, err := commandOutput(c.name, c.value, string(message))
	if err != nil {
		return nil, err
	}
	sig, err := parseSignature([]byte(out))
	if err != nil {
		return nil, usagef("%s printed no signature: %v", c.name, err)
	}
	return sig, nil
}

// parseSignature reads an Ed25519 signature as a signing command prints
// it: its 64 bytes raw, or 128 hex digits, or base64 (standard or URL,
// padded or not), blank space around it ignored. The three cannot be
// confused: hex is 128 characters long and base64 86 to 88.
func parseSignature(out []byte) ([]byte, error) {
	if len(out) == ed25519.SignatureSize {
		return out, nil
	}
	t := strings.TrimSpace(string(out))
	if b, err := hex.DecodeString(t); err == nil && len(b) == ed25519.SignatureSize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(t); err == nil && len(b) == ed25519.SignatureSize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%d bytes that are not an Ed25519 signature (64 bytes raw, 128 hex digits, or base64)", len(out))
}

// within reports whether file lies in directory dir.
func within(file, dir string) bool {
	f, err1 := filepath.Abs(file)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, filepath.Dir(f))
	return err == nil && rel == "."
}

// parseOperatorKey reads an Ed25519 private key written as one PEM
// "PRIVATE KEY" block (PKCS#8), as flrh bundle key new and openssl
// genpkey -algorithm ed25519 write it; nothing but blank space may
// surround it.
func parseOperatorKey(b []byte) (ed25519.PrivateKey, error) {
	block, rest := pem.Decode(b)
	switch {
	case block == nil:
		return nil, errors.New("not a PEM key: a PRIVATE KEY block (PKCS#8 Ed25519) is expected")
	case len(strings.TrimSpace(string(rest))) > 0:
		return nil, errors.New("more than one PEM block: one PRIVATE KEY block is expected")
	case block.Type == "ENCRYPTED PRIVATE KEY":
		return nil, errors.New("an encrypted key: give it through --key-command, by a command that decrypts it (openssl pkey -in FILE)")
	case block.Type != "PRIVATE KEY":
		return nil, fmt.Errorf("a PEM %s block: a PRIVATE KEY block (PKCS#8 Ed25519) is expected", block.Type)
	case len(block.Headers) > 0:
		return nil, errors.New("a PEM block with headers: a plain PRIVATE KEY block is expected")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKCS#8 private key: %v", err)
	}
	ed, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T: an operator key is Ed25519", k)
	}
	return ed, nil
}

// encodeOperatorKey writes key as parseOperatorKey reads it.
func encodeOperatorKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// operatorKeyReport is what flrh bundle key prints of a key.
type operatorKeyReport struct {
	File        string `json:"file,omitempty"` // the file written, by key new
	OperatorKey string `json:"operator_key"`   // hex, for the manifest
	KeyID       string `json:"key_id"`         // as signed capabilities name it
}

func newOperatorKeyReport(file string, key ed25519.PrivateKey) operatorKeyReport {
	pub := key.Public().(ed25519.PublicKey)
	return operatorKeyReport{File: file, OperatorKey: hex.EncodeToString(pub), KeyID: authority.KeyID(pub)}
}

func (r operatorKeyReport) print(w io.Writer) {
	if r.File != "" {
		fmt.Fprintf(w, "wrote a new operator key to %s (mode 0600); keep it secret and out of every bundle\n", r.File)
		fmt.Fprintf(w, "name it in the bundle's manifest:\n")
	}
	fmt.Fprintf(w, "operator_key: %s\n", r.OperatorKey)
}

// signReport is what flrh bundle sign did, and the bundle check after.
type signReport struct {
	File      string       `json:"file"`
	Unchanged bool         `json:"unchanged"`
	KeyID     string       `json:"key_id"`
	Chains    int          `json:"chains"`
	Links     int          `json:"capabilities"`
	Bundle    bundleReport `json:"bundle"`
}

func (r signReport) print(w io.Writer) {
	verb := "signed"
	if r.Unchanged {
		verb = "signed (unchanged)"
	}
	fmt.Fprintf(w, "%s %s: %d chains, %d capabilities, under %s\n", verb, r.File, r.Chains, r.Links, r.KeyID)
	bundleReports{r.Bundle}.print(w)
}

func operatorKeyCommands() []*cobra.Command {
	key := &cobra.Command{Use: "key", Short: "Make an operator key, or show the public key a bundle names"}
	newKey := &cobra.Command{Use: "new FILE",
		Short: "Write a new Ed25519 operator key to FILE, and print the operator_key a bundle names it by",
		Long: `new writes a new Ed25519 private key to FILE (PEM PKCS#8, mode 0600; FILE
must not exist and must not be in a bundle directory) and prints its public
key, the operator_key a bundle's manifest names. The key signs the
bundle's capabilities (flrh bundle sign): whoever holds it decides what
the bundle's agents may be authorized to do. Keep it where the bundle is
not: a key service, a password manager, an operator's machine.

openssl genpkey -algorithm ed25519 writes a key in the same format.`,
		Args: cobra.ExactArgs(1)}
	newJSON := newKey.Flags().Bool("json", false, "print JSON")
	newKey.RunE = func(cmd *cobra.Command, args []string) error {
		path := args[0]
		if bundle.IsDir(filepath.Dir(path)) {
			return usagef("%s is a bundle directory: a private key must not travel with the bundle", filepath.Dir(path))
		}
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return err
		}
		b, err := encodeOperatorKey(key)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return usagef("%s exists: key new writes a new file, never over another key", path)
		}
		if err != nil {
			return usagef("%v", err)
		}
		_, err = f.Write(b)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return err
		}
		return finishReport(cmd.OutOrStdout(), *newJSON, newOperatorKeyReport(path, key), nil, false)
	}
	var pubFlags operatorKeyFlags
	public := &cobra.Command{Use: "public",
		Short: "Print the public key of an operator key: the operator_key a bundle names",
		Args:  cobra.NoArgs}
	pubFlags.add(public)
	pubJSON := public.Flags().Bool("json", false, "print JSON")
	public.RunE = func(cmd *cobra.Command, _ []string) error {
		k, err := pubFlags.read("")
		if err != nil {
			return err
		}
		return finishReport(cmd.OutOrStdout(), *pubJSON, newOperatorKeyReport("", k.(ed25519.PrivateKey)), nil, false)
	}
	key.AddCommand(newKey, public)

	var signFlags operatorKeyFlags
	sign := &cobra.Command{Use: "sign DIR",
		Short: "Sign a bundle's capabilities with its operator key",
		Long: `sign signs the capability chains of the bundle in DIR with the operator key
and writes them into the capabilities file its manifest names, then checks
the bundle as flrh bundle check does.

An operator writes each capability bare, in JSON or YAML:

  {"chains": [[{"id": "capability:refund.pay", "effect_type": "refund.pay",
                "destination": "dest:payments", "scopes": ["scope:refunds"],
                "limits": {"amount": 10000}, "not_before": 0, "expiry": 1099511627776}]]}

A chain is its root and, optionally, narrower capabilities after it (each
parented on the one before and refused if it widens it); limits and
not_before may be left out. Links signed before are signed again, so sign
is also how a capability is changed, added, or moved to a new key (set
operator_key to the new key first). The chains are read from the
capabilities file itself, or from --from FILE.

A key that must not leave its key service or hardware module signs there:
--sign-command runs a command once a capability, the message to sign on its
standard input and in FLRH_SIGN_MESSAGE, and reads the Ed25519 signature it
prints (64 bytes, 128 hex digits, or base64). With OpenSSL 3 and a key file:

  --sign-command 't=$(mktemp); cat >"$t"; openssl pkeyutl -sign -rawin -inkey op.pem -in "$t"; rm -f "$t"'

and with HashiCorp Vault's transit engine:

  --sign-command 'vault write -field=signature transit/sign/operator \
      input="$(printf %s "$FLRH_SIGN_MESSAGE" | base64 -w0)" | cut -d: -f3'

The key must be the one the manifest's operator_key names: a bundle signed
by a key it does not trust would not load (with --sign-command, every
signature is checked against operator_key). Nothing is written when anything
is refused; the file is replaced whole. Signing is deterministic: the same
chains and key give the same bytes, and the bundle's digest does not move.

Exit status: 0 when signed and the bundle compiles, 1 when the bundle does
not compile for another reason (the capabilities are signed all the same),
2 when nothing could be signed.`,
		Args: cobra.ExactArgs(1)}
	signFlags.addSigning(sign)
	from := sign.Flags().String("from", "", "read the capabilities to sign from this file (JSON, or YAML when named *.yaml) instead of the bundle's own")
	signJSON := sign.Flags().Bool("json", false, "print JSON")
	sign.RunE = func(cmd *cobra.Command, args []string) error {
		dir := args[0]
		if !bundle.IsDir(dir) {
			return usagef("%s is not a bundle directory", dir)
		}
		k, err := signFlags.read(dir)
		if err != nil {
			return err
		}
		s, err := bundle.Sign(dir, *from, k)
		if err != nil {
			return signingFailure(err)
		}
		rep := signReport{File: s.Path, Unchanged: s.Unchanged, KeyID: s.KeyID, Chains: s.Chains, Links: s.Links, Bundle: checkedDir(dir)}
		return finishReport(cmd.OutOrStdout(), *signJSON, rep, nil, !rep.Bundle.OK)
	}
	var initFlags operatorKeyFlags
	initCmd := &cobra.Command{Use: "init DIR --example NAME",
		Short: "Start a bundle of your own from an example the binary carries, trusting your operator key",
		Long: `init writes the example bundle NAME (` + strings.Join(examples.Names(), ", ") + `) into the new
directory DIR, as a start for a bundle of your own: its files as they are,
but for the manifest's operator_key, set to your key (the manifest's layout
kept), and its capabilities, signed again with it. The examples' own key is
derived from a public seed; a bundle made with init trusts your key alone.

The key is given as to flrh bundle sign: --key FILE, --key-command CMD, or
--sign-command CMD with --operator-key HEX (a command that signs knows no
public key). Edit the bundle, then flrh bundle sign it again after changing
its capabilities, and flrh bundle check it.`,
		Args: cobra.ExactArgs(1)}
	initFlags.addSigning(initCmd)
	example := initCmd.Flags().String("example", "", "the example to start from: "+strings.Join(examples.Names(), ", "))
	operatorKey := initCmd.Flags().String("operator-key", "", "the operator's public key, hex (flrh bundle key public prints it): required with --sign-command, checked against the key otherwise")
	initJSON := initCmd.Flags().Bool("json", false, "print JSON")
	initCmd.RunE = func(cmd *cobra.Command, args []string) error {
		dir := args[0]
		if *example == "" {
			return usagef("--example NAME is required (%s)", strings.Join(examples.Names(), ", "))
		}
		signer, err := initFlags.read("")
		if err != nil {
			return err
		}
		pub, _ := signer.Public().(ed25519.PublicKey)
		if *operatorKey != "" {
			given, herr := hex.DecodeString(*operatorKey)
			if herr != nil || len(given) != ed25519.PublicKeySize {
				return usagef("--operator-key must be a hex Ed25519 public key (%d bytes)", ed25519.PublicKeySize)
			}
			if pub != nil && !pub.Equal(ed25519.PublicKey(given)) {
				return usagef("--operator-key %s is not the key's public key %s", *operatorKey, hex.EncodeToString(pub))
			}
			pub = given
		}
		if pub == nil {
			return usagef("--operator-key HEX is required with a signing command: it knows no public key")
		}
		names, err := bundle.Init(*example, dir, pub, signer)
		if err != nil {
			return signingFailure(err)
		}
		rep := initReport{Dir: dir, Example: *example, Files: names, OperatorKey: hex.EncodeToString(pub), Bundle: checkedDir(dir)}
		return finishReport(cmd.OutOrStdout(), *initJSON, rep, nil, !rep.Bundle.OK)
	}
	return []*cobra.Command{key, sign, initCmd}
}

// signingFailure is the error a command that signs a bundle's
// capabilities ends with: a bundle or a key refused is a usage error (2),
// and so is anything else but a key service that failed to sign, a plain
// failure (1): it may answer later.
func signingFailure(err error) error {
	var we *workflow.Error
	var se *bundle.SignerError
	var ue usageError
	switch {
	case errors.As(err, &we):
		return usageError{err}
	case errors.As(err, &se) && !errors.As(err, &ue):
		return err
	}
	return usagef("%v", err)
}

// checkedDir is the check of the bundle in dir, as flrh bundle check
// reports it.
func checkedDir(dir string) bundleReport {
	w, a, err := bundle.Load(dir)
	return checkBundle(dir, w, a, err, false, bundle.OSEnv())
}

// initReport is what flrh bundle init wrote, and the bundle check after.
type initReport struct {
	Dir         string       `json:"dir"`
	Example     string       `json:"example"`
	Files       []string     `json:"files"`
	OperatorKey string       `json:"operator_key"`
	Bundle      bundleReport `json:"bundle"`
}

func (r initReport) print(w io.Writer) {
	fmt.Fprintf(w, "wrote %s from example %s: %s\n", r.Dir, r.Example, strings.Join(r.Files, ", "))
	fmt.Fprintf(w, "trusting operator_key %s; capabilities signed with it\n", r.OperatorKey)
	bundleReports{r.Bundle}.print(w)
}
