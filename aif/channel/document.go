package channel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"flrh.dev/flrh/aif/choice"
	"flrh.dev/flrh/aif/fixed"
	"flrh.dev/flrh/cjson"
)

// DocumentKind is the kind of a channel-model document.
const DocumentKind = "flrh.aif.channels"

// Document is a decoded channel-model document: the configuration, the
// shared kernel, the starting belief state, and how cascades are chosen.
type Document struct {
	Config   *Config
	Kernel   Effects
	Actions  []string // sorted action names
	Start    Hypotheses
	Cascades [][]string // candidate cascades (ids are actions joined by " > ")
	Nothing  []string   // the do-nothing cascade, scored as the abstention baseline
	Discount float64
	Margin   float64
	Dial     choice.Dial
}

type docJSON struct {
	Kind        string                `json:"kind"`
	Version     int                   `json:"version"`
	Goal        string                `json:"goal"`
	Subgoals    []string              `json:"subgoals"`
	Blockers    []string              `json:"blockers"`
	PatternFit  *json.Number          `json:"pattern_fit"`
	Channels    []channelJSON         `json:"channels"`
	Alpha       json.Number           `json:"alpha"`
	Beta        json.Number           `json:"beta"`
	VFloor      json.Number           `json:"v_floor"`
	VMin        json.Number           `json:"v_min"`
	PiMin       json.Number           `json:"pi_min"`
	PiMax       json.Number           `json:"pi_max"`
	InitialMu   []json.Number         `json:"initial_mu"`
	InitialV    json.Number           `json:"initial_uncertainty"`
	Actions     map[string]effectJSON `json:"actions"`
	Horizon     int                   `json:"horizon"`
	Nothing     string                `json:"do_nothing"`
	Discount    *json.Number          `json:"temporal_discount"`
	Margin      *json.Number          `json:"abstain_margin"`
	Temperature *temperatureJSON      `json:"temperature"`
}

type channelJSON struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Min        json.Number `json:"min"`
	Max        json.Number `json:"max"`
	PreferMean json.Number `json:"prefer_mean"`
	PreferVar  json.Number `json:"prefer_var"`
}

type effectJSON struct {
	Shift  []json.Number `json:"shift"`
	AddVar []json.Number `json:"add_var"`
}

type temperatureJSON struct {
	Base           json.Number  `json:"base"`
	Min            json.Number  `json:"min"`
	Max            json.Number  `json:"max"`
	KRegression    *json.Number `json:"k_regression"`
	KUncertainty   *json.Number `json:"k_uncertainty"`
	KContradiction *json.Number `json:"k_contradiction"`
	KTimePressure  *json.Number `json:"k_time_pressure"`
}

// MaxDocumentBytes bounds a channel-model document.
const MaxDocumentBytes = 4 << 20

// MaxCascades bounds the enumerated cascades (actions^horizon).
const MaxCascades = 1 << 14

func dnum(n json.Number, at string) (float64, error) {
	f, err := fixed.Parse(string(n))
	if err != nil {
		return 0, &Error{CodeConfig, at, fmt.Sprintf("%q: %v", n, err)}
	}
	return f.Float(), nil
}

func dopt(n *json.Number, at string, def float64) (float64, error) {
	if n == nil {
		return def, nil
	}
	return dnum(*n, at)
}

func dvec(v []json.Number, at string) ([]float64, error) {
	out := make([]float64, len(v))
	for i, n := range v {
		x, err := dnum(n, fmt.Sprintf("%s/%d", at, i))
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// DecodeDocument parses and validates a channel-model document. Numbers are
// decimal literals converted exactly to the 1e-9 grid.
func DecodeDocument(text []byte) (*Document, error) {
	if len(text) > MaxDocumentBytes {
		return nil, &Error{CodeConfig, "", "document too large"}
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var dj docJSON
	if err := dec.Decode(&dj); err != nil {
		return nil, &Error{CodeConfig, "", err.Error()}
	}
	if dec.More() {
		return nil, &Error{CodeConfig, "", "trailing data"}
	}
	if dj.Kind != DocumentKind || dj.Version != 1 {
		return nil, &Error{CodeConfig, "/kind", fmt.Sprintf("want kind %q, version 1", DocumentKind)}
	}
	c := &Config{}
	var err error
	for i, ch := range dj.Channels {
		at := fmt.Sprintf("/channels/%d", i)
		s := Spec{Name: ch.Name, Type: ch.Type}
		if s.Min, err = dnum(ch.Min, at+"/min"); err != nil {
			return nil, err
		}
		if s.Max, err = dnum(ch.Max, at+"/max"); err != nil {
			return nil, err
		}
		if s.PreferMean, err = dnum(ch.PreferMean, at+"/prefer_mean"); err != nil {
			return nil, err
		}
		if s.PreferVar, err = dnum(ch.PreferVar, at+"/prefer_var"); err != nil {
			return nil, err
		}
		c.Channels = append(c.Channels, s)
	}
	for _, p := range []struct {
		dst *float64
		n   json.Number
		at  string
	}{{&c.Alpha, dj.Alpha, "/alpha"}, {&c.Beta, dj.Beta, "/beta"}, {&c.VFloor, dj.VFloor, "/v_floor"},
		{&c.VMin, dj.VMin, "/v_min"}, {&c.PiMin, dj.PiMin, "/pi_min"}, {&c.PiMax, dj.PiMax, "/pi_max"}} {
		if *p.dst, err = dnum(p.n, p.at); err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	doc := &Document{Config: c, Kernel: Effects{}}
	mu, err := dvec(dj.InitialMu, "/initial_mu")
	if err != nil {
		return nil, err
	}
	v0, err := dnum(dj.InitialV, "/initial_uncertainty")
	if err != nil {
		return nil, err
	}
	b, err := c.Initial(mu, v0)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Pointer = strings.Replace(e.Pointer, "/mu", "/initial_mu", 1)
		}
		return nil, err
	}
	pf, err := dopt(dj.PatternFit, "/pattern_fit", 1)
	if err != nil {
		return nil, err
	}
	doc.Start = Hypotheses{Goal: dj.Goal, Subgoals: dj.Subgoals, Blockers: dj.Blockers, PatternFit: pf, Belief: b, ExpectedNext: append([]float64(nil), b.Mu...)}
	if doc.Start.Goal == "" {
		return nil, &Error{CodeConfig, "/goal", "a belief state names its goal"}
	}
	names := make([]string, 0, len(dj.Actions))
	for name := range dj.Actions {
		names = append(names, name)
	}
	sort.Strings(names)
	doc.Actions = names
	if len(doc.Actions) == 0 {
		return nil, &Error{CodeConfig, "/actions", "at least one action"}
	}
	for _, name := range doc.Actions {
		at := "/actions/" + cjson.EscapePointer(name)
		if name == "" || strings.Contains(name, ">") {
			return nil, &Error{CodeConfig, at, "action names are non-empty and contain no '>'"}
		}
		e := dj.Actions[name]
		shift, err := dvec(e.Shift, at+"/shift")
		if err != nil {
			return nil, err
		}
		add, err := dvec(e.AddVar, at+"/add_var")
		if err != nil {
			return nil, err
		}
		if len(shift) != len(c.Channels) || len(add) != len(c.Channels) {
			return nil, &Error{CodeBeliefShape, at, "one shift and one added variance per channel"}
		}
		for i, x := range add {
			if x < 0 {
				return nil, &Error{CodeConfig, fmt.Sprintf("%s/add_var/%d", at, i), "added variance must be ≥ 0"}
			}
		}
		doc.Kernel[name] = Effect{Shift: shift, AddVar: add}
	}
	h := dj.Horizon
	if h == 0 {
		h = 1
	}
	if h < 1 || h > 8 {
		return nil, &Error{CodeConfig, "/horizon", "must be in 1..8"}
	}
	n := 1
	for i := 0; i < h; i++ {
		n *= len(doc.Actions)
		if n > MaxCascades {
			return nil, &Error{CodeConfig, "/horizon", fmt.Sprintf("more than %d cascades", MaxCascades)}
		}
	}
	var rec func(prefix []string)
	rec = func(prefix []string) {
		if len(prefix) == h {
			doc.Cascades = append(doc.Cascades, append([]string(nil), prefix...))
			return
		}
		for _, a := range doc.Actions {
			rec(append(prefix, a))
		}
	}
	rec(nil)
	if _, ok := doc.Kernel[dj.Nothing]; !ok {
		return nil, &Error{CodeConfig, "/do_nothing", fmt.Sprintf("%q is not a declared action", dj.Nothing)}
	}
	for i := 0; i < h; i++ {
		doc.Nothing = append(doc.Nothing, dj.Nothing)
	}
	if doc.Discount, err = dopt(dj.Discount, "/temporal_discount", 1); err != nil {
		return nil, err
	}
	if !(doc.Discount > 0) || doc.Discount > 1 {
		return nil, &Error{CodeConfig, "/temporal_discount", "must be in (0, 1]"}
	}
	if doc.Margin, err = dopt(dj.Margin, "/abstain_margin", 0); err != nil {
		return nil, err
	}
	if doc.Margin < 0 {
		return nil, &Error{CodeConfig, "/abstain_margin", "must be ≥ 0"}
	}
	if t := dj.Temperature; t != nil {
		d := &doc.Dial
		for _, p := range []struct {
			dst *float64
			n   *json.Number
			at  string
		}{{&d.Base, &t.Base, "/temperature/base"}, {&d.Min, &t.Min, "/temperature/min"}, {&d.Max, &t.Max, "/temperature/max"},
			{&d.KRegression, t.KRegression, "/temperature/k_regression"}, {&d.KUncertainty, t.KUncertainty, "/temperature/k_uncertainty"},
			{&d.KContradiction, t.KContradiction, "/temperature/k_contradiction"}, {&d.KTimePressure, t.KTimePressure, "/temperature/k_time_pressure"}} {
			if *p.dst, err = dopt(p.n, p.at, 0); err != nil {
				return nil, err
			}
		}
		if _, err := d.Temperature(choice.Diagnostics{}); err != nil {
			return nil, &Error{CodeConfig, "/temperature", err.Error()}
		}
	}
	return doc, nil
}
