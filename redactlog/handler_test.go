package redactlog

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"flrh.dev/flrh/redact"
)

func TestHandlerScrubsEveryPlace(t *testing.T) {
	const secret = "tok-SECRET-5e0a7c"
	s, err := redact.NewScrubber(secret)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil), s))
	type cfg struct{ Token string }
	log.With("ctx", "with "+secret).WithGroup("g").Info("message "+secret,
		"str", secret,
		"err", errors.New("refused "+secret),
		"any", cfg{Token: secret},
		slog.Group("nested", "deep", "x"+secret+"y"),
		"n", 42)
	out := buf.String()
	if strings.Contains(out, secret) || strings.Contains(out, "SECRET") {
		t.Fatalf("the log holds the secret:\n%s", out)
	}
	for _, want := range []string{`"msg":"message [redacted]"`, `"str":"[redacted]"`, `"err":"refused [redacted]"`, `"deep":"x[redacted]y"`, `"n":42`, `"ctx":"with [redacted]"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("the log lacks %s:\n%s", want, out)
		}
	}
}

func TestHandlerWithoutSecretsIsTheHandler(t *testing.T) {
	h := slog.NewJSONHandler(&bytes.Buffer{}, nil)
	s, _ := redact.NewScrubber()
	if Handler(h, s) != slog.Handler(h) {
		t.Fatal("an empty scrubber wrapped the handler")
	}
}

// HandlerFrom scrubs each record with the scrubber current then: a secret
// learned while the logger is in use is scrubbed from the next record on,
// and one scrubbed before still is.
func TestHandlerFromFollowsTheCurrentScrubber(t *testing.T) {
	const old, rotated = "tok-OLD-19c4e2a7", "tok-NEW-62b8f03d"
	first, err := redact.NewScrubber(old)
	if err != nil {
		t.Fatal(err)
	}
	current := first
	var buf bytes.Buffer
	log := slog.New(HandlerFrom(slog.NewJSONHandler(&buf, nil), func() *redact.Scrubber { return current }))
	log.Info("before", "a", old, "b", rotated)
	if out := buf.String(); strings.Contains(out, old) || !strings.Contains(out, rotated) {
		t.Fatalf("before the rotation: %s", out)
	}
	buf.Reset()
	if current, err = redact.NewScrubber(old, rotated); err != nil {
		t.Fatal(err)
	}
	log.With("ctx", rotated).Info("after "+rotated, "a", old, "b", rotated)
	if out := buf.String(); strings.Contains(out, old) || strings.Contains(out, rotated) {
		t.Fatalf("after the rotation: %s", out)
	}
}
