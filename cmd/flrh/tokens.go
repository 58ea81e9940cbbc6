package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/internal/atomicfile"
	"flrh.dev/flrh/server"
)

// tokenPrefix starts every token flrh tokens add makes, so that a token
// pasted where it should not be (a chat, a commit) is recognisable to a
// person and to a secret scanner.
const tokenPrefix = "flrh_"

// tokenEntry is one entry of a token file, as written (server.ParseTokens
// is what reads it for the server).
type tokenEntry struct {
	Actor       string   `json:"actor"`
	Roles       []string `json:"roles"`
	Token       string   `json:"token,omitempty"`
	TokenSHA256 string   `json:"token_sha256,omitempty"`
	ExpiresAt   string   `json:"expires_at,omitempty"`
	Workflows   []string `json:"workflows,omitempty"`
	Rate        string   `json:"rate,omitempty"`
	Burst       int      `json:"burst,omitempty"`
}

// expired reports whether the entry's token is refused at now.
func (e tokenEntry) expired(now time.Time) bool {
	t, err := time.Parse(time.RFC3339, e.ExpiresAt)
	return err == nil && !now.Before(t)
}

// digest is the entry's token digest, hex, whichever way it is written.
func (e tokenEntry) digest() string {
	if e.Token != "" {
		d := sha256.Sum256([]byte(e.Token))
		return hex.EncodeToString(d[:])
	}
	return e.TokenSHA256
}

// readTokenFile reads a token file the server would accept; a file that
// is not there is no entries when missingOK.
func readTokenFile(path string, missingOK bool) ([]tokenEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && missingOK {
		return nil, nil
	}
	if err != nil {
		return nil, usagef("%v", err)
	}
	if _, err := server.ParseTokens(b); err != nil {
		return nil, usagef("%s: %v", path, err)
	}
	var f struct {
		Tokens []tokenEntry `json:"tokens"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, usagef("%s: %v", path, err)
	}
	return f.Tokens, nil
}

// writeTokenFile replaces the token file with entries, one a line, after
// checking that the server accepts what is written. A file made here is
// readable by its owner alone.
func writeTokenFile(path string, entries []tokenEntry) error {
	var b bytes.Buffer
	b.WriteString("{\"tokens\": [\n")
	for i, e := range entries {
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		b.WriteString("  ")
		b.Write(line)
		if i < len(entries)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	if _, err := server.ParseTokens(b.Bytes()); err != nil {
		return usagef("%v", err)
	}
	mode := os.FileMode(0)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		mode = 0o600
	}
	return atomicfile.Replace(path, b.Bytes(), mode)
}

// newToken makes a token: the prefix and 32 random bytes, base64url.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// tokenView is an entry as flrh tokens lists it: never the token.
type tokenView struct {
	Actor  string   `json:"actor"`
	Roles  []string `json:"roles"`
	Digest string   `json:"token_sha256"`
	// InClear is set for a token the file holds in clear (flrh tokens
	// hash keeps only its digest).
	InClear bool `json:"in_clear,omitempty"`
	// ExpiresAt is when the token is refused from, Expired whether that
	// has come.
	ExpiresAt string `json:"expires_at,omitempty"`
	Expired   bool   `json:"expired,omitempty"`
	// Workflows are the only workflows the token sees, when it is scoped.
	Workflows []string `json:"workflows,omitempty"`
	// Rate and Burst are the token's own rate, when it has one.
	Rate  string `json:"rate,omitempty"`
	Burst int    `json:"burst,omitempty"`
}

type tokenViews []tokenView

func viewsOf(entries []tokenEntry, now time.Time) tokenViews {
	out := make(tokenViews, len(entries))
	for i, e := range entries {
		out[i] = tokenView{Actor: e.Actor, Roles: e.Roles, Digest: e.digest(), InClear: e.Token != "",
			ExpiresAt: e.ExpiresAt, Expired: e.expired(now), Workflows: e.Workflows, Rate: e.Rate, Burst: e.Burst}
	}
	return out
}

func (vs tokenViews) print(w io.Writer) {
	for _, v := range vs {
		note := ""
		switch {
		case v.Expired:
			note += "  expired " + v.ExpiresAt
		case v.ExpiresAt != "":
			note += "  expires " + v.ExpiresAt
		}
		if v.Workflows != nil {
			note += "  workflows " + strings.Join(v.Workflows, ",")
		}
		if v.Rate != "" {
			note += "  rate " + v.Rate
			if v.Burst != 0 {
				note += fmt.Sprintf(" (burst %d)", v.Burst)
			}
		}
		if v.InClear {
			note += "  (in clear: flrh tokens hash keeps its digest only)"
		}
		fmt.Fprintf(w, "%-20s %-24s sha256:%s…%s\n", v.Actor, strings.Join(v.Roles, ","), v.Digest[:12], note)
	}
	fmt.Fprintf(w, "%d tokens\n", len(vs))
}

// addedToken is what flrh tokens add prints: the token, once.
type addedToken struct {
	File      string   `json:"file"`
	Actor     string   `json:"actor"`
	Roles     []string `json:"roles"`
	Token     string   `json:"token"`
	Digest    string   `json:"token_sha256"`
	ExpiresAt string   `json:"expires_at,omitempty"`
	Workflows []string `json:"workflows,omitempty"`
}

func (a addedToken) print(w io.Writer) {
	fmt.Fprintf(w, "token for %s (%s): %s\n", a.Actor, strings.Join(a.Roles, ","), a.Token)
	fmt.Fprintf(w, "shown once: %s keeps its SHA-256 (sha256:%s…) only\n", a.File, a.Digest[:12])
	if a.ExpiresAt != "" {
		fmt.Fprintf(w, "refused from %s on\n", a.ExpiresAt)
	}
	if a.Workflows != nil {
		fmt.Fprintf(w, "it sees the runs of %s alone\n", strings.Join(a.Workflows, ", "))
	}
	fmt.Fprintf(w, "a running flrh serve --tokens %s takes it on SIGHUP\n", a.File)
}

// removedTokens is what flrh tokens revoke and hash did.
type removedTokens struct {
	File    string     `json:"file"`
	Removed tokenViews `json:"removed,omitempty"`
	Hashed  int        `json:"hashed,omitempty"`
	Left    int        `json:"left"`
}

func (r removedTokens) print(w io.Writer) {
	for _, v := range r.Removed {
		fmt.Fprintf(w, "revoked %s (%s) sha256:%s…\n", v.Actor, strings.Join(v.Roles, ","), v.Digest[:12])
	}
	if r.Hashed > 0 {
		fmt.Fprintf(w, "%d tokens kept as their SHA-256 only\n", r.Hashed)
	}
	fmt.Fprintf(w, "%s: %d tokens; a running flrh serve takes the file on SIGHUP\n", r.File, r.Left)
}

func init() {
	cmd := &cobra.Command{Use: "tokens", Short: "Make, list and revoke the bearer tokens flrh serve authenticates callers with",
		Long: `tokens edits a token file (flrh serve --tokens FILE): who may call the server,
under which actor name and with which roles (viewer, agent, operator,
approver, reconciler; see docs/server.md). Each edit is checked to be a
file the server reads, and replaces the file whole. A running flrh serve
reads the file again on SIGHUP (and with --reload-adapters-every, when it
changes): a token added works, a revoked one is refused, and the event
streams it opened end.`}
	add := &cobra.Command{Use: "add FILE --actor NAME --role ROLE...",
		Short: "Make a token for a person or an agent and add its digest to FILE (made if missing); print the token once",
		Args:  cobra.ExactArgs(1)}
	actor := add.Flags().String("actor", "", "who the token authenticates: the name runs record (one name a person)")
	roles := add.Flags().StringSlice("role", nil, "a role the token grants (repeat, or comma-separate): viewer, agent, operator, approver, reconciler")
	expires := add.Flags().String("expires", "", "refuse the token once this long has passed: a duration (90m, 12h) or days (30d); default: never")
	workflows := add.Flags().StringSlice("workflow", nil, "a workflow whose runs the token sees and acts on, it alone with the others named (repeat, or comma-separate); default: every workflow")
	rate := add.Flags().String("rate", "", "hold the token's actor to this rate rather than the server's --rate-limit: COUNT/UNIT with the unit s, m or h (2/s, 600/m), or none")
	burst := add.Flags().Int("burst", 0, "with --rate: how many requests at once (default the rate's count)")
	addJSON := add.Flags().Bool("json", false, "print JSON")
	add.RunE = func(cmd *cobra.Command, args []string) error {
		if *actor == "" || len(*roles) == 0 {
			return usagef("--actor and at least one --role are required")
		}
		entries, err := readTokenFile(args[0], true)
		if err != nil {
			return err
		}
		tok, err := newToken()
		if err != nil {
			return err
		}
		e := tokenEntry{Actor: *actor, Roles: slices.Compact(slices.Sorted(slices.Values(*roles))), TokenSHA256: tokenEntry{Token: tok}.digest()}
		if len(*workflows) > 0 {
			e.Workflows = slices.Compact(slices.Sorted(slices.Values(*workflows)))
		}
		if *burst != 0 && *rate == "" {
			return usagef("--burst needs --rate")
		}
		e.Rate, e.Burst = *rate, *burst
		if *expires != "" {
			d, err := parseLifetime(*expires)
			if err != nil {
				return usagef("--expires: %v", err)
			}
			e.ExpiresAt = time.Now().Add(d).UTC().Format(time.RFC3339)
		}
		if err := writeTokenFile(args[0], append(entries, e)); err != nil {
			return err
		}
		return finishReport(cmd.OutOrStdout(), *addJSON, addedToken{File: args[0], Actor: e.Actor, Roles: e.Roles, Token: tok, Digest: e.TokenSHA256, ExpiresAt: e.ExpiresAt, Workflows: e.Workflows}, nil, false)
	}
	list := &cobra.Command{Use: "list FILE", Short: "List who FILE's tokens authenticate, and their digests (never a token)", Args: cobra.ExactArgs(1)}
	listJSON := list.Flags().Bool("json", false, "print JSON")
	list.RunE = func(cmd *cobra.Command, args []string) error {
		entries, err := readTokenFile(args[0], false)
		if err != nil {
			return err
		}
		return finishReport(cmd.OutOrStdout(), *listJSON, viewsOf(entries, time.Now()), nil, false)
	}
	revoke := &cobra.Command{Use: "revoke FILE --actor NAME | --digest PREFIX | --expired",
		Short: "Remove an actor's tokens, the one token whose digest starts with PREFIX, or the expired ones, from FILE",
		Args:  cobra.ExactArgs(1)}
	revActor := revoke.Flags().String("actor", "", "revoke every token of this actor")
	revDigest := revoke.Flags().String("digest", "", "revoke the token whose SHA-256 (hex, as flrh tokens list shows it) starts with this; at least 8 digits")
	revExpired := revoke.Flags().Bool("expired", false, "revoke every token whose expires_at has come")
	revJSON := revoke.Flags().Bool("json", false, "print JSON")
	revoke.RunE = func(cmd *cobra.Command, args []string) error {
		given := 0
		for _, g := range []bool{*revActor != "", *revDigest != "", *revExpired} {
			if g {
				given++
			}
		}
		if given != 1 {
			return usagef("give --actor, --digest or --expired, one of them")
		}
		prefix := strings.TrimPrefix(strings.ToLower(*revDigest), "sha256:")
		if *revDigest != "" && len(prefix) < 8 {
			return usagef("--digest: give at least 8 hex digits of the token's SHA-256")
		}
		entries, err := readTokenFile(args[0], false)
		if err != nil {
			return err
		}
		now := time.Now()
		var kept, gone []tokenEntry
		for _, e := range entries {
			if (*revActor != "" && e.Actor == *revActor) || (prefix != "" && strings.HasPrefix(e.digest(), prefix)) || (*revExpired && e.expired(now)) {
				gone = append(gone, e)
			} else {
				kept = append(kept, e)
			}
		}
		switch {
		case len(gone) == 0 && *revActor != "":
			return usagef("%s holds no token of actor %s", args[0], *revActor)
		case len(gone) == 0 && *revExpired:
			return usagef("%s holds no expired token", args[0])
		case len(gone) == 0:
			return usagef("%s holds no token whose digest starts with %s", args[0], prefix)
		case prefix != "" && len(gone) > 1:
			return usagef("%d tokens' digests start with %s: give more digits", len(gone), prefix)
		case len(kept) == 0:
			return usagef("that would leave %s with no token, which flrh serve refuses; add another first", args[0])
		}
		if err := writeTokenFile(args[0], kept); err != nil {
			return err
		}
		return finishReport(cmd.OutOrStdout(), *revJSON, removedTokens{File: args[0], Removed: viewsOf(gone, now), Left: len(kept)}, nil, false)
	}
	hash := &cobra.Command{Use: "hash FILE", Short: "Keep only the SHA-256 of every token FILE holds in clear", Args: cobra.ExactArgs(1)}
	hashJSON := hash.Flags().Bool("json", false, "print JSON")
	hash.RunE = func(cmd *cobra.Command, args []string) error {
		entries, err := readTokenFile(args[0], false)
		if err != nil {
			return err
		}
		n := 0
		for i, e := range entries {
			if e.Token != "" {
				entries[i].TokenSHA256, entries[i].Token = e.digest(), ""
				n++
			}
		}
		if n > 0 {
			if err := writeTokenFile(args[0], entries); err != nil {
				return err
			}
		}
		return finishReport(cmd.OutOrStdout(), *hashJSON, removedTokens{File: args[0], Hashed: n, Left: len(entries)}, nil, false)
	}
	cmd.AddCommand(add, list, revoke, hash)
	rootCmd.AddCommand(cmd)
}

// parseLifetime reads a token's lifetime: a Go duration (90m, 12h) or a
// number of days (30d), at least a minute and at most ten years.
func parseLifetime(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		n, nerr := strconv.Atoi(days)
		if nerr != nil || n < 0 || n > 3660 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		d, err = time.Duration(n)*24*time.Hour, nil
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (90m, 12h) or a number of days (30d)", s)
	case d < time.Minute || d > 3660*24*time.Hour:
		return 0, fmt.Errorf("%s is not from a minute to ten years", s)
	}
	return d, nil
}

// tokenReload reads flrh serve's token file again and puts it in place
// (server.SetTokens): on SIGHUP, and when the file changes.
func tokenReload(file string, srv *server.Server) fileReload {
	return fileReload{what: "tokens", file: file, apply: func() (int, error) {
		b, err := os.ReadFile(file)
		if err != nil {
			return 0, err
		}
		tk, err := server.ParseTokens(b)
		if err == nil {
			err = srv.SetTokens(tk)
		}
		if err != nil {
			return 0, err
		}
		return tk.Len(), nil
	}}
}
