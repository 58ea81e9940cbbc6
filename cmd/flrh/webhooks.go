package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/server"
	"flrh.dev/flrh/webhook"
	"flrh.dev/flrh/yamljson"
)

// readConfig reads a configuration file with parse, as YAML when its
// name says so.
func readConfig[T any](file string, parse func(data []byte, yaml bool) (T, error)) (T, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		var zero T
		return zero, err
	}
	return parse(data, yamljson.Named(file))
}

// readWebhooks parses a webhooks file.
func readWebhooks(file string) ([]server.WebhookSpec, error) {
	return readConfig(file, server.ParseWebhooks)
}

// loadWebhooks reads a webhooks file and the secrets it names.
func loadWebhooks(file string) (*server.Webhooks, error) {
	specs, err := readWebhooks(file)
	if err != nil {
		return nil, err
	}
	return server.LoadWebhooks(specs, filepath.Dir(file), os.Getenv)
}

// webhookReload reads flrh serve's webhooks file and the secrets it names
// again and puts them in place (server.SetWebhooks): on SIGHUP, and when
// the file or a secret file it names changes. A sender rotating its
// secret is followed without a restart: list the new secret's file
// beside the old one, then drop the old.
func webhookReload(file string, srv *server.Server) fileReload {
	return fileReload{what: "webhooks", file: file,
		apply: func() (int, error) {
			w, err := loadWebhooks(file)
			if err == nil {
				err = srv.SetWebhooks(w)
			}
			if err != nil {
				return 0, err
			}
			return len(w.Names()), nil
		},
		fingerprint: func() [sha256.Size]byte { return webhooksDigest(file) },
	}
}

// webhooksDigest digests a webhooks file and the secret files it names.
func webhooksDigest(file string) [sha256.Size]byte {
	h := sha256.New()
	data, err := os.ReadFile(file)
	if err != nil {
		putFields(h, "error", err.Error())
	} else {
		putFields(h, "file", string(data))
		if specs, err := server.ParseWebhooks(data, yamljson.Named(file)); err == nil {
			for _, s := range specs {
				for _, f := range s.SecretFile {
					if !filepath.IsAbs(f) {
						f = filepath.Join(filepath.Dir(file), f)
					}
					b, err := os.ReadFile(f)
					putFields(h, "secret", f, string(b), fmt.Sprint(err))
				}
			}
		}
	}
	var fp [sha256.Size]byte
	h.Sum(fp[:0])
	return fp
}

func init() {
	var file string
	check := &cobra.Command{Use: "check",
		Short: "Check a webhooks file and the secrets it names, taking no delivery",
		Long: `check reads the webhooks file as flrh serve --webhooks would, with the
variables and files its secrets are in, and lists each webhook: its scheme,
how many secrets it holds, the events and workflow it acts on and the run
each delivery goes to. No store is opened and nothing is sent. Exit status 2
when the file is wrong or a secret is missing or unusable.`,
		Example: `  flrh webhook check --webhooks webhooks.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			specs, err := readWebhooks(file)
			if err == nil {
				_, err = server.LoadWebhooks(specs, filepath.Dir(file), os.Getenv)
			}
			if err != nil {
				return usagef("--webhooks %s: %v", file, err)
			}
			w := cmd.OutOrStdout()
			for _, s := range specs {
				events := "all"
				if len(s.Events) > 0 {
					events = strings.Join(s.Events, ", ")
				}
				start := "starting it when it does not exist"
				if s.Start != nil && !*s.Start {
					start = "only when it exists"
				}
				v, _ := server.WebhookKeys(s, filepath.Dir(file), os.Getenv) // read without error above
				keys := fmt.Sprintf("%d secrets", len(v.Secrets))
				if len(v.PublicKeys) > 0 {
					keys += fmt.Sprintf(", %d public keys", len(v.PublicKeys))
				}
				followUp := ""
				if len(s.Labels) > 0 {
					followUp += "; labelled " + label.String(s.Labels)
				}
				if s.Rate != "" {
					followUp += "; at most " + s.Rate
				}
				if s.FollowUp {
					followUp += "; the person who sent it told what becomes of the run"
				}
				fmt.Fprintf(w, "webhook %s: %s, %s; events %s; to run %s of %s, %s%s\n", s.Name, s.Scheme,
					keys, events, cmp.Or(s.RunID, "{$hook}-{$delivery}"), s.Workflow, start, followUp)
			}
			fmt.Fprintf(w, "flrh webhook check: %d webhooks, their secrets read\n", len(specs))
			return nil
		}}
	check.Flags().StringVar(&file, "webhooks", "", "the webhooks file (JSON or YAML), as flrh serve --webhooks takes")
	check.MarkFlagRequired("webhooks")

	var sendFile, url, bodyFile, id, event string
	send := &cobra.Command{Use: "send NAME",
		Short: "Sign a delivery as the webhook's sender would and post it to a server",
		Long: `send signs the body with the webhook's first secret, in its scheme
(timestamped now; a Linear body's webhookTimestamp is set to now), posts it
to URL/v1/hooks/NAME as JSON (as a form for Twilio, and for Slack when the
body is not JSON: a slash command's) and prints the answer: a way to try a
webhook, its templates and the run it makes before its sender is pointed
at flrh. The id is the delivery's (a Stripe or Slack event's is its body's
own); sending one again shows that a delivery is taken once. A webhook
holding its sender's public key (Standard Webhooks' whpk_, Discord's)
cannot sign. Exit status 1 when the server refuses the delivery.`,
		Example: `  flrh webhook send shop --webhooks webhooks.yaml --body refund.json --url http://127.0.0.1:7700
  flrh webhook send tracker --webhooks webhooks.yaml --body issue.json --event issues --id 7c1e`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, err := readWebhooks(sendFile)
			if err != nil {
				return usagef("--webhooks %s: %v", sendFile, err)
			}
			var spec *server.WebhookSpec
			for i := range specs {
				if specs[i].Name == args[0] {
					spec = &specs[i]
				}
			}
			if spec == nil {
				return usagef("--webhooks %s has no webhook %s", sendFile, args[0])
			}
			// The first secret alone (its first variable's, or its first
			// file's): a sender signs with the one it holds.
			first := *spec
			if len(first.SecretEnv) > 0 {
				first.SecretEnv, first.SecretFile = first.SecretEnv[:1], nil
			} else {
				first.SecretFile = first.SecretFile[:1]
			}
			keys, err := server.WebhookKeys(first, filepath.Dir(sendFile), os.Getenv)
			if err != nil {
				return usagef("%v", err)
			}
			if len(keys.Secrets) == 0 {
				return usagef("webhook %s holds its sender's public key, which verifies and cannot sign", spec.Name)
			}
			secret := keys.Secrets[0]
			body, err := os.ReadFile(bodyFile)
			if err != nil {
				return usagef("--body: %v", err)
			}
			if spec.Scheme == webhook.Linear {
				// Linear signs the time it sends in the body: a body kept in
				// a file is sent as of now, as Linear would send it.
				if body, err = stampLinear(body, time.Now()); err != nil {
					return usagef("--body: %v", err)
				}
			}
			if id == "" {
				id = "try-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			}
			d := webhook.Delivery{ID: id, Event: event, Timestamp: time.Now().Unix()}
			h, ctype := webhook.Sign(spec.Scheme, secret, d, body), "application/json"
			query := ""
			switch {
			case spec.Scheme == webhook.Twilio && json.Valid(body):
				// Twilio signs a JSON body by the URL it posts to with the
				// body's digest added, and adds it to the request too.
				h, ctype = webhook.SignTwilioJSON(secret, spec.URL, d, body), "application/json"
				query = webhook.TwilioBodyURL("", body)
			case spec.Scheme == webhook.Twilio:
				// Signed over the URL Twilio would post to (the webhook's
				// url), whichever server --url names.
				h, ctype = webhook.SignTwilio(secret, spec.URL, d, body), "application/x-www-form-urlencoded"
			case spec.Scheme.TakesForms() && !json.Valid(body):
				ctype = "application/x-www-form-urlencoded" // a slash command's form
			}
			req, err := http.NewRequestWithContext(cmd.Context(), "POST", strings.TrimSuffix(url, "/")+hookPath(spec.Name)+query, bytes.NewReader(body))
			if err != nil {
				return usagef("--url: %v", err)
			}
			for k, v := range h {
				req.Header[k] = v
			}
			req.Header.Set("Content-Type", ctype)
			return printAnswer(cmd, req)
		}}
	send.Flags().StringVar(&sendFile, "webhooks", "", "the webhooks file (JSON or YAML), as flrh serve --webhooks takes")
	send.Flags().StringVar(&url, "url", "http://127.0.0.1:7700", "the server's address")
	send.Flags().StringVar(&bodyFile, "body", "", "a file holding the body to deliver (JSON, or a form for Twilio and Slack's commands)")
	send.Flags().StringVar(&id, "id", "", "the delivery's id (default one made of the time); a Stripe event's is its body's")
	send.Flags().StringVar(&event, "event", "", "the event, for the schemes that carry it in a header (GitHub, Shopify, GitLab, Linear)")
	send.MarkFlagRequired("webhooks")
	send.MarkFlagRequired("body")

	var tokenEnv string
	var limit int
	parked := &cobra.Command{Use: "parked NAME",
		Short: "List a webhook's parked deliveries, through a server (GET /v1/hooks/NAME/parked)",
		Long: `parked lists the deliveries the webhook verified but could not take (a
template found nothing, the workflow refused the input, the run did not
exist), the most recently refused first: each one's id, event, the refusal,
how often it came, and its body. Mend the cause, then take one again with
flrh webhook redeliver, or drop it. The bearer token (an operator's) is read
from the variable --token-env names (FLRH_TOKEN).`,
		Example: `  FLRH_TOKEN=... flrh webhook parked shop --url https://flrh.example.com`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return apiCall(cmd, "GET", url, tokenEnv, hookPath(args[0], "parked")+"?limit="+strconv.Itoa(limit), "")
		}}
	parked.Flags().IntVar(&limit, "limit", 100, "how many to list, at most (1 to 1000)")
	redeliver := &cobra.Command{Use: "redeliver NAME ID",
		Short: "Take a parked delivery again, through a server (POST /v1/hooks/NAME/parked/ID/redeliver)",
		Long: `redeliver takes the parked delivery ID again through the webhook as the server
has it now (its signature held when it came): it starts or feeds its run and
is unparked, or is refused again and stays parked. It is taken under its
first id, so a delivery the sender also sends again is still taken once.
Exit status 1 when it is refused.`,
		Example: `  flrh webhook redeliver shop 7c1e-4f2a --url http://127.0.0.1:7700`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return apiCall(cmd, "POST", url, tokenEnv, hookPath(args[0], "parked", args[1], "redeliver"), "")
		}}
	drop := &cobra.Command{Use: "drop NAME ID",
		Short: "Drop a parked delivery, not to be taken (DELETE /v1/hooks/NAME/parked/ID)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return apiCall(cmd, "DELETE", url, tokenEnv, hookPath(args[0], "parked", args[1]), "")
		}}
	addServerFlags(&url, &tokenEnv, parked, redeliver, drop)

	group := &cobra.Command{Use: "webhook", Short: "Check and try the webhooks other systems deliver to, and take their parked deliveries again (see flrh serve --webhooks)"}
	group.AddCommand(check, send, parked, redeliver, drop)
	rootCmd.AddCommand(group)
}

// prettyJSON is a server's answer indented, or as it came when it is not
// JSON.
func prettyJSON(answer []byte) []byte {
	var pretty bytes.Buffer
	if json.Indent(&pretty, answer, "", "  ") != nil {
		return bytes.TrimSpace(answer)
	}
	return bytes.TrimSpace(pretty.Bytes())
}

// stampLinear sets a Linear event's webhookTimestamp, the time it is
// sent in Unix milliseconds, to now.
func stampLinear(body []byte, now time.Time) ([]byte, error) {
	var event map[string]json.RawMessage
	if err := json.Unmarshal(body, &event); err != nil || event == nil {
		return nil, errors.New("a Linear event is a JSON object")
	}
	event["webhookTimestamp"] = json.RawMessage(strconv.FormatInt(now.UnixMilli(), 10))
	return json.Marshal(event)
}

// hookPath is the API path of a webhook and what follows it, each part
// escaped: a delivery's id may hold a slash.
func hookPath(name string, rest ...string) string {
	p := "/v1/hooks/" + neturl.PathEscape(name)
	for _, r := range rest {
		p += "/" + neturl.PathEscape(r)
	}
	return p
}
