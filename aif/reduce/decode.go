package reduce

import (
	"bytes"
	"encoding/json"
	"fmt"

	"flrh.dev/flrh/aif/fixed"
)

// CountsKind is the kind of a counts document.
const CountsKind = "flrh.aif.counts"

// Counts is a decoded counts document: the frozen parent, the proposals and
// the threshold in nats.
type Counts struct {
	Parameters []Parameter
	Proposals  []Proposal
	Threshold  float64
}

type countsJSON struct {
	Kind       string `json:"kind"`
	Version    int    `json:"version"`
	Threshold  *json.Number
	Parameters []struct {
		Name      string        `json:"name"`
		Prior     []json.Number `json:"prior"`
		Posterior []json.Number `json:"posterior"`
	} `json:"parameters"`
	Proposals []struct {
		ID           string                   `json:"id"`
		ReducedPrior map[string][]json.Number `json:"reduced_prior"`
	} `json:"proposals"`
}

// MaxCountsBytes bounds a counts document.
const MaxCountsBytes = 16 << 20

// DecodeCounts parses a counts document. Numbers are decimal literals
// converted exactly to the 1e-9 grid.
func DecodeCounts(text []byte) (Counts, error) {
	if len(text) > MaxCountsBytes {
		return Counts{}, &Error{CodeSyntax, "", "document too large"}
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var doc countsJSON
	if err := dec.Decode(&doc); err != nil {
		return Counts{}, &Error{CodeSyntax, "", err.Error()}
	}
	if dec.More() {
		return Counts{}, &Error{CodeSyntax, "", "trailing data"}
	}
	if doc.Kind != CountsKind || doc.Version != 1 {
		return Counts{}, &Error{CodeSyntax, "/kind", fmt.Sprintf("want kind %q, version 1", CountsKind)}
	}
	c := Counts{Threshold: DefaultThreshold}
	if doc.Threshold != nil {
		v, err := num(*doc.Threshold, "/threshold")
		if err != nil {
			return Counts{}, err
		}
		c.Threshold = v
	}
	for i, p := range doc.Parameters {
		at := fmt.Sprintf("/parameters/%d", i)
		prior, err := vec(p.Prior, at+"/prior")
		if err != nil {
			return Counts{}, err
		}
		post, err := vec(p.Posterior, at+"/posterior")
		if err != nil {
			return Counts{}, err
		}
		c.Parameters = append(c.Parameters, Parameter{Name: p.Name, Prior: prior, Posterior: post})
	}
	for i, p := range doc.Proposals {
		at := fmt.Sprintf("/proposals/%d", i)
		if p.ID == "" {
			return Counts{}, &Error{CodeName, at + "/id", "empty id"}
		}
		prop := Proposal{ID: p.ID, Reduced: map[string][]float64{}}
		for _, name := range sortedKeys(p.ReducedPrior) {
			r, err := vec(p.ReducedPrior[name], at+"/reduced_prior/"+name)
			if err != nil {
				return Counts{}, err
			}
			prop.Reduced[name] = r
		}
		c.Proposals = append(c.Proposals, prop)
	}
	return c, nil
}

func num(n json.Number, at string) (float64, error) {
	f, err := fixed.Parse(string(n))
	if err != nil {
		return 0, &Error{CodeCount, at, fmt.Sprintf("%s: %v", n, err)}
	}
	return f.Float(), nil
}

func vec(v []json.Number, at string) ([]float64, error) {
	out := make([]float64, len(v))
	for i, n := range v {
		f, err := num(n, fmt.Sprintf("%s/%d", at, i))
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}
