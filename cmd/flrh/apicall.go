package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// apiCall sends body (none when empty) to path at the server with
// method, as an operator's command does, and prints the answer; a
// refusal is exit status 1. The bearer token is read from the variable
// tokenEnv names, never from the command line.
func apiCall(cmd *cobra.Command, method, url, tokenEnv, path, body string) error {
	req, err := apiRequest(cmd, method, url, tokenEnv, path, body)
	if err != nil {
		return err
	}
	return printAnswer(cmd, req)
}

// apiRequest is the request apiCall sends.
func apiRequest(cmd *cobra.Command, method, url, tokenEnv, path, body string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(cmd.Context(), method, strings.TrimSuffix(url, "/")+path, strings.NewReader(body))
	if err != nil {
		return nil, usagef("--url: %v", err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok := os.Getenv(tokenEnv); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return req, nil
}

// printAnswer sends req and prints the answer's status and body; a
// refusal is exit status 1.
func printAnswer(cmd *cobra.Command, req *http.Request) error {
	a, err := send(req)
	if err != nil {
		return err
	}
	return a.print(cmd)
}

// answer is a server's answer to an operator's command.
type answer struct {
	code   int
	status string
	body   []byte
}

// send sends req and reads its answer.
func send(req *http.Request) (answer, error) {
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return answer{code: resp.StatusCode, status: resp.Status, body: body}, nil
}

// print prints the answer's status and body; a refusal is exit status 1.
func (a answer) print(cmd *cobra.Command) error {
	fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s\n", a.status, prettyJSON(a.body))
	if a.code >= 300 {
		return errChecksFailed
	}
	return nil
}

// addServerFlags gives each operator command --url and --token-env,
// bound to url and tokenEnv.
func addServerFlags(url, tokenEnv *string, cmds ...*cobra.Command) {
	for _, c := range cmds {
		c.Flags().StringVar(url, "url", "http://127.0.0.1:7700", "the server's address")
		c.Flags().StringVar(tokenEnv, "token-env", "FLRH_TOKEN", "the environment variable holding the bearer token (an operator's)")
	}
}
