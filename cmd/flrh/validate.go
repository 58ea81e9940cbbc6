package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/kernel"
	"flrh.dev/flrh/protocol"
)

// kernelSchemas are the kernel result and snapshot shapes validate also
// accepts as KIND; they are checked against the kernel schema only.
var kernelSchemas = []string{
	kernel.SchemaSnapshot, kernel.SchemaObservationSnapshot, kernel.SchemaObservationEvent,
	kernel.SchemaObservationInput, kernel.SchemaTransition, kernel.SchemaRejection,
	domainKind,
}

// domainKind names a declarative domain configuration (flrh-domain/1).
const domainKind = "Domain"

// maxWireObjectBytes bounds one wire object read from a file.
const maxWireObjectBytes = 8 << 20

func init() {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [KIND] FILE...",
		Short: "Check wire objects (events, deltas, proposals, intents, receipts…) against protocol v1",
		Long: "validate checks that each FILE holds one valid protocol v1 wire object: strict canonical\n" +
			"JSON (no floats, NFC strings, no duplicate keys or set elements), the closed schema of its\n" +
			"kind, and the cross-field rules (approval bindings, authority-owned members, equivalence\n" +
			"claims, batch stability). With KIND every file must be of that kind; without it the kind is\n" +
			"read from each object's \"kind\" member. FILE - reads standard input.\n\n" +
			"Kinds: " + strings.Join(protocol.Kinds, ", ") + ".\n" +
			"Kernel shapes (KIND required): " + strings.Join(kernelSchemas[:len(kernelSchemas)-1], ", ") + ".\n" +
			"Domain (KIND required) checks a declarative domain configuration (flrh-domain/1).\n\n" +
			"Each valid object is reported with its canonical digest; each invalid one with the error\n" +
			"code and the JSON Pointer of the offending value.\n\n" +
			"Exit status: 0 when every object is valid, 1 when any is not, 2 when a file cannot be read\n" +
			"or KIND is unknown.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := ""
			if protocol.KnownKind(args[0]) || slices.Contains(kernelSchemas, args[0]) {
				kind, args = args[0], args[1:]
				if len(args) == 0 {
					return usagef("validate: no FILE after kind %s", kind)
				}
			} else if _, err := os.Stat(args[0]); err != nil && args[0] != "-" && (looksLikeKind(args[0]) || len(args) > 1 && !strings.ContainsAny(args[0], "./\\")) {
				// A lower-case kind ("event") is not a file either: say
				// which kind was meant instead of failing to open it.
				all := append(append(slices.Clone(protocol.Kinds), kernelSchemas...), domainKind)
				for _, k := range all {
					if strings.EqualFold(k, args[0]) {
						return usagef("validate: unknown kind %q; kinds are spelled as in the protocol: %s", args[0], k)
					}
				}
				return usagef("validate: unknown kind %q (kinds: %s)", args[0], strings.Join(protocol.Kinds, ", "))
			}
			type report struct {
				File    string `json:"file"`
				Kind    string `json:"kind,omitempty"`
				Valid   bool   `json:"valid"`
				Digest  string `json:"digest,omitempty"`
				Code    string `json:"code,omitempty"`
				Pointer string `json:"pointer,omitempty"`
				Detail  string `json:"detail,omitempty"`
			}
			var reports []report
			failed := 0
			for _, path := range args {
				text, err := readWireFile(cmd.InOrStdin(), path)
				if err != nil {
					return usagef("validate: %s: %v", path, err)
				}
				r := report{File: path, Kind: kind}
				if r.Kind == "" {
					r.Kind, err = protocol.KindOf(text)
				}
				if err == nil {
					if r.Kind == domainKind {
						_, err = kernel.Load(text)
					} else if slices.Contains(kernelSchemas, r.Kind) {
						err = kernel.Validate(r.Kind, text)
					} else {
						err = protocol.Validate(r.Kind, text)
					}
				}
				if err == nil {
					canon, cerr := cjson.Canonicalize(text)
					if cerr != nil {
						err = cerr
					} else {
						r.Valid, r.Digest = true, cjson.Digest(canon)
					}
				}
				if err != nil {
					failed++
					var pe *protocol.Error
					var ce *cjson.Error
					var de *kernel.ConfigError
					switch {
					case errors.As(err, &de):
						r.Code, r.Pointer, r.Detail = "INVALID_DOMAIN", de.Pointer, de.Detail
					case errors.As(err, &pe):
						r.Code, r.Pointer, r.Detail = pe.Code, pe.Pointer, pe.Detail
					case errors.As(err, &ce):
						r.Code, r.Pointer, r.Detail = string(ce.Code), ce.Pointer, ce.Detail
					default:
						r.Code, r.Pointer, r.Detail = protocol.CodeSchema, "/", strings.Join(strings.Fields(err.Error()), " ")
					}
				}
				reports = append(reports, r)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(reports); err != nil {
					return err
				}
			} else {
				for _, r := range reports {
					if r.Valid {
						fmt.Fprintf(out, "ok    %s  %s  %s\n", r.File, r.Kind, r.Digest)
					} else {
						kind := r.Kind
						if kind == "" {
							kind = "?"
						}
						fmt.Fprintf(out, "FAIL  %s  %s  %s at %s: %s\n", r.File, kind, r.Code, r.Pointer, r.Detail)
					}
				}
				fmt.Fprintf(out, "%d valid, %d invalid\n", len(reports)-failed, failed)
			}
			if failed > 0 {
				return errChecksFailed
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON report per file instead of text")
	rootCmd.AddCommand(cmd)
}

// looksLikeKind tells a mistyped kind (PascalCase, no path characters)
// from a file name that does not exist.
func looksLikeKind(s string) bool {
	return s != "" && s[0] >= 'A' && s[0] <= 'Z' && !strings.ContainsAny(s, "./\\")
}

func readWireFile(stdin io.Reader, path string) ([]byte, error) {
	var r io.Reader = stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxWireObjectBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxWireObjectBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxWireObjectBytes)
	}
	return b, nil
}
