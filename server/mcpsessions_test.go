package server

import (
	"testing"
	"time"
)

// A session holds for the actor and scope that opened it, not another;
// every workflow (nil) and none (empty) are different scopes; a session
// closed, or idle past the MCP server's timeout, is bound no more.
func TestMCPSessions(t *testing.T) {
	var m mcpSessions
	t0 := time.Unix(1_800_000_000, 0)
	rhea := Principal{Actor: "rhea", Roles: []string{"agent"}, Workflows: []string{"refund-agent"}}
	m.open("s1", rhea, t0)
	m.open("s2", Principal{Actor: "ci", Workflows: nil}, t0)
	for _, c := range []struct {
		id   string
		p    Principal
		want bool
	}{
		{"s1", rhea, true},
		{"s1", Principal{Actor: "rhea", Roles: []string{"agent", "viewer"}, Workflows: []string{"refund-agent"}}, true},
		{"s1", Principal{Actor: "otto", Workflows: []string{"refund-agent"}}, false},
		{"s1", Principal{Actor: "rhea", Workflows: []string{"ops-agent"}}, false},
		{"s1", Principal{Actor: "rhea"}, false},
		{"s2", Principal{Actor: "ci", Workflows: []string{}}, false},
		{"s2", Principal{Actor: "ci"}, true},
		{"s3", rhea, true},
	} {
		if got := m.holds(c.id, c.p, t0.Add(time.Minute)); got != c.want {
			t.Errorf("%s as %+v: %v, want %v", c.id, c.p, got, c.want)
		}
	}
	m.forget("s1")
	if !m.holds("s1", Principal{Actor: "otto"}, t0) {
		t.Fatal("a closed session still bound")
	}
	// s2 was used a minute in; 31 minutes after that, opening another
	// forgets it.
	m.open("s4", rhea, t0.Add(32*time.Minute))
	if _, kept := m.byID["s2"]; kept || len(m.byID) != 1 {
		t.Fatalf("idle bindings kept: %v", m.byID)
	}
}
