package webui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func serve(t *testing.T, method, path string) *http.Response {
	t.Helper()
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w.Result()
}

// Every answer carries the security headers, whatever its status.
func TestHandlerAnswers(t *testing.T) {
	cases := []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/ui/", 200, "text/html; charset=utf-8"},
		{"HEAD", "/ui/", 200, "text/html; charset=utf-8"},
		{"GET", "/ui/index.html", 200, "text/html; charset=utf-8"},
		{"GET", "/ui/app.css", 200, "text/css; charset=utf-8"},
		{"GET", "/ui/js/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/ui/js/", 404, ""},
		{"GET", "/ui/js", 404, ""},
		{"GET", "/ui/nope.js", 404, ""},
		{"GET", "/ui/../webui.go", 404, ""},
		{"GET", "/ui/js/../../webui.go", 404, ""},
		{"GET", "/elsewhere", 404, ""},
		{"POST", "/ui/", 405, ""},
		{"DELETE", "/ui/app.css", 405, ""},
	}
	for _, c := range cases {
		resp := serve(t, c.method, c.path)
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
		if c.ctype != "" && resp.Header.Get("Content-Type") != c.ctype {
			t.Errorf("%s %s: content type %q, want %q", c.method, c.path, resp.Header.Get("Content-Type"), c.ctype)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != CSP {
			t.Errorf("%s %s: CSP %q", c.method, c.path, got)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s %s: missing nosniff or frame denial: %v", c.method, c.path, resp.Header)
		}
		if c.status == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", c.method, c.path, resp.Header.Get("Allow"))
		}
	}
}

// The policy admits nothing inline and nothing from another origin.
func TestCSPAdmitsOnlySelf(t *testing.T) {
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "http:", "https:", "*"} {
		if strings.Contains(CSP, bad) {
			t.Errorf("CSP admits %q: %s", bad, CSP)
		}
	}
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(CSP, want) {
			t.Errorf("CSP lacks %q", want)
		}
	}
}

var (
	reScriptTag   = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	reInlineEvent = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
	reStyleAttr   = regexp.MustCompile(`(?i)\sstyle\s*=`)
	reImport      = regexp.MustCompile(`(?:from|import\()\s*'(\./[^']+)'`)
	reURL         = regexp.MustCompile(`(?i)(?:src|href)\s*=\s*"(https?:)?//`)
)

// The pages work under the policy: no inline script, handler or style
// attribute; no third-party URL; every module a page imports is embedded.
// Text reaches the DOM as text: no innerHTML, document.write or eval.
func TestStaticFilesKeepThePolicy(t *testing.T) {
	root := Static()
	seen := 0
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		seen++
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		text := string(b)
		if strings.HasSuffix(p, ".html") {
			for _, m := range reScriptTag.FindAllStringSubmatch(text, -1) {
				if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
					t.Errorf("%s: inline script %q", p, m[0])
				}
			}
			if reInlineEvent.MatchString(text) || reStyleAttr.MatchString(text) {
				t.Errorf("%s: inline event handler or style attribute", p)
			}
			if reURL.MatchString(text) {
				t.Errorf("%s: a URL to another origin", p)
			}
		}
		if strings.HasSuffix(p, ".js") {
			for _, bad := range []string{".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "style:"} {
				if strings.Contains(text, bad) {
					t.Errorf("%s uses %s", p, bad)
				}
			}
			for _, m := range reImport.FindAllStringSubmatch(text, -1) {
				dep := "js/" + strings.TrimPrefix(m[1], "./")
				if _, err := fs.Stat(root, dep); err != nil {
					t.Errorf("%s imports %s, which is not embedded", p, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 5 {
		t.Fatalf("only %d embedded files", seen)
	}
}

// index.html loads the module that exists and the stylesheet that exists.
func TestIndexReferencesEmbeddedFiles(t *testing.T) {
	resp := serve(t, "GET", "/ui/")
	b, _ := io.ReadAll(resp.Body)
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"#:/][^"#:]*)"`).FindAllStringSubmatch(string(b), -1) {
		if _, err := fs.Stat(Static(), m[1]); err != nil {
			t.Errorf("index.html refers to %s, which is not embedded", m[1])
		}
	}
}
