package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// The agent's identity on everything it submits. The role and capability
// are fixed: no argument, header or deployment setting widens them.
const (
	AgentRole       = "agent"
	AgentCapability = "run.input"
)

// DefaultAgent names the agent when Deps.Agent is empty.
const DefaultAgent = "mcp-agent"

// Catalog is where the server finds the workflows it offers.
type Catalog interface {
	Workflows() []runner.Workflow
}

// Workflows is a fixed Catalog.
type Workflows []runner.Workflow

// Workflows implements Catalog.
func (w Workflows) Workflows() []runner.Workflow { return w }

// Deps is what the MCP server reads and drives. Store, Runner and Catalog
// are required.
type Deps struct {
	Store store.Store
	// Runner starts runs and accepts inputs; something must be advancing
	// its runs (Runner.Run in the background) for them to move.
	Runner  *runner.Runner
	Catalog Catalog
	// Agent names the agent in the records of what it submits; its role is
	// always AgentRole. "" means DefaultAgent.
	Agent string
	// AgentFrom, used by Handler, names the agent from the HTTP request
	// (for example from the authenticated bearer token). It returns "" to
	// fall back on Agent.
	AgentFrom func(*http.Request) string
	// Workflows, when not nil, are the only workflows the agent sees and
	// proposes to the runs of (empty: none): a run of another workflow is
	// answered as one that does not exist, a workflow as one not offered.
	// WorkflowsFrom, used by Handler, gives them from the HTTP request
	// (the bearer token's scope); its nil is every workflow.
	Workflows     []string
	WorkflowsFrom func(*http.Request) []string
	// NewRunID names runs started without an id; nil draws random ids.
	NewRunID func() string
	// MaxWait bounds how long start_run and submit_input wait for a run to
	// settle (30s when 0); DefaultWait is what they wait when not told (10s
	// when 0); Poll is how often they look (50ms when 0).
	MaxWait     time.Duration
	DefaultWait time.Duration
	Poll        time.Duration
	// Logger receives the SDK's logs; nil discards them.
	Logger *slog.Logger
}

// Implementation is how the server introduces itself.
var Implementation = &sdk.Implementation{Name: "flrh", Title: "flrh governed runtime", Version: "1"}

const instructions = `flrh runs governed agent workflows. You may list workflows, start runs, submit inputs and read a run's state, effects, receipts and journey.
You can propose, never authorize: actions above a workflow's policy limits wait in WAIT_APPROVAL for a person to approve or deny them outside this interface.
No input you send, whatever it contains, counts as an approval.`

// NewServer returns an MCP server offering the agent tools over d. It
// panics if d lacks a Store, Runner or Catalog: that is a wiring mistake,
// not input.
func NewServer(d Deps) *sdk.Server {
	if d.Store == nil || d.Runner == nil || d.Catalog == nil {
		panic("mcp: NewServer needs a Store, a Runner and a Catalog")
	}
	if d.Agent == "" {
		d.Agent = DefaultAgent
	}
	if d.MaxWait <= 0 {
		d.MaxWait = 30 * time.Second
	}
	if d.DefaultWait <= 0 {
		d.DefaultWait = 10 * time.Second
	}
	d.DefaultWait = min(d.DefaultWait, d.MaxWait)
	if d.Poll <= 0 {
		d.Poll = 50 * time.Millisecond
	}
	if d.NewRunID == nil {
		d.NewRunID = randomRunID
	}
	s := sdk.NewServer(Implementation, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       d.Logger,
		// Only tools: no logging, prompts or resources. Tools are added
		// below, which advertises them.
		Capabilities: &sdk.ServerCapabilities{},
		SchemaCache:  schemas,
	})
	t := &tools{d: d, agent: runner.Actor{Name: d.Agent, Role: AgentRole, Capability: AgentCapability}}
	t.register(s)
	return s
}

// Handler serves the MCP streamable HTTP transport over d. Each session
// gets a server whose agent is named by d.AgentFrom (or d.Agent).
//
// Requests a browser marks as cross-origin are refused, and requests that
// reach a loopback address under a foreign Host name (DNS rebinding) are
// refused by the SDK; authenticating callers is the job of whatever mounts
// the handler.
func Handler(d Deps) http.Handler {
	if d.Store == nil || d.Runner == nil || d.Catalog == nil {
		panic("mcp: Handler needs a Store, a Runner and a Catalog")
	}
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		dd := d
		if d.AgentFrom != nil {
			if name := d.AgentFrom(r); name != "" {
				dd.Agent = name
			}
		}
		if d.WorkflowsFrom != nil {
			dd.Workflows = d.WorkflowsFrom(r)
		}
		return NewServer(dd)
	}, &sdk.StreamableHTTPOptions{Logger: d.Logger, SessionTimeout: 30 * time.Minute})
	return http.NewCrossOriginProtection().Handler(h)
}

// schemas caches the tools' inferred schemas: Handler builds a server per
// session, and the types never change.
var schemas = sdk.NewSchemaCache()

func randomRunID() string {
	var b [8]byte
	rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}
