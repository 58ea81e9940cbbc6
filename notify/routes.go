package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/yamljson"
)

// Route is one webhook notices go to, and which of them it takes.
type Route struct {
	// Name names the route in logs, metrics and the store (which keeps
	// the routes a notice reached, to send it again only to the others):
	// RouteName's letters, 1 to 64 of them.
	Name   string
	URL    string // http or https, with a host and no user or password
	Secret []byte // the HMAC key its deliveries are signed with, 16 bytes at least
	// Format is the body's shape: FormatFlrh ("" too), FormatSlack,
	// FormatTemplate, or FormatEmail (an e-mail through the SMTP server
	// URL names, from From to To; no Secret).
	Format string
	// Template, with FormatTemplate, writes the body (text/template over
	// TemplateData, with a json function): it must write one JSON
	// document for a notice of every kind, which New checks.
	Template string
	// Kinds are the kinds of notice it takes; nil takes every kind.
	Kinds []string
	// Workflows are the workflow ids whose runs' notices it takes; nil
	// takes every workflow's.
	Workflows []string
	// Labels are labels a run must bear, every one, for the route to take
	// its notices (flrh's own among them: flrh.schedule=nightly); nil
	// takes every run's.
	Labels map[string]string
	// From and To are an e-mail route's sender and recipients, each a
	// bare address (name@example.com); or an SMS route's sender and the
	// one number it texts (FormatSMS).
	From string
	To   []string
	// OAuth2, on an e-mail route, logs in to the mail server with an
	// access token instead of the URL's password.
	OAuth2 *OAuth2
	// After, when positive, makes the route an escalation: it is told of
	// a run waiting for a person (a notice of one of WaitingKinds; Kinds
	// nil takes them all) only once the notice is After old, and only if
	// the run still stands where the notice found it then
	// (Config.StillWaits): a run that moved on meanwhile is never told of
	// to it. Less than Config.GiveUp.
	After time.Duration

	compiled *template.Template // Template, parsed and checked by New
	// followUp is the scheme of a follow-up (store.FollowUp) the
	// notifier made the route of, for one notice; "" for a route.
	followUp string
}

// DefaultRoute names the one route of a Config that gives a URL rather
// than Routes.
const DefaultRoute = "default"

// MaxRoutes bounds the routes of one notifier: the store keeps the names
// of those a notice reached.
const MaxRoutes = store.MaxNoticeRoutes

// RouteName is what a route's name may be.
var RouteName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// WaitingKinds are the kinds of notice that say a run waits for a
// person: those an escalation route (Route.After) takes.
var WaitingKinds = []string{store.NoticeApproval, store.NoticeChoice, store.NoticeReconciliation, store.NoticeTripped, store.NoticeQuarantined}

// takes reports whether r delivers notices of kind about the run b
// names (its workflow and labels).
func (r *Route) takes(kind string, b store.NoticeBody) bool {
	if r.After > 0 && !slices.Contains(WaitingKinds, kind) {
		return false
	}
	return (r.Kinds == nil || slices.Contains(r.Kinds, kind)) && (r.Workflows == nil || slices.Contains(r.Workflows, b.WorkflowID)) &&
		label.Matches(b.Labels, r.Labels)
}

// checkAfter checks the routes' escalations against giveUp, the age at
// which a notice is dropped: an escalation due at or after it would
// never be told.
func checkAfter(routes []Route, giveUp time.Duration) error {
	for _, r := range routes {
		switch {
		case r.After < 0:
			return fmt.Errorf("notify: route %q: after %v is negative", r.Name, r.After)
		case r.After > 0 && r.After >= giveUp:
			return fmt.Errorf("notify: route %q: after %v is not less than the give-up age %v: it would never be told", r.Name, r.After, giveUp)
		}
	}
	return nil
}

// said is why, said of r; the single default route says it alone, as
// before there were routes.
func (r *Route) said(why string) string {
	if r.Name == DefaultRoute {
		return why
	}
	return "route " + r.Name + ": " + why
}

// checkRoutes checks every route, and compiles its template, none of the
// errors naming any part of a URL (it may be a credential).
func checkRoutes(routes []Route) error {
	if len(routes) > MaxRoutes {
		return fmt.Errorf("notify: %d routes, more than %d", len(routes), MaxRoutes)
	}
	for i := range routes {
		r := &routes[i]
		where := "notify: "
		if len(routes) > 1 || r.Name != DefaultRoute {
			where = fmt.Sprintf("notify: route %q: ", r.Name)
		}
		if !RouteName.MatchString(r.Name) {
			return fmt.Errorf("notify: route %d's name %q is not 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", i, r.Name)
		}
		for _, o := range routes[:i] {
			if o.Name == r.Name {
				return fmt.Errorf("notify: two routes are named %q", r.Name)
			}
		}
		u, err := url.Parse(r.URL)
		if r.Format == FormatEmail {
			if err != nil {
				return errors.New(where + "the mail server's URL does not parse")
			}
			if err := checkEmail(r, u, where); err != nil {
				return err
			}
			if err := r.checkTakes(where); err != nil {
				return err
			}
			continue
		}
		if r.Format == FormatSMS {
			if err := checkSMS(r, where); err != nil {
				return err
			}
			continue
		}
		if r.From != "" || r.To != nil || r.OAuth2 != nil {
			return errors.New(where + "from, to and oauth2 are an e-mail or SMS route's (format email, sms)")
		}
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			// Not quoted: a webhook's URL may be its credential.
			return errors.New(where + "the webhook URL is not an http or https URL with a host")
		case u.User != nil:
			return errors.New(where + "the URL carries credentials; sign with the secret instead")
		case len(r.Secret) < 16:
			return fmt.Errorf("%sthe signing secret holds %d bytes, fewer than 16", where, len(r.Secret))
		case r.Format != "" && r.Format != FormatFlrh && r.Format != FormatSlack && r.Format != FormatTemplate:
			return fmt.Errorf("%sformat %q is not %s, %s, %s or %s", where, r.Format, FormatFlrh, FormatSlack, FormatTemplate, FormatEmail)
		case (r.Format == FormatTemplate) != (r.Template != ""):
			return fmt.Errorf("%sa template is given with format %s, and only with it", where, FormatTemplate)
		}
		if err := r.checkTakes(where); err != nil {
			return err
		}
		if r.Template != "" {
			t, err := compileTemplate(r.Template)
			if err != nil {
				return fmt.Errorf("%sthe template: %w", where, err)
			}
			r.compiled = t
		}
	}
	return nil
}

// checkTakes checks the kinds and workflows a route takes.
func (r *Route) checkTakes(where string) error {
	switch {
	case r.Kinds != nil && len(r.Kinds) == 0:
		return errors.New(where + "kinds names no kind: leave it out to take every kind")
	case r.Workflows != nil && len(r.Workflows) == 0:
		return errors.New(where + "workflows names no workflow: leave it out to take every workflow's runs")
	}
	for _, k := range r.Kinds {
		if !slices.Contains(Kinds, k) {
			return fmt.Errorf("%s%q is not a kind of notice (%s)", where, k, strings.Join(Kinds, ", "))
		}
		if r.After > 0 && !slices.Contains(WaitingKinds, k) {
			return fmt.Errorf("%s%s is no run waiting for a person: a route told after a wait takes only %s", where, k, strings.Join(WaitingKinds, ", "))
		}
	}
	for _, w := range r.Workflows {
		if w == "" {
			return errors.New(where + "a workflow named is empty")
		}
	}
	return checkRouteLabels(where, r.Labels)
}

// checkRouteLabels checks the labels a route takes runs by: given, at
// least one, each as a run's may be (flrh's own keys included).
func checkRouteLabels(where string, labels map[string]string) error {
	if labels != nil && len(labels) == 0 {
		return errors.New(where + "labels names no label: leave it out to take every run's notices")
	}
	if err := label.Check(labels); err != nil {
		return errors.New(where + err.Error())
	}
	return nil
}

// RouteSpec is a route as a routes file writes it (ParseRoutes): its
// URL given, or the variable that holds it named, and the variable that
// holds its secret, to be read where the notifier runs.
type RouteSpec struct {
	Name string `json:"name"`
	// URL is the webhook's address, or URLEnv the variable (or the file
	// its _FILE variable names) that holds it: exactly one. A URL that
	// is itself a credential (a chat service's) belongs in a variable.
	URL    string `json:"url,omitempty"`
	URLEnv string `json:"url_env,omitempty"`
	// SecretEnv names the variable (or NAME_FILE) holding the secret;
	// DefaultSecretEnv when empty.
	SecretEnv string `json:"secret_env,omitempty"`
	Format    string `json:"format,omitempty"`
	// Template writes the body, with format "template" (Route.Template).
	Template  string   `json:"template,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
	Workflows []string `json:"workflows,omitempty"`
	// Labels, the labels a run must bear (Route.Labels).
	Labels map[string]string `json:"labels,omitempty"`
	// After, a Go duration ("4h", "30m"), makes the route an escalation
	// (Route.After).
	After string `json:"after,omitempty"`
	// From and To, with format email (Route.From, Route.To).
	From string   `json:"from,omitempty"`
	To   []string `json:"to,omitempty"`
	// OAuth2, with format email, logs in with an access token
	// (Route.OAuth2), its client's secret read from the variable (or
	// NAME_FILE) client_secret_env names.
	OAuth2 *OAuth2Spec `json:"oauth2,omitempty"`
}

// OAuth2Spec is a route's OAuth2 as a routes file writes it.
type OAuth2Spec struct {
	TokenURL        string `json:"token_url"`
	ClientID        string `json:"client_id"`
	ClientSecretEnv string `json:"client_secret_env"`
	Scope           string `json:"scope"`
}

// AfterDuration is the spec's After, checked by ParseRoutes; 0 when
// none is given.
func (s *RouteSpec) AfterDuration() time.Duration {
	d, _ := time.ParseDuration(s.After)
	return d
}

// DefaultSecretEnv is the variable a route's secret is read from when
// its spec names none.
const DefaultSecretEnv = "FLRH_NOTIFY_SECRET"

// routesFile is a routes file's one member.
type routesFile struct {
	Routes []json.RawMessage `json:"routes"`
}

// RoutesError is a routes file ParseRoutes refuses: where (the route's
// index and member, or the file's syntax) and why.
type RoutesError struct {
	Route  int    // the route's index from 0, or -1 for the file as a whole
	Member string // the member at fault, "" for the route or file as a whole
	Detail string
}

func (e *RoutesError) Error() string {
	switch {
	case e.Route < 0:
		return "notify routes: " + e.Detail
	case e.Member == "":
		return fmt.Sprintf("notify routes: route %d: %s", e.Route, e.Detail)
	}
	return fmt.Sprintf("notify routes: route %d, %s: %s", e.Route, e.Member, e.Detail)
}

// ParseRoutes reads a routes file, JSON, or YAML when yaml is set:
//
//	{"routes": [{"name": "approvals", "url_env": "FLRH_SLACK_URL", "format": "slack",
//	             "kinds": ["approval_waiting"], "workflows": ["refund-agent"]}, ...]}
//
// Every route is checked as Config's are, but for its URL and secret,
// which are read where it runs; members unknown, written twice, or of
// the wrong type are refused. The error is a *RoutesError (YAML that is
// not YAML, a *yamljson.Error).
func ParseRoutes(data []byte, yaml bool) ([]RouteSpec, error) {
	var err error
	if yaml {
		if data, _, err = yamljson.Convert(data); err != nil {
			return nil, err
		}
	} else if data, err = cjson.Canonicalize(data); err != nil {
		return nil, &RoutesError{Route: -1, Detail: "not a JSON document of the canonical kind (no duplicate members, no floating-point numbers): " + err.Error()}
	}
	var f routesFile
	if err := strictDecode(data, &f); err != nil {
		return nil, &RoutesError{Route: -1, Detail: err.Error()}
	}
	switch {
	case len(f.Routes) == 0:
		return nil, &RoutesError{Route: -1, Detail: "no routes: give at least one"}
	case len(f.Routes) > MaxRoutes:
		return nil, &RoutesError{Route: -1, Detail: fmt.Sprintf("%d routes, more than %d", len(f.Routes), MaxRoutes)}
	}
	specs := make([]RouteSpec, len(f.Routes))
	for i, raw := range f.Routes {
		s := &specs[i]
		if err := strictDecode(raw, s); err != nil {
			return nil, &RoutesError{Route: i, Detail: err.Error()}
		}
		if err := s.check(i, specs[:i]); err != nil {
			return nil, err
		}
	}
	return specs, nil
}

// check checks spec i of a file, after those before it.
func (s *RouteSpec) check(i int, before []RouteSpec) error {
	bad := func(member, format string, args ...any) error {
		return &RoutesError{Route: i, Member: member, Detail: fmt.Sprintf(format, args...)}
	}
	if !RouteName.MatchString(s.Name) {
		return bad("name", "%q is not 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", s.Name)
	}
	for _, o := range before {
		if o.Name == s.Name {
			return bad("name", "%q names an earlier route too", s.Name)
		}
	}
	switch {
	case (s.URL == "") == (s.URLEnv == ""):
		return bad("url", "give the webhook's url, or url_env naming the variable that holds it: one of them")
	case s.URL != "" && s.Format == FormatSMS:
		if _, ok := smsAccount(s.URL); !ok {
			return bad("url", "not a Twilio account's Messages resource (https://api.twilio.com/2010-04-01/Accounts/AC…/Messages.json)")
		}
	case s.URL != "" && s.Format == FormatEmail:
		u, err := url.Parse(s.URL)
		if err != nil {
			return bad("url", "not an smtp or smtps URL")
		}
		_, hasPass := u.User.Password()
		// With oauth2 the URL names the mailbox, which is no secret.
		if !emailScheme(u) || u.Host == "" || hasPass || (u.User != nil && s.OAuth2 == nil) {
			return bad("url", "not an smtp or smtps URL with a host and without user or password (a mail server's credentials go in url_env)")
		}
	case s.URL != "":
		if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return bad("url", "not an http or https URL with a host and without user or password")
		}
	case !envName.MatchString(s.URLEnv):
		return bad("url_env", "%q is not a variable's name", s.URLEnv)
	}
	if s.SecretEnv != "" && !envName.MatchString(s.SecretEnv) {
		return bad("secret_env", "%q is not a variable's name", s.SecretEnv)
	}
	if s.Format != "" && s.Format != FormatFlrh && s.Format != FormatSlack && s.Format != FormatTemplate && s.Format != FormatEmail && s.Format != FormatSMS {
		return bad("format", "%q is not %s, %s, %s, %s or %s", s.Format, FormatFlrh, FormatSlack, FormatTemplate, FormatEmail, FormatSMS)
	}
	if s.Format == FormatSMS {
		switch {
		case s.SecretEnv == "":
			return bad("secret_env", "name the variable holding the Twilio account's auth token")
		case len(s.Name) > 48:
			return bad("name", "an SMS route's name is at most 48 letters: each number's route is named NAME.DIGITS")
		}
		if member, why := checkSMSNumbers(s.From, s.To); why != "" {
			return bad(member, "%s", why)
		}
	} else if s.Format == FormatEmail {
		if s.SecretEnv != "" {
			return bad("secret_env", "an e-mail is not signed: the mail server's credentials go in the URL of url_env")
		}
		if member, why := checkRecipients(s.From, s.To); why != "" {
			return bad(member, "%s", why)
		}
		for j, a := range s.To {
			if slices.Contains(s.To[:j], a) {
				return bad("to", "%q is named twice", a)
			}
		}
	} else if s.From != "" || s.To != nil {
		return bad("from", "from and to are an e-mail or SMS route's (format email, sms)")
	}
	if o := s.OAuth2; o != nil {
		switch {
		case s.Format != FormatEmail:
			return bad("oauth2", "only an e-mail route logs in with oauth2")
		case !tokenURL(o.TokenURL):
			return bad("oauth2", "token_url %q is not https://… (http only to this machine)", o.TokenURL)
		case o.ClientID == "" || o.Scope == "":
			return bad("oauth2", "give client_id and scope")
		case !envName.MatchString(o.ClientSecretEnv):
			return bad("oauth2", "client_secret_env %q is not a variable's name", o.ClientSecretEnv)
		}
	}
	if (s.Format == FormatTemplate) != (s.Template != "") {
		return bad("template", "give a template with format %s, and only with it", FormatTemplate)
	}
	if s.Template != "" {
		if _, err := compileTemplate(s.Template); err != nil {
			return bad("template", "%v", err)
		}
	}
	if s.Kinds != nil && len(s.Kinds) == 0 {
		return bad("kinds", "names no kind: leave it out to take every kind")
	}
	for j, k := range s.Kinds {
		if !slices.Contains(Kinds, k) {
			return bad("kinds", "%q is not a kind of notice (%s)", k, strings.Join(Kinds, ", "))
		}
		if slices.Contains(s.Kinds[:j], k) {
			return bad("kinds", "%q is named twice", k)
		}
		if s.After != "" && !slices.Contains(WaitingKinds, k) {
			return bad("kinds", "%s is no run waiting for a person: a route with after takes only %s", k, strings.Join(WaitingKinds, ", "))
		}
	}
	if s.After != "" {
		if d, err := time.ParseDuration(s.After); err != nil || d <= 0 {
			return bad("after", "%q is not a positive duration such as 30m or 4h", s.After)
		}
	}
	if s.Workflows != nil && len(s.Workflows) == 0 {
		return bad("workflows", "names no workflow: leave it out to take every workflow's runs")
	}
	for j, w := range s.Workflows {
		if w == "" || len(w) > 256 {
			return bad("workflows", "workflow %d is not an id of 1 to 256 bytes", j)
		}
		if slices.Contains(s.Workflows[:j], w) {
			return bad("workflows", "%q is named twice", w)
		}
	}
	if err := checkRouteLabels("", s.Labels); err != nil {
		return bad("labels", "%v", err)
	}
	return nil
}

// envName is what a variable's name may be.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// strictDecode decodes one JSON value into v, refusing members v does
// not have and anything after the value.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}
