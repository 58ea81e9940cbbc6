package workflow

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/kernel"
	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/panel"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/redact"
	"flrh.dev/flrh/seam"
	"flrh.dev/flrh/yamljson"
)

// Names fixed by the bundle format.
const (
	SchemaVersion = "flrh-workflow/1"
	ManifestFile  = "workflow.json"
	// ManifestYAML is the manifest written in YAML instead (package
	// yamljson), as is any JSON file of the bundle named *.yaml or *.yml.
	ManifestYAML     = "workflow.yaml"
	ReceiptEventType = "flrh.receipt/1" // the domain event a receipt becomes
	ProposalSource   = "source:proposals"
	VerdictSource    = "source:verdicts"
	// EpochStride separates the R epochs of one tick: the i-th proposal of
	// the tick at logical time t is its own epoch at t*EpochStride+i, so
	// each published batch carries exactly one proposal and its verdict.
	EpochStride = 1024
)

// AdapterSpec says how the shell reaches the destination of one effect
// type. The pure workflow only validates and reports it.
type AdapterSpec struct {
	Kind      string `json:"kind"`       // "http"
	URLEnv    string `json:"url_env"`    // the environment variable holding the endpoint
	TimeoutMS int64  `json:"timeout_ms"` // 0: the shell's default
	// Headers are sent with every request to the destination, each value
	// read from an environment variable by the shell. They are secret by
	// definition (credentials): the bundle names where a value is, never
	// the value.
	Headers map[string]HeaderSpec `json:"headers,omitempty"`
	// Secrets are the secret parameters of the effect type (members its
	// tool's parameter schema marks secret): each is read from its
	// environment variable by the shell and sent as the request header
	// redact.HeaderName(member). Not part of the manifest's adapter object.
	Secrets []redact.Member `json:"-"`
	// TLS, when set, configures the connection to an https destination:
	// a private CA and a client certificate (mutual TLS).
	TLS *TLSSpec `json:"tls,omitempty"`
	// Limits, when set, hold the adapter's requests to what the
	// destination bears.
	Limits *LimitsSpec `json:"limits,omitempty"`
}

// LimitsSpec bounds an adapter's requests (mutations and lookups), in
// each process that runs the bundle: at most MaxInFlight open at once, at
// most PerSecond started a second. A request waits at most WaitMS (0: the
// shell's default) for room, and one that finds none is not sent. Shared,
// when set, names the limits in the store, so that they hold for every
// process sharing it together (adapters that reach one destination, in
// one bundle or several, name the same limits).
type LimitsSpec struct {
	MaxInFlight int64  `json:"max_in_flight,omitempty"`
	PerSecond   int64  `json:"per_second,omitempty"`
	WaitMS      int64  `json:"wait_ms,omitempty"`
	Shared      string `json:"shared,omitempty"`
}

// sharedLimitName is what a shared limit's name may be: short, and safe
// in a log line and a metric label.
var sharedLimitName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// TLSSpec says where an adapter's TLS material comes from: each value is
// PEM, read by the shell from the named environment variable (or the file
// its NAME_FILE names). The bundle names where the material is, never the
// material: a client key is a secret, and a CA is deployment, not code.
type TLSSpec struct {
	// CAEnv holds the certificates (PEM) that may sign the destination's
	// certificate, instead of the system's roots: a private CA.
	CAEnv string `json:"ca_env,omitempty"`
	// CertEnv and KeyEnv hold this runner's client certificate chain and
	// its private key (PEM), presented for mutual TLS. Both or neither.
	CertEnv string `json:"cert_env,omitempty"`
	KeyEnv  string `json:"key_env,omitempty"`
	// ServerName, when set, is the name the destination's certificate must
	// carry, when it differs from the endpoint's host (an endpoint given by
	// address, say).
	ServerName string `json:"server_name,omitempty"`
}

// HeaderSpec says where the value of a request header comes from.
type HeaderSpec struct {
	Env string `json:"env"` // the environment variable holding the value
}

// ApprovalPolicy is who may approve and how requests are bound.
type ApprovalPolicy struct {
	PolicyVersion string `json:"policy_version"`
	ApproverScope string `json:"approver_scope"`
	Approver      string `json:"approver"` // the person (actor name) or the group a request names
	// Members, when given, makes Approver the name of a group: a grant
	// from any one of these people answers a request that names it.
	// Without members Approver is a person, the only one who may answer.
	Members []string `json:"members,omitempty"`
	// Quorum, with Members, is how many of them must each approve a
	// request before its effect may happen (the four-eyes rule: 2);
	// absent, one.
	Quorum int `json:"quorum,omitempty"`
	// Groups are further groups of approvers, name to members, that the
	// gate policy may name for an action (authority.ApproverRelation):
	// production restarts by the SRE leads, the rest by Approver. A
	// request naming one is answered by its members; Quorum and
	// SeparateDuties hold for them as for Approver's.
	Groups map[string][]string `json:"groups,omitempty"`
	// Panels are approvers made of several groups, name to group names
	// (Approver's, when it is a group, or Groups'), each of which a
	// different person must answer for: a production change signed off by
	// an SRE lead and by someone from security. A group listed n times
	// asks n of its members. A grant from a member of any of them answers
	// a request naming the panel; the request is approved once the people
	// whose grants stand can be paired with its places, one person to a
	// place, and are at least as many as the quorum. Approver may name a
	// panel (without Members); the gate policy may name one for an action.
	Panels map[string][]string `json:"panels,omitempty"`
	// SeparateDuties keeps anyone who handed a run an input (started it,
	// or added to it) from approving its requests: maker-checker.
	SeparateDuties bool  `json:"separate_duties,omitempty"`
	TTL            int64 `json:"ttl"` // logical time units a request stays open
}

// maxMembers bounds an approver group: a list longer than a team is more
// likely a directory pasted by mistake than a set of people who decide.
const maxMembers = 100

// checkMembers checks an approver group: ids, distinct, at most
// maxMembers, and the group's own name not among them (a name that is
// both a person and the group would leave a grant's meaning to guesswork).
func checkMembers(p ApprovalPolicy) *Error {
	switch {
	case p.Quorum < 0 || p.Quorum > maxMembers:
		return malformed("/approval/quorum", "must be from 1 to the number of members")
	case p.Quorum > 1 && p.Members == nil && p.Panels[p.Approver] == nil:
		return malformed("/approval/quorum", "%d people's approvals need members: approver %q is one person", p.Quorum, p.Approver)
	case p.Quorum > len(p.Members) && p.Members != nil:
		return malformed("/approval/quorum", "%d people's approvals, but %q has %d members", p.Quorum, p.Approver, len(p.Members))
	}
	if p.Members != nil {
		if err := checkGroup("/approval/members", p.Approver, p.Members); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Groups)) {
		ptr := "/approval/groups/" + name
		members := p.Groups[name]
		switch {
		case !cjson.ValidID(name):
			return malformed(ptr, "%q is not an id", name)
		case name == p.Approver:
			return malformed(ptr, "%q is the approver's own name: groups name the others the gate policy may choose", name)
		case p.Quorum > len(members) && members != nil:
			return malformed(ptr, "the approval policy's quorum is %d, but %q has %d members", p.Quorum, name, len(members))
		}
		if err := checkGroup(ptr, name, members); err != nil {
			return err
		}
	}
	panels := slices.Sorted(maps.Keys(p.Panels))
	for _, name := range panels {
		ptr := "/approval/panels/" + name
		switch {
		case !cjson.ValidID(name):
			return malformed(ptr, "%q is not an id", name)
		case name == p.Approver && p.Members != nil:
			return malformed(ptr, "%q is the approver's group: a panel names groups, members the people in one", name)
		case p.Groups[name] != nil:
			return malformed(ptr, "%q is also a group's name", name)
		}
	}
	for _, name := range panels {
		if err := p.checkPanel(name); err != nil {
			return err
		}
	}
	return nil
}

// maxPanelGroups bounds a panel: sign-off by more people than this is a
// process, better run as several approvals in turn.
const maxPanelGroups = 10

// checkPanel checks the groups of the panel name, whose name checkMembers
// has checked (an id no group goes by; the approver's only where the
// approver has no members): 2 to maxPanelGroups groups the policy lists
// with their members, a group listed n times asking n of its members,
// whose members can answer for every place with a different person.
// (Each group has as many members as the quorum, so a panel has too.)
func (p ApprovalPolicy) checkPanel(name string) *Error {
	ptr := "/approval/panels/" + name
	groups := p.Panels[name]
	if len(groups) < 2 || len(groups) > maxPanelGroups {
		return malformed(ptr, "must list from 2 to %d groups, each answered for by a different person, a group once for each of its members it asks (one group once is a group: name it)", maxPanelGroups)
	}
	for i, g := range groups {
		at := fmt.Sprintf("%s/%d", ptr, i)
		switch {
		case g == name:
			return malformed(at, "%q is the panel's own name", g)
		case p.Panels[g] != nil:
			return malformed(at, "%q is a panel: a panel names groups", g)
		case g == p.Approver && p.Members == nil, g != p.Approver && p.Groups[g] == nil:
			return malformed(at, "%q is not a group the approval policy lists with its members (%s)", g, strings.Join(p.groupNames(), ", "))
		}
	}
	if waits := panel.Unanswered(p.panelOf(name), p.membersOf(name)); len(waits) > 0 {
		return malformed(ptr, "its groups' members cannot give it a different person for each place: it would always wait for %s", panel.Awaited(waits))
	}
	return nil
}

// groupNames lists the groups of the policy with their members, sorted:
// the approver's (when it is one) and the others.
func (p ApprovalPolicy) groupNames() []string {
	names := slices.Sorted(maps.Keys(p.Groups))
	if p.Members != nil {
		names = append(names, p.Approver)
		slices.Sort(names)
	}
	return names
}

// checkGroup checks the members of the group name, listed at ptr: from 1
// to maxMembers ids, distinct, and not the group's own name (a name that
// is both a person and the group would leave a grant's meaning to
// guesswork).
func checkGroup(ptr, name string, members []string) *Error {
	if len(members) == 0 || len(members) > maxMembers {
		return malformed(ptr, "must list from 1 to %d people who may answer for %q", maxMembers, name)
	}
	for i, m := range members {
		at := fmt.Sprintf("%s/%d", ptr, i)
		switch {
		case !cjson.ValidID(m):
			return malformed(at, "%q is not an id", m)
		case m == name:
			return malformed(at, "%q is the group's own name: approver names the group, members the people in it", m)
		case slices.Contains(members[:i], m):
			return malformed(at, "%q is listed twice", m)
		}
	}
	return nil
}

// quorum is how many people must each approve a request: 1 unless the
// policy says more.
func (p ApprovalPolicy) quorum() int { return max(p.Quorum, 1) }

// ApprovalQuorum is how many distinct people's grants each approval
// request of this workflow needs before its effect may happen.
func (w *Workflow) ApprovalQuorum() int { return w.approval.quorum() }

// ApprovalPanel lists the groups of the panel a request naming approver
// ("": the approval policy's own) stands for, each with its members, nil
// when approver names no panel.
func (w *Workflow) ApprovalPanel(approver string) []panel.Group {
	if approver == "" {
		approver = w.approval.Approver
	}
	return w.approval.panelOf(approver)
}

// SeparatesDuties reports whether the approval policy keeps anyone who
// handed a run an input from approving its requests (runner.DutySeparator).
func (w *Workflow) SeparatesDuties() bool { return w.approval.SeparateDuties }

// membersOf lists the people who may answer a request naming approver:
// the policy's members when it names Approver's group or one of its
// Groups, nil otherwise (a person, or a request made under another policy
// version, which lists no one it cannot vouch for).
func (p ApprovalPolicy) membersOf(approver string) []string {
	if groups, ok := p.Panels[approver]; ok {
		var all []string
		for _, g := range groups {
			for _, m := range p.membersOf(g) {
				if !slices.Contains(all, m) {
					all = append(all, m)
				}
			}
		}
		return all
	}
	if approver == p.Approver {
		return slices.Clone(p.Members)
	}
	return slices.Clone(p.Groups[approver])
}

// panelOf lists the groups of the panel approver, with their members, in
// the policy's order; nil when approver is no panel.
func (p ApprovalPolicy) panelOf(approver string) []panel.Group {
	groups := p.Panels[approver]
	if groups == nil {
		return nil
	}
	out := make([]panel.Group, len(groups))
	for i, g := range groups {
		out[i] = panel.Group{Name: g, Members: p.membersOf(g)}
	}
	return out
}

// knows reports whether the policy names approver: its approver, one of
// its groups, or one of its panels.
func (p ApprovalPolicy) knows(approver string) bool {
	_, group := p.Groups[approver]
	_, isPanel := p.Panels[approver]
	return approver == p.Approver || group || isPanel
}

// quorumOf is how many people must each answer a request naming
// approver, when more than one (0 otherwise): the policy's quorum, or one
// for each group of a panel, whichever is more.
func (p ApprovalPolicy) quorumOf(approver string) int {
	if !p.knows(approver) {
		return 0
	}
	if q := max(p.quorum(), len(p.Panels[approver])); q > 1 {
		return q
	}
	return 0
}

// mayAnswer reports whether a grant from actor answers a request naming
// approver, and if not, why.
func (p ApprovalPolicy) mayAnswer(approver, actor string) error {
	members := p.membersOf(approver)
	switch {
	case !p.knows(approver):
		return fmt.Errorf("the request names %q, whom the approval policy does not name", approver)
	case members == nil && actor != approver:
		return fmt.Errorf("the grant was issued by %q; the approval policy names %q", actor, approver)
	case members != nil && !slices.Contains(members, actor):
		return fmt.Errorf("the grant was issued by %q, who is not among the members of %q the approval policy names (%s)", actor, approver, strings.Join(members, ", "))
	}
	return nil
}

type eligibility struct {
	relation string
	args     []any // templates: "$action.x", "$destination.x", "$$literal", literals
	polarity seam.Polarity
}

// Workflow is a compiled bundle: the pure pipeline F → L → seam → R → H
// that decides one accepted input at a time. It is immutable and safe to
// share.
type Workflow struct {
	id, version, digest string
	versions            protocol.VersionEnvelope
	checkedVersions     *kernel.CheckedVersions // versions, checked for the kernel's steps (nil: checked per step)
	domain              *kernel.Declarative
	receipts            []string // the receipt members the domain declares, nil if it takes no receipts
	// inputTypes holds each event type of the domain whose canonical
	// encoding is its bytes between quotes, as an interface value: an
	// input's type read in place is found here (parseInputCanonical).
	inputTypes      map[string]any
	advances        *advanceMemo // R's advances past a run's first ticks, boxed once (nil: boxed every tick)
	rules           *logic.Compiled
	ruleTexts       []cjson.Prefix // one per rule: a rule support's text opens with its rule's
	ruleDigest      string
	limits          logic.Limits
	facts           map[string][]string // predicate → member names in column order
	elig            map[string]eligibility
	policy          authority.PolicySnapshot
	chains          [][]authority.SignedCapability
	verified        []authority.VerifiedCapability // chains, verified once at compile
	approval        ApprovalPolicy
	completeWhen    *logic.Fact
	failWhen        *logic.Fact
	adapters        map[string]AdapterSpec
	secrets         map[string][]redact.Member // effect type → its secret parameters
	rProfile        frontier.Profile
	r0              *frontier.State // R's state a tick starts from (demand granted), which Step never modifies
	binding         seam.BindingProfile
	verifiedBinding seam.VerifiedBinding // binding, its digest checked once
	cache           *matCache            // nil: evaluate every tick from scratch
	// empty is the materialization of no supports at logical time 0 (a
	// run's initial state), evaluated once at Compile; nil if that failed,
	// and the tick then evaluates it and reports why.
	empty    *logic.Materialization
	ctl      *controller       // nil: no AIF controller; every choice is a person's
	contract *control.Contract // the loop contract with the bundle's loop section applied
}

// ID names the workflow.
func (w *Workflow) ID() string { return w.id }

// Version is the workflow's version.
func (w *Workflow) Version() string { return w.version }

// Digest binds every file of the bundle that defines the workflow.
func (w *Workflow) Digest() string { return w.digest }

// Versions is the bundle's version envelope, stamped on every event.
func (w *Workflow) Versions() protocol.VersionEnvelope { return w.versions }

// Adapters returns the adapter of each effect type, by effect type.
func (w *Workflow) Adapters() map[string]AdapterSpec {
	out := make(map[string]AdapterSpec, len(w.adapters))
	for k, v := range w.adapters {
		out[k] = v
	}
	return out
}

// GateRules lists the gate policy's rules that write an output, by rule
// id, in source order (authority.Policy.Rules).
func (w *Workflow) GateRules() []authority.RuleRef { return w.policy.Policy.Rules() }

// Approval is the bundle's approval policy.
func (w *Workflow) Approval() ApprovalPolicy { return w.approval }

// Manifests returns the tool manifests by effect type.
func (w *Workflow) Manifests() map[string]authority.ToolManifest {
	out := make(map[string]authority.ToolManifest, len(w.policy.Manifests))
	for k, v := range w.policy.Manifests {
		out[k] = v
	}
	return out
}

var manifestMembers = []string{"schema_version", "id", "version", "versions", "domain", "rules", "facts", "eligibility",
	"gates", "tools", "capabilities", "operator_key", "approval", "complete_when", "fail_when", "adapters", "limits", "controller", "loop"}

var requiredMembers = []string{"schema_version", "id", "version", "versions", "domain", "rules", "facts", "eligibility",
	"gates", "tools", "capabilities", "operator_key", "approval", "adapters"}

// ManifestNames are the names a bundle's manifest may have: one of them.
var ManifestNames = []string{ManifestFile, ManifestYAML, "workflow.yml"}

// Manifest returns the name of the manifest among files (workflow.json,
// or workflow.yaml or workflow.yml), or an *Error when there is none or
// more than one.
func Manifest(files map[string][]byte) (string, error) {
	var found []string
	for _, n := range ManifestNames {
		if _, ok := files[n]; ok {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return "", bundleErr(CodeMissingFile, ManifestFile, "", "a bundle has a %s (or %s)", ManifestFile, ManifestYAML)
	case 1:
		return found[0], nil
	}
	return "", bundleErr(CodeMalformed, found[1], "", "a bundle has one manifest, and %s is one too", found[0])
}

// Compile checks a bundle and builds its workflow. files maps each file
// name, relative to the bundle directory, to its bytes; the manifest
// (Manifest: workflow.json, or workflow.yaml) must be one of them. It is
// pure: it reads nothing but files. Any problem is an *Error naming the
// file and the place in it (a JSON Pointer, and in a YAML file its line
// and column too); nothing is half built.
func Compile(files map[string][]byte) (*Workflow, error) {
	name, merr := Manifest(files)
	if merr != nil {
		return nil, merr
	}
	c := compiler{files: files, used: map[string]bool{name: true}}
	w, cerr := c.compileManifest(name)
	if cerr != nil {
		return nil, c.located(cerr, name)
	}
	return w, nil
}

// compileManifest compiles the bundle whose manifest is file name.
func (c *compiler) compileManifest(name string) (*Workflow, *Error) {
	if err := c.readManifest(name); err != nil {
		return nil, err
	}
	return c.compile()
}

// readManifest decodes the manifest, file name, into c.root.
func (c *compiler) readManifest(name string) *Error {
	raw, yerr := c.document(name, c.files[name], false)
	if yerr != nil {
		return yerr
	}
	v, err := cjson.Decode(raw)
	if err != nil {
		ce, _ := err.(*cjson.Error)
		ptr := ""
		if ce != nil {
			ptr = ce.Pointer
		}
		return bundleErr(CodeMalformed, ManifestFile, ptr, "not flrh-cjson JSON: %v", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return bundleErr(CodeMalformed, ManifestFile, "/", "must be a JSON object")
	}
	c.root = root
	return nil
}

type compiler struct {
	files map[string][]byte
	root  map[string]any
	used  map[string]bool
	// positions are where each value of the YAML files read so far was
	// written, by file name.
	positions map[string]yamljson.Positions
}

// document returns the JSON text of the bundle's file name, whose bytes
// are b: b itself, or, for a file written in YAML, the canonical JSON of
// the value it spells (yamljson.Convert; with floats, for a document read
// as plain JSON, yamljson.ConvertFloats; where each value was written is
// kept for located).
func (c *compiler) document(name string, b []byte, floats bool) ([]byte, *Error) {
	if !yamljson.Named(name) {
		return b, nil
	}
	convert := yamljson.Convert
	if floats {
		convert = yamljson.ConvertFloats
	}
	out, pos, err := convert(b)
	if err != nil {
		e := bundleErr(CodeMalformed, name, "", "not YAML flrh reads: %v", err)
		var ye *yamljson.Error
		if errors.As(err, &ye) {
			e.Pointer, e.Line, e.Column, e.Detail = ye.Pointer, ye.Line, ye.Column, "not YAML flrh reads: "+ye.Detail
		}
		return nil, e
	}
	if c.positions == nil {
		c.positions = map[string]yamljson.Positions{}
	}
	c.positions[name] = pos
	return out, nil
}

// ReadDocument is the JSON text of a file of a bundle, name, whose bytes
// are b, read as Compile reads the bundle's own: b itself, or for a file
// named *.yaml or *.yml the canonical JSON of the value it spells, with
// where each value was written (pos, nil for JSON). A file that is not
// YAML flrh reads is an *Error with its line and column.
func ReadDocument(name string, b []byte) (doc []byte, pos yamljson.Positions, err error) {
	c := compiler{}
	doc, cerr := c.document(name, b, false)
	if cerr != nil {
		return nil, nil, cerr
	}
	return doc, c.positions[name], nil
}

// located is e with the manifest's name, manifest, where e names
// workflow.json (the name every check of the manifest's members gives),
// and, in a file written in YAML, the line and column of the value e's
// JSON Pointer names.
func (c *compiler) located(e *Error, manifest string) *Error {
	if e.File == ManifestFile {
		e.File = manifest
	}
	if pos, ok := c.positions[e.File]; ok && e.Line == 0 {
		ptr := e.Pointer
		if strings.HasPrefix(ptr, "/") || ptr == "" {
			if p, ok := pos.At(ptr); ok {
				e.Line, e.Column = p.Line, p.Column
			}
		}
	}
	return e
}

func malformed(ptr, format string, args ...any) *Error {
	return bundleErr(CodeMalformed, ManifestFile, ptr, format, args...)
}

func (c *compiler) str(ptr string, v any, id bool) (string, *Error) {
	s, ok := v.(string)
	if !ok || s == "" {
		return "", malformed(ptr, "must be a non-empty string")
	}
	if id && !cjson.ValidID(s) {
		return "", malformed(ptr, "%q is not an id", s)
	}
	return s, nil
}

// file returns the bytes of a file the manifest names at ptr.
func (c *compiler) file(ptr string) (string, []byte, *Error) {
	return c.fileNamed(ptr, c.lookup(ptr))
}

// fileNamed returns the bytes of the file named by v, found at ptr (as
// JSON, when it is written in YAML).
func (c *compiler) fileNamed(ptr string, v any) (string, []byte, *Error) {
	return c.fileAs(ptr, v, false)
}

// fileAs is fileNamed, a YAML file read with floating-point numbers taken
// when floats is set (document).
func (c *compiler) fileAs(ptr string, v any, floats bool) (string, []byte, *Error) {
	name, err := c.str(ptr, v, false)
	if err != nil {
		return "", nil, err
	}
	clean := path.Clean(name)
	if path.IsAbs(name) || clean != name || strings.HasPrefix(clean, "../") || clean == ".." || strings.Contains(name, "\\") {
		return "", nil, malformed(ptr, "%q must be a plain relative path inside the bundle", name)
	}
	b, ok := c.files[name]
	if !ok {
		return "", nil, bundleErr(CodeMissingFile, name, "", "named by %s at %s, but not in the bundle", ManifestFile, ptr)
	}
	c.used[name] = true
	b, err = c.document(name, b, floats)
	return name, b, err
}

func (c *compiler) lookup(ptr string) any {
	return c.root[strings.TrimPrefix(ptr, "/")]
}

func (c *compiler) compile() (*Workflow, *Error) {
	for _, k := range sortedKeys(c.root) {
		if !slices.Contains(manifestMembers, k) {
			return nil, malformed("/"+cjson.EscapePointer(k), "unknown member")
		}
	}
	for _, k := range requiredMembers {
		if _, ok := c.root[k]; !ok {
			return nil, malformed("/"+k, "required member is missing")
		}
	}
	if c.root["schema_version"] != SchemaVersion {
		return nil, malformed("/schema_version", "must be %q", SchemaVersion)
	}
	w := &Workflow{cache: newMatCache(), advances: new(advanceMemo), limits: logic.Limits{MaxInputs: logic.ReferenceMaxInputs, MaxFirings: 1_000_000, MaxDepth: 10_000, MaxTuples: 1_000_000}}
	var err *Error
	if w.id, err = c.str("/id", c.root["id"], true); err != nil {
		return nil, err
	}
	if w.version, err = c.str("/version", c.root["version"], true); err != nil {
		return nil, err
	}
	if err = c.versions(w); err != nil {
		return nil, err
	}
	w.checkedVersions, _ = kernel.CheckVersions(w.versions)
	if err = c.ruleLimits(w); err != nil {
		return nil, err
	}
	if err = c.domain(w); err != nil {
		return nil, err
	}
	if err = c.rules(w); err != nil {
		return nil, err
	}
	if err = c.factTable(w); err != nil {
		return nil, err
	}
	if err = c.eligibility(w); err != nil {
		return nil, err
	}
	if err = c.completion(w); err != nil {
		return nil, err
	}
	if err = c.authority(w); err != nil {
		return nil, err
	}
	if err = c.adapters(w); err != nil {
		return nil, err
	}
	if err = c.controller(w); err != nil {
		return nil, err
	}
	if err = c.loop(w); err != nil {
		return nil, err
	}
	prof, rej := frontier.NewProfile(w.versions.Dataflow, []string{ProposalSource, VerdictSource}, frontier.Limits{
		MaxDeltasPerCommand: 2, MaxActiveValues: 2 * EpochStride, MaxOpenEpochs: EpochStride,
		MaxReadyBatches: EpochStride, MaxDemandPerCommand: EpochStride, MaxOutstandingDemand: EpochStride,
	})
	if rej != nil {
		return nil, bundleErr(CodeVersionMismatch, ManifestFile, "/versions/dataflow", "the R profile refuses it: %s at %s", rej.Code, rej.Path)
	}
	w.rProfile = prof
	// R starts every tick from its initial state with all the demand the
	// profile allows already granted: a batch's identity does not depend
	// on when demand arrived, so each batch publishes the moment its epoch
	// stabilizes and a tick needs no GrantDemand command of its own.
	tr, rej := frontier.Step(frontier.InitialState(prof), prof, frontier.GrantDemand{
		ProfileDigest: prof.Digest(), DataflowVersion: prof.DataflowVersion(), Batches: EpochStride})
	if rej != nil {
		return nil, bundleErr(CodeVersionMismatch, ManifestFile, "/versions/dataflow", "the R profile refuses demand: %s at %s", rej.Code, rej.Path)
	}
	w.r0 = tr.Next
	w.binding = seam.BindingProfile{RuleSetVersion: w.versions.RuleSet, DataflowVersion: w.versions.Dataflow,
		ProposalSourceID: ProposalSource, VerdictSourceID: VerdictSource, MaxQueries: 1,
		MaxFactRequirementsPerQuery: seam.MaxFactRequirementsCeiling}.Sealed()
	w.verifiedBinding, _ = seam.VerifyBinding(w.binding)
	// The digest binds the manifest and every file it names, by content.
	digests := map[string]any{}
	for name := range c.used {
		digests[name] = cjson.Digest(c.files[name])
	}
	d, derr := cjson.DigestOf(map[string]any{"kind": "flrh.workflow.bundle", "schema_version": SchemaVersion, "files": digests})
	if derr != nil {
		return nil, malformed("/", "cannot digest the bundle: %v", derr)
	}
	w.digest = d
	w.ruleTexts = make([]cjson.Prefix, w.rules.NumRules())
	if m, err := w.rebuild(nil, 0); err == nil {
		w.empty = m
	}
	return w, nil
}

func (c *compiler) versions(w *Workflow) *Error {
	m, ok := c.root["versions"].(map[string]any)
	if !ok {
		return malformed("/versions", "must be an object")
	}
	b, _ := cjson.Encode(m)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w.versions); err != nil {
		return malformed("/versions", "not a version envelope: %v", err)
	}
	for _, k := range []string{"workflow", "state_schema", "event_schema", "graph_schema", "rule_set", "dataflow", "canonicalization",
		"tool", "model", "oracle", "gate", "resolver", "composition_profile"} {
		if s, _ := m[k].(string); !cjson.ValidID(s) {
			return malformed("/versions/"+k, "must be a version label")
		}
	}
	if w.versions.Canonicalization != kernel.Canonicalization {
		return bundleErr(CodeVersionMismatch, ManifestFile, "/versions/canonicalization", "must be %q", kernel.Canonicalization)
	}
	return nil
}

// ruleLimits reads the optional L budgets: {"max_inputs", "max_firings",
// "max_depth", "max_tuples"}, each from 1 to the default.
func (c *compiler) ruleLimits(w *Workflow) *Error {
	raw, present := c.root["limits"]
	if !present {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return malformed("/limits", "must be an object")
	}
	for _, k := range sortedKeys(m) {
		ptr := "/limits/" + cjson.EscapePointer(k)
		n, ok := m[k].(int64)
		var max int64
		switch k {
		case "max_inputs":
			max = int64(w.limits.MaxInputs)
		case "max_firings":
			max = w.limits.MaxFirings
		case "max_depth":
			max = int64(w.limits.MaxDepth)
		case "max_tuples":
			max = w.limits.MaxTuples
		default:
			return malformed(ptr, "unknown limit")
		}
		if !ok || n < 1 || n > max {
			return malformed(ptr, "must be an integer from 1 to %d", max)
		}
		switch k {
		case "max_inputs":
			w.limits.MaxInputs = int(n)
		case "max_firings":
			w.limits.MaxFirings = n
		case "max_depth":
			w.limits.MaxDepth = int(n)
		case "max_tuples":
			w.limits.MaxTuples = n
		}
	}
	return nil
}

func (c *compiler) domain(w *Workflow) *Error {
	name, b, err := c.file("/domain")
	if err != nil {
		return err
	}
	d, lerr := kernel.Load(b)
	if lerr != nil {
		ptr := ""
		if ce, ok := lerr.(*kernel.ConfigError); ok {
			ptr = ce.Pointer
		}
		return bundleErr(CodeBadDomain, name, ptr, "%v", lerr)
	}
	p := d.Profile()
	for _, f := range []struct{ field, got, want string }{
		{"workflow", p.Workflow, w.versions.Workflow}, {"state_schema", p.StateSchema, w.versions.StateSchema},
		{"event_schema", p.EventSchema, w.versions.EventSchema}} {
		if f.got != f.want {
			return bundleErr(CodeVersionMismatch, name, "/"+f.field, "the domain says %q, the version envelope %q", f.got, f.want)
		}
	}
	if members, ok := p.EventTypes[ReceiptEventType]; ok {
		allowed := []string{"action_digest", "effect_type", "intent_id", "outcome", "proposal_id"}
		for _, m := range members {
			if !slices.Contains(allowed, m) {
				return bundleErr(CodeBadDomain, name, "/events/"+cjson.EscapePointer(ReceiptEventType)+"/payload/"+cjson.EscapePointer(m),
					"a receipt event carries only %s", strings.Join(allowed, ", "))
			}
		}
		w.receipts = append([]string{}, members...)
	}
	w.inputTypes = make(map[string]any, len(p.EventTypes))
	for t := range p.EventTypes { //flrh:orderfree each entry alone
		if t != "" && cjson.Plain(t) {
			w.inputTypes[t] = t
		}
	}
	w.domain = d
	return nil
}

func (c *compiler) rules(w *Workflow) *Error {
	name, b, err := c.file("/rules")
	if err != nil {
		return err
	}
	prog, lerr := logic.Load(name, b)
	if lerr != nil {
		return bundleErr(CodeBadRules, name, logicPos(lerr), "%v", lerr)
	}
	w.rules = prog
	w.ruleDigest, _ = cjson.DigestOf(map[string]any{"kind": "flrh.workflow.rule-bundle", "rule_set": w.versions.RuleSet, "source": cjson.Digest(b)})
	return nil
}

func logicPos(err error) string {
	if le, ok := err.(*logic.Error); ok && le.Pos.Line > 0 {
		return fmt.Sprintf("%d:%d", le.Pos.Line, le.Pos.Col)
	}
	return ""
}

func (c *compiler) factTable(w *Workflow) *Error {
	m, ok := c.root["facts"].(map[string]any)
	if !ok {
		return malformed("/facts", "must be an object: predicate → member names in column order")
	}
	inputs := w.rules.Inputs()
	w.facts = map[string][]string{}
	for _, pred := range sortedKeys(m) {
		ptr := "/facts/" + cjson.EscapePointer(pred)
		cols, ok := m[pred].([]any)
		if !ok {
			return malformed(ptr, "must be an array of member names")
		}
		schema, declared := w.rules.Schema(pred)
		if !declared {
			return bundleErr(CodeBadBinding, ManifestFile, ptr, "relation %s is not declared in the rules", pred)
		}
		if !slices.Contains(inputs, pred) {
			return bundleErr(CodeBadBinding, ManifestFile, ptr, "relation %s is not an .input relation of the rules", pred)
		}
		if len(schema) != len(cols) {
			return bundleErr(CodeBadBinding, ManifestFile, ptr, "relation %s has %d columns, the table names %d", pred, len(schema), len(cols))
		}
		var names []string
		for i, col := range cols {
			s, ok := col.(string)
			if !ok || s == "" || s == "predicate" || slices.Contains(names, s) {
				return malformed(fmt.Sprintf("%s/%d", ptr, i), "must be a distinct member name other than \"predicate\"")
			}
			names = append(names, s)
		}
		w.facts[pred] = names
	}
	return nil
}

func (c *compiler) eligibility(w *Workflow) *Error {
	m, ok := c.root["eligibility"].(map[string]any)
	if !ok {
		return malformed("/eligibility", "must be an object: precondition id → literal")
	}
	w.elig = map[string]eligibility{}
	for _, pre := range sortedKeys(m) {
		ptr := "/eligibility/" + cjson.EscapePointer(pre)
		if !cjson.ValidID(pre) {
			return malformed(ptr, "%q is not a precondition id", pre)
		}
		e, ok := m[pre].(map[string]any)
		if !ok {
			return malformed(ptr, "must be an object {relation, args, polarity}")
		}
		for _, k := range sortedKeys(e) {
			if k != "relation" && k != "args" && k != "polarity" {
				return malformed(ptr+"/"+cjson.EscapePointer(k), "unknown member")
			}
		}
		rel, err := c.str(ptr+"/relation", e["relation"], false)
		if err != nil {
			return err
		}
		schema, declared := w.rules.Schema(rel)
		if !declared {
			return bundleErr(CodeBadBinding, ManifestFile, ptr+"/relation", "relation %s is not declared in the rules", rel)
		}
		args, ok := e["args"].([]any)
		if !ok {
			return malformed(ptr+"/args", "must be an array of templates")
		}
		if len(args) != len(schema) {
			return bundleErr(CodeBadBinding, ManifestFile, ptr+"/args", "relation %s has %d columns, %d args given", rel, len(schema), len(args))
		}
		for i, a := range args {
			aptr := fmt.Sprintf("%s/args/%d", ptr, i)
			switch t := a.(type) {
			case int64:
				if schema[i] != logic.TypeNumber {
					return bundleErr(CodeBadBinding, ManifestFile, aptr, "column %d of %s is a symbol", i, rel)
				}
			case string:
				if ref, isRef := reference(t); isRef {
					if !strings.HasPrefix(ref, "action.") && !strings.HasPrefix(ref, "destination.") || strings.HasSuffix(ref, ".") || strings.Contains(ref, "..") {
						return malformed(aptr, "a reference is $action.<member>[.…] or $destination.<member>[.…]")
					}
				} else if schema[i] != logic.TypeSymbol {
					return bundleErr(CodeBadBinding, ManifestFile, aptr, "column %d of %s is a number", i, rel)
				}
			default:
				return malformed(aptr, "must be a string template or an integer")
			}
		}
		pol := seam.Positive
		if raw, present := e["polarity"]; present {
			switch raw {
			case "positive":
			case "negative":
				pol = seam.Negative
			default:
				return malformed(ptr+"/polarity", "must be \"positive\" or \"negative\"")
			}
		}
		w.elig[pre] = eligibility{relation: rel, args: args, polarity: pol}
	}
	return nil
}

// reference reports whether a template string is a reference ("$x") and
// returns its path; "$$x" is the literal "$x".
func reference(s string) (string, bool) {
	if strings.HasPrefix(s, "$$") || !strings.HasPrefix(s, "$") {
		return "", false
	}
	return s[1:], true
}

func (c *compiler) completion(w *Workflow) *Error {
	for _, f := range []struct {
		key string
		dst **logic.Fact
	}{{"complete_when", &w.completeWhen}, {"fail_when", &w.failWhen}} {
		raw, present := c.root[f.key]
		if !present {
			continue
		}
		s, err := c.str("/"+f.key, raw, false)
		if err != nil {
			return err
		}
		fact, perr := logic.ParseFact(w.rules, s)
		if perr != nil {
			return bundleErr(CodeBadBinding, ManifestFile, "/"+f.key, "%v", perr)
		}
		if fact.Neg {
			return bundleErr(CodeBadBinding, ManifestFile, "/"+f.key, "names a positive atom; its TRUE_ONLY state decides")
		}
		*f.dst = &fact
	}
	return nil
}

func (c *compiler) authority(w *Workflow) *Error {
	name, src, err := c.file("/gates")
	if err != nil {
		return err
	}
	pol, perr := authority.CompilePolicy(w.versions.Gate, name, src, logic.Limits{MaxFirings: 100_000, MaxDepth: 1000, MaxTuples: 100_000})
	if perr != nil {
		return bundleErr(CodeBadGates, name, logicPos(perr), "%v", perr)
	}
	tools, ok := c.root["tools"].([]any)
	if !ok || len(tools) == 0 {
		return malformed("/tools", "must be a non-empty array of tool manifests")
	}
	manifests := map[string]authority.ToolManifest{}
	w.secrets = map[string][]redact.Member{}
	for i, t := range tools {
		ptr := fmt.Sprintf("/tools/%d", i)
		// "parameters", the JSON Schema of the action, is the bundle's:
		// H's manifest does not carry it.
		var params any
		hasParams := false
		if tm, ok := t.(map[string]any); ok {
			if p, has := tm["parameters"]; has {
				params, hasParams = p, true
				rest := make(map[string]any, len(tm))
				for k, v := range tm {
					if k != "parameters" {
						rest[k] = v
					}
				}
				t = rest
			}
		}
		var m authority.ToolManifest
		if err := strictDecode(t, &m); err != nil {
			return malformed(ptr, "not a tool manifest: %v", err)
		}
		if hasParams {
			secret, serr := redact.SecretMembers(params)
			if serr != nil {
				var re *redact.Error
				if errors.As(serr, &re) {
					return malformed(ptr+"/parameters"+re.Pointer, "%s", re.Detail)
				}
				return malformed(ptr+"/parameters", "%v", serr)
			}
			for _, sm := range secret {
				if slices.Contains(m.RequiredParameters, sm.Name) {
					return malformed(ptr+"/required_parameters", "%s is secret: its value is read from %s at dispatch and is never part of the action", sm.Name, sm.Env)
				}
			}
			if len(secret) > 0 {
				w.secrets[m.EffectType] = secret
			}
		}
		if !cjson.ValidID(m.EffectType) {
			return malformed(ptr+"/effect_type", "must be an id")
		}
		if _, dup := manifests[m.EffectType]; dup {
			return malformed(ptr+"/effect_type", "effect type %s has two manifests", m.EffectType)
		}
		if verr := authority.ValidateSideEffects(m.SideEffects); verr != nil {
			return malformed(ptr+"/side_effects", "%v", verr)
		}
		switch m.DeclaredRisk {
		case "", authority.RiskReadOnly, authority.RiskReversible, authority.RiskHighRiskExternal:
		default:
			return malformed(ptr+"/declared_risk", "must be read_only, reversible or high_risk_external")
		}
		manifests[m.EffectType] = m
	}
	key, err := c.operatorKey()
	if err != nil {
		return err
	}
	keyring := authority.NewKeyring(key)
	capName, capSrc, err := c.file("/capabilities")
	if err != nil {
		return err
	}
	chains, verified, cerr := parseChains(capName, capSrc, keyring)
	if cerr != nil {
		return cerr
	}
	ap, ok := c.root["approval"].(map[string]any)
	if !ok {
		return malformed("/approval", "must be an object {policy_version, approver_scope, approver, ttl}")
	}
	if err := strictDecode(ap, &w.approval); err != nil {
		return malformed("/approval", "%v", err)
	}
	for _, f := range []struct{ k, v string }{{"policy_version", w.approval.PolicyVersion}, {"approver_scope", w.approval.ApproverScope}, {"approver", w.approval.Approver}} {
		if !cjson.ValidID(f.v) {
			return malformed("/approval/"+f.k, "must be an id")
		}
	}
	if err := checkMembers(w.approval); err != nil {
		return err
	}
	// The gates may ask more people than the approval policy: each of them
	// must be able to, before any run waits on a quorum no one can meet.
	if q := pol.MaxQuorum(); q > 0 {
		switch {
		case w.approval.Panels[w.approval.Approver] != nil:
			// A panel's people are its groups', checked below.
		case w.approval.Members == nil:
			return malformed("/approval/members", "the gate policy (%s) asks up to %d people to approve (quorum), but approver %q is one person: name a group and its members", name, q, w.approval.Approver)
		case q > len(w.approval.Members):
			return malformed("/approval/members", "the gate policy (%s) asks up to %d people to approve (quorum), but %q has %d members", name, q, w.approval.Approver, len(w.approval.Members))
		}
		for _, g := range slices.Sorted(maps.Keys(w.approval.Groups)) {
			if n := len(w.approval.Groups[g]); q > n {
				return malformed("/approval/groups/"+g, "the gate policy (%s) asks up to %d people to approve (quorum), but %q has %d members", name, q, g, n)
			}
		}
	}
	// Everyone the gates may name must be someone the approval policy
	// knows: its approver, or one of its groups.
	for _, a := range pol.Approvers() {
		if !w.approval.knows(a) {
			known := append([]string{w.approval.Approver}, slices.Sorted(maps.Keys(w.approval.Groups))...)
			known = append(known, slices.Sorted(maps.Keys(w.approval.Panels))...)
			return malformed("/approval/groups", "the gate policy (%s) names approver %q, whom the approval policy does not name (it names %s)", name, a, strings.Join(known, ", "))
		}
	}
	if w.approval.TTL < 1 || w.approval.TTL > 1<<40 {
		return malformed("/approval/ttl", "must be from 1 to 2^40 logical time units")
	}
	w.policy = authority.PolicySnapshot{Policy: pol, Manifests: manifests, Keyring: keyring,
		ApprovalPolicyVersion: w.approval.PolicyVersion, ApproverScope: w.approval.ApproverScope,
		Approver: w.approval.Approver, ApprovalTTL: w.approval.TTL}
	w.chains, w.verified = chains, verified
	return nil
}

// operatorKey is the manifest's operator_key: the Ed25519 public key
// every capability of the bundle is signed by.
func (c *compiler) operatorKey() (ed25519.PublicKey, *Error) {
	keyHex, err := c.str("/operator_key", c.root["operator_key"], false)
	if err != nil {
		return nil, err
	}
	key, herr := hex.DecodeString(keyHex)
	if herr != nil || len(key) != ed25519.PublicKeySize {
		return nil, malformed("/operator_key", "must be a hex Ed25519 public key (%d bytes)", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(key), nil
}

// parseChains reads {"chains": [[root, child, …], …]} and verifies every
// chain against the operator key now, so a bundle with a forged or broken
// chain never loads; the verified chains are what every decision is
// handed, so no tick checks the signatures again.
func parseChains(name string, src []byte, keyring authority.Keyring) ([][]authority.SignedCapability, []authority.VerifiedCapability, *Error) {
	raw, cerr := rawChains(name, src)
	if cerr != nil {
		return nil, nil, cerr
	}
	var out [][]authority.SignedCapability
	var verified []authority.VerifiedCapability
	for i, links := range raw {
		ptr := fmt.Sprintf("/chains/%d", i)
		var chain []authority.SignedCapability
		for j, l := range links {
			var sc authority.SignedCapability
			if err := strictDecode(l, &sc); err != nil {
				if unsigned(l) {
					return nil, nil, bundleErr(CodeBadCapability, name, fmt.Sprintf("%s/%d", ptr, j), "a capability not signed yet: sign the bundle's capabilities with its operator key (flrh bundle sign)")
				}
				return nil, nil, bundleErr(CodeMalformed, name, fmt.Sprintf("%s/%d", ptr, j), "not a signed capability: %v", err)
			}
			chain = append(chain, sc)
		}
		v, err := keyring.Verify(chain)
		if err != nil {
			return nil, nil, bundleErr(CodeBadCapability, name, ptr, "%v", err)
		}
		out = append(out, chain)
		verified = append(verified, v)
	}
	return out, verified, nil
}

// rawChains decodes a capabilities file, {"chains": [[link, …], …]}, into
// each chain's links, not yet read.
func rawChains(name string, src []byte) ([][]any, *Error) {
	v, err := cjson.Decode(src)
	if err != nil {
		return nil, bundleErr(CodeMalformed, name, "", "not flrh-cjson JSON: %v", err)
	}
	m, ok := v.(map[string]any)
	raw, ok2 := m["chains"].([]any)
	if !ok || !ok2 || len(m) != 1 {
		return nil, bundleErr(CodeMalformed, name, "/", "must be {\"chains\": [[signed capability, …], …]}")
	}
	out := make([][]any, len(raw))
	for i, rc := range raw {
		links, ok := rc.([]any)
		if !ok || len(links) == 0 {
			return nil, bundleErr(CodeMalformed, name, fmt.Sprintf("/chains/%d", i), "must be a non-empty array, root first")
		}
		out[i] = links
	}
	return out, nil
}

// unsigned reports whether a link is a capability written bare, as an
// operator writes it before signing: an id of its own, no signature.
func unsigned(link any) bool {
	m, ok := link.(map[string]any)
	if !ok {
		return false
	}
	_, id := m["id"]
	_, signed := m["capability"]
	return id && !signed
}

func (c *compiler) adapters(w *Workflow) *Error {
	m, ok := c.root["adapters"].(map[string]any)
	if !ok {
		return malformed("/adapters", "must be an object: effect type → adapter")
	}
	w.adapters = map[string]AdapterSpec{}
	for _, et := range sortedKeys(m) {
		ptr := "/adapters/" + cjson.EscapePointer(et)
		if _, ok := w.policy.Manifests[et]; !ok {
			return bundleErr(CodeBadBinding, ManifestFile, ptr, "no tool manifest declares effect type %s", et)
		}
		var a AdapterSpec
		if err := strictDecode(m[et], &a); err != nil {
			return malformed(ptr, "not an adapter: %v", err)
		}
		if a.Kind != "http" {
			return malformed(ptr+"/kind", "the only adapter kind is \"http\"")
		}
		if a.URLEnv == "" || strings.ContainsAny(a.URLEnv, "= \x00") {
			return malformed(ptr+"/url_env", "must name an environment variable")
		}
		if a.TimeoutMS < 0 || a.TimeoutMS > 600_000 {
			return malformed(ptr+"/timeout_ms", "must be from 0 to 600000")
		}
		for _, h := range sortedKeys(a.Headers) {
			hp := ptr + "/headers/" + cjson.EscapePointer(h)
			if !headerName().MatchString(h) || reservedHeader(h) {
				return malformed(hp, "must be a header name (letters, digits, '-') other than the protocol's own")
			}
			if e := a.Headers[h].Env; e == "" || strings.ContainsAny(e, "= \x00") {
				return malformed(hp+"/env", "must name the environment variable holding the value")
			}
		}
		if a.TLS != nil {
			if e := checkTLS(ptr+"/tls", *a.TLS); e != nil {
				return e
			}
		}
		if l := a.Limits; l != nil {
			switch {
			case l.MaxInFlight < 0 || l.MaxInFlight > 1024:
				return malformed(ptr+"/limits/max_in_flight", "must be from 1 to 1024")
			case l.PerSecond < 0 || l.PerSecond > 100_000:
				return malformed(ptr+"/limits/per_second", "must be from 1 to 100000")
			case l.WaitMS < 0 || l.WaitMS > 60_000:
				return malformed(ptr+"/limits/wait_ms", "must be from 0 to 60000")
			case l.MaxInFlight == 0 && l.PerSecond == 0:
				return malformed(ptr+"/limits", "names no max_in_flight and no per_second: nothing to limit")
			case l.Shared != "" && !sharedLimitName.MatchString(l.Shared):
				return malformed(ptr+"/limits/shared", "must be a name of 1 to 64 letters, digits, '.', '_', ':' or '-', starting with a letter or digit")
			}
		}
		a.Secrets = w.secrets[et]
		w.adapters[et] = a
	}
	for _, et := range sortedKeys(w.policy.Manifests) {
		if _, ok := w.adapters[et]; !ok {
			return bundleErr(CodeBadBinding, ManifestFile, "/adapters", "effect type %s has a tool manifest but no adapter", et)
		}
	}
	return nil
}

// checkTLS checks an adapter's tls object: variables that can be names,
// a client certificate with its key, and something to configure.
func checkTLS(ptr string, t TLSSpec) *Error {
	for _, v := range []struct{ member, env string }{{"ca_env", t.CAEnv}, {"cert_env", t.CertEnv}, {"key_env", t.KeyEnv}} {
		if v.env != "" && strings.ContainsAny(v.env, "= \x00") {
			return malformed(ptr+"/"+v.member, "must name an environment variable")
		}
	}
	switch {
	case (t.CertEnv == "") != (t.KeyEnv == ""):
		return malformed(ptr, "cert_env and key_env go together: a client certificate is presented with its key")
	case t.CAEnv == "" && t.CertEnv == "":
		return malformed(ptr, "names no ca_env and no cert_env: nothing to configure")
	case t.ServerName != "" && !hostName(t.ServerName):
		return malformed(ptr+"/server_name", "must be a host name (letters, digits, '-' and '.')")
	}
	return nil
}

// hostName reports whether s is a DNS host name: labels of letters, digits
// and '-', not starting or ending with '-', joined by dots, at most 253
// bytes.
func hostName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// strictDecode decodes a cjson value into a struct, refusing unknown
// members.
func strictDecode(v any, dst any) error {
	b, err := cjson.Encode(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(dst)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Compiled on first use: the bounded repetition expands into a large
// program that commands which never compile a workflow would build for
// nothing at start-up.
var headerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,63}$`) })

// reservedHeader reports the headers the effect protocol or HTTP itself
// sets, and the prefix secret parameters travel under.
func reservedHeader(h string) bool {
	switch strings.ToLower(h) {
	case "idempotency-key", "content-digest", "content-type", "content-length", "accept", "host", "connection",
		"transfer-encoding", "te", "trailer", "upgrade", "expect", "idempotent-replayed":
		return true
	}
	return strings.HasPrefix(strings.ToLower(h), "flrh-secret-")
}
