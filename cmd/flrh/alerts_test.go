package main

import (
	"bytes"
	"encoding/json"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"flrh.dev/flrh/yamljson"
)

// metricName is a metric of flrh's in text: the family, a histogram's
// series suffix left on.
var metricName = regexp.MustCompile(`\bflrh_[a-z0-9_]*[a-z0-9]\b`)

// exportedMetrics are the metric names flrh's code defines: every string
// literal of a non-test Go file that is a whole metric name.
func exportedMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bench" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var s scanner.Scanner
		fset := token.NewFileSet()
		s.Init(fset.AddFile(path, -1, len(src)), src, nil, 0)
		for {
			_, tok, lit := s.Scan()
			if tok == token.EOF {
				return nil
			}
			if tok != token.STRING {
				continue
			}
			if v, err := strconv.Unquote(lit); err == nil && metricName.FindString(v) == v {
				names[v] = true
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// documentedMetrics are the metric names docs/observability.md's table
// and docs/server.md name.
func documentedMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, doc := range []string{"docs/observability.md", "docs/server.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "| `flrh_") && !strings.HasPrefix(line, "`flrh_") {
				continue
			}
			for _, n := range metricName.FindAllString(line, -1) {
				names[n] = true
			}
		}
	}
	return names
}

// TestMetricsDocumented: every metric the metrics table documents is one
// flrh's code defines, so the documentation does not promise a series
// that never comes.
func TestMetricsDocumented(t *testing.T) {
	root := filepath.Join("..", "..")
	code, docs := exportedMetrics(t, root), documentedMetrics(t, root)
	if len(docs) < 30 {
		t.Fatalf("only %d metrics documented: the table was not read", len(docs))
	}
	for n := range docs {
		if !code[n] {
			t.Errorf("docs name %s, which no code defines", n)
		}
	}
}

// TestAlertRules checks deploy/prometheus/flrh-alerts.yml: rules of the
// shape Prometheus loads (groups of rules, each an alert with an
// expression, a severity of page or ticket, a summary and a description),
// alert names unique, brackets balanced, and every metric an expression
// reads one flrh defines and documents (a histogram's _bucket, _sum and
// _count series by their family).
func TestAlertRules(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "flrh-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	j, _, err := yamljson.Convert(b)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("the rules file: %v", err)
	}
	code, docs := exportedMetrics(t, root), documentedMetrics(t, root)
	seen := map[string]bool{}
	rules := 0
	for _, g := range file.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: a name and rules are required", g.Name)
		}
		for _, r := range g.Rules {
			rules++
			switch {
			case !regexp.MustCompile(`^Flrh[A-Z][A-Za-z]+$`).MatchString(r.Alert):
				t.Errorf("alert %q: not a FlrhCamelCase name", r.Alert)
			case seen[r.Alert]:
				t.Errorf("alert %s twice", r.Alert)
			case r.Labels["severity"] != "page" && r.Labels["severity"] != "ticket":
				t.Errorf("alert %s: severity %q, not page or ticket", r.Alert, r.Labels["severity"])
			case r.Annotations["summary"] == "" || r.Annotations["description"] == "":
				t.Errorf("alert %s: a summary and a description are required", r.Alert)
			case r.For != "" && !regexp.MustCompile(`^[0-9]+[smhd]$`).MatchString(r.For):
				t.Errorf("alert %s: for %q is not a duration", r.Alert, r.For)
			}
			seen[r.Alert] = true
			depth := map[rune]int{}
			for _, c := range r.Expr {
				switch c {
				case '(', '[', '{':
					depth[c]++
				case ')':
					depth['(']--
				case ']':
					depth['[']--
				case '}':
					depth['{']--
				}
			}
			if depth['('] != 0 || depth['['] != 0 || depth['{'] != 0 {
				t.Errorf("alert %s: brackets unbalanced in %s", r.Alert, r.Expr)
			}
			found := metricName.FindAllString(r.Expr, -1)
			if len(found) == 0 {
				t.Errorf("alert %s reads no flrh metric: %s", r.Alert, r.Expr)
			}
			for _, m := range found {
				family := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if f := strings.TrimSuffix(m, suffix); f != m && code[f] {
						family = f
					}
				}
				if !code[family] || !docs[family] {
					t.Errorf("alert %s reads %s: defined %v, documented %v", r.Alert, m, code[family], docs[family])
				}
			}
		}
	}
	if rules < 10 {
		t.Fatalf("%d rules read", rules)
	}
}
