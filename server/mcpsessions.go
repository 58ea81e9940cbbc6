package server

import (
	"slices"
	"sync"
	"time"
)

// An MCP session's server is made when the session is opened, with the
// agent's name and scope of the request that opened it (mcp.Deps's
// AgentFrom and WorkflowsFrom); the session's later requests reuse it.
// Every request is still authenticated, but a token whose scope a reload
// narrowed, or that now names another actor, would go on acting through
// a session opened before under what it was. So each session is bound to
// the principal that opened it, and a request whose principal is no
// longer that one is refused: the agent opens a new session, under what
// the token is now.

// mcpSessionHeader carries an MCP session's id, in the answer that opens
// it and in every later request.
const mcpSessionHeader = "Mcp-Session-Id"

// mcpSessionIdle is how long an unused binding is kept: the MCP server
// forgets an idle session after 30 minutes (mcp.Handler).
const mcpSessionIdle = 30 * time.Minute

// mcpSessions are the open sessions' principals, by session id.
type mcpSessions struct {
	mu   sync.Mutex
	byID map[string]*mcpSession
}

type mcpSession struct {
	actor     string
	workflows []string
	used      time.Time
}

// open binds session id to p, and forgets the bindings idle too long.
func (m *mcpSessions) open(id string, p Principal, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = map[string]*mcpSession{}
	}
	for k, s := range m.byID {
		if now.Sub(s.used) > mcpSessionIdle {
			delete(m.byID, k)
		}
	}
	m.byID[id] = &mcpSession{actor: p.Actor, workflows: p.Workflows, used: now}
}

// holds reports whether session id may go on under p: it was opened by
// the same actor with the same scope (or is not one this server bound,
// which the MCP server itself refuses).
func (m *mcpSessions) holds(id string, p Principal, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byID[id]
	if !ok {
		return true
	}
	if s.actor != p.Actor || (s.workflows == nil) != (p.Workflows == nil) || !slices.Equal(s.workflows, p.Workflows) {
		return false
	}
	s.used = now
	return true
}

// forget drops session id's binding: the session was closed.
func (m *mcpSessions) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byID, id)
}
