package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/redact"
	"flrh.dev/flrh/workflow"
)

// secretAdapters names an endpoint, a header and a secret parameter.
func secretAdapters() *Adapters {
	return &Adapters{tool: "http/1", specs: map[string]workflow.AdapterSpec{"refund.pay": {Kind: "http", URLEnv: "URL",
		Headers: map[string]workflow.HeaderSpec{"Authorization": {Env: "AUTH"}},
		Secrets: []redact.Member{{Name: "api_key", Env: "KEY"}}}}}
}

func TestResolveReadsValueFiles(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const auth, key = "Bearer auth-from-file-1", "key-from-file-22"
	authFile, keyCRLF := file("auth", auth+"\n"), file("key", key+"\r\n")
	twoBreaks, empty, onlyBreak := file("two", key+"\n\n"), file("empty", ""), file("break", "\n")
	big := file("big", strings.Repeat("k", MaxValueFileSize+1))
	atLimit := file("limit", strings.Repeat("k", MaxValueFileSize))
	link := filepath.Join(dir, "link")
	if err := os.Symlink(authFile, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want map[string]string // values the resolved getenv answers
		err  string            // a part of the error
	}{
		{name: "nothing from files", env: map[string]string{"URL": "http://h/v1/effects", "AUTH": "Bearer a-1234567", "KEY": "k-12345678"},
			want: map[string]string{"URL": "http://h/v1/effects", "AUTH": "Bearer a-1234567", "KEY": "k-12345678"}},
		{name: "secrets from files, one line break each dropped", env: map[string]string{"URL": "http://h/v1/effects", "AUTH_FILE": authFile, "KEY_FILE": keyCRLF},
			want: map[string]string{"AUTH": auth, "KEY": key, "URL": "http://h/v1/effects"}},
		{name: "the endpoint from a file", env: map[string]string{"URL_FILE": file("url", "http://f/v1/effects\n")},
			want: map[string]string{"URL": "http://f/v1/effects", "AUTH": ""}},
		{name: "only one line break dropped", env: map[string]string{"KEY_FILE": twoBreaks}, want: map[string]string{"KEY": key + "\n"}},
		{name: "through a symbolic link", env: map[string]string{"AUTH_FILE": link}, want: map[string]string{"AUTH": auth}},
		{name: "a file at the size limit", env: map[string]string{"KEY_FILE": atLimit}, want: map[string]string{"KEY": strings.Repeat("k", MaxValueFileSize)}},
		{name: "a variable the bundle does not name is not read", env: map[string]string{"OTHER_FILE": filepath.Join(dir, "missing"), "OTHER": "x"},
			want: map[string]string{"OTHER": "x", "OTHER_FILE": filepath.Join(dir, "missing")}},
		{name: "both set", env: map[string]string{"AUTH": "Bearer a-1234567", "AUTH_FILE": authFile}, err: "AUTH and AUTH_FILE are both set"},
		{name: "a missing file", env: map[string]string{"KEY_FILE": filepath.Join(dir, "missing")}, err: "KEY_FILE: open " + filepath.Join(dir, "missing")},
		{name: "an empty file", env: map[string]string{"KEY_FILE": empty}, err: "KEY_FILE: " + empty + " is empty"},
		{name: "a line break alone", env: map[string]string{"KEY_FILE": onlyBreak}, err: "is empty"},
		{name: "a directory", env: map[string]string{"KEY_FILE": dir}, err: "is not a regular file"},
		{name: "a file too large", env: map[string]string{"KEY_FILE": big}, err: "is larger than 65536 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			getenv, err := secretAdapters().Resolve(Env{Getenv: func(k string) string { return c.env[k] }, ReadFile: ReadValueFile})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				for _, v := range []string{auth, key, "Bearer a-1234567", "kkkkkkkk"} {
					if strings.Contains(err.Error(), v) {
						t.Fatalf("the error %q quotes a value", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.want {
				if got := getenv(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// Without a file reader NAME_FILE means nothing (the --destination case,
// and callers that hand values over themselves); the zero Env sets
// nothing.
func TestResolveWithoutFiles(t *testing.T) {
	env := map[string]string{"AUTH_FILE": "/nonexistent", "AUTH": "Bearer a-1234567"}
	getenv, err := secretAdapters().Resolve(Vars(func(k string) string { return env[k] }))
	if err != nil || getenv("AUTH") != "Bearer a-1234567" || getenv("AUTH_FILE") != "/nonexistent" {
		t.Fatalf("%v, AUTH %q", err, getenv("AUTH"))
	}
	getenv, err = secretAdapters().Resolve(Env{})
	if err != nil || getenv("URL") != "" {
		t.Fatalf("zero Env: %v, URL %q", err, getenv("URL"))
	}
}

// A bundle whose secrets come from files is wired as one whose secrets
// come from the environment, and its secrets are scrubbed alike.
func TestRegistryFromValueFiles(t *testing.T) {
	dir := t.TempDir()
	a := secretAdapters()
	for name, v := range map[string]string{"auth": "Bearer auth-value-123\n", "key": "key-value-456\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"URL": "http://127.0.0.1:9/v1/effects", "AUTH_FILE": filepath.Join(dir, "auth"), "KEY_FILE": filepath.Join(dir, "key")}
	getenv, err := a.Resolve(Env{Getenv: func(k string) string { return env[k] }, ReadFile: ReadValueFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Registry(getenv); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.Secrets(getenv), ","); got != "Bearer auth-value-123,key-value-456" {
		t.Fatalf("Secrets = %q", got)
	}
}
