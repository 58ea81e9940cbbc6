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
