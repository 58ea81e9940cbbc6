package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect/httpwire"
)

// MaxFaults bounds the number of pending fault rules.
const MaxFaults = 1024

// Fault tells the sandbox to misbehave on matching mutation requests. A
// request that passed validation takes the first pending rule that matches
// it, in the order the rules were added; a rule with Times > 0 is removed
// after that many requests, a rule with Times == 0 stays until cleared.
//
// A rule first waits DelayMillis (the key counts as in progress meanwhile,
// and nothing is applied yet); then either answers Status without applying
// anything, or applies the mutation as usual, waits DelayAfterMillis (a
// lookup now answers applied), and answers — or, if Drop is set, closes the
// connection without answering: the destination did the work and the
// caller cannot know it.
type Fault struct {
	Key         string `json:"key"`      // only requests with this idempotency key; "" matches every request
	Times       int64  `json:"times"`    // how many requests the rule applies to; 0 means until cleared
	DelayMillis int64  `json:"delay_ms"` // wait this long before handling
	Status      int64  `json:"status"`   // answer this status (400–599) without applying; 0 means apply
	// DelayAfterMillis waits this long after applying, before answering.
	DelayAfterMillis int64 `json:"delay_after_ms"`
	Drop             bool  `json:"drop"` // apply, then close the connection without answering
	// RetryAfterSeconds, with Status, sends a Retry-After header of this
	// many seconds: the destination asks to be left alone that long, as a
	// rate-limited service does with 429.
	RetryAfterSeconds int64 `json:"retry_after"`
}

// MaxRetryAfterSeconds bounds a fault rule's Retry-After.
const MaxRetryAfterSeconds = 3600

// Check reports whether the rule is well formed.
func (f Fault) Check() error {
	switch {
	case f.Key != "" && !httpwire.ValidKey(f.Key):
		return fmt.Errorf("sandbox: fault: key %q is not a valid idempotency key", f.Key)
	case f.Times < 0:
		return errors.New("sandbox: fault: times must not be negative")
	case f.DelayMillis < 0 || f.DelayMillis > MaxDelay.Milliseconds():
		return fmt.Errorf("sandbox: fault: delay_ms must be within 0..%d", MaxDelay.Milliseconds())
	case f.DelayAfterMillis < 0 || f.DelayAfterMillis > MaxDelay.Milliseconds():
		return fmt.Errorf("sandbox: fault: delay_after_ms must be within 0..%d", MaxDelay.Milliseconds())
	case f.Status != 0 && f.DelayAfterMillis != 0:
		return errors.New("sandbox: fault: a failing rule (status) applies nothing, so it has no delay after applying")
	case f.Status != 0 && (f.Status < 400 || f.Status > 599):
		return errors.New("sandbox: fault: status must be 0 or within 400..599")
	case f.Status != 0 && f.Drop:
		return errors.New("sandbox: fault: a rule either fails (status) or applies and drops (drop), not both")
	case f.RetryAfterSeconds < 0 || f.RetryAfterSeconds > MaxRetryAfterSeconds:
		return fmt.Errorf("sandbox: fault: retry_after must be within 0..%d seconds", MaxRetryAfterSeconds)
	case f.RetryAfterSeconds != 0 && f.Status == 0:
		return errors.New("sandbox: fault: retry_after goes with a failing status; a rule that applies asks no wait")
	case f.Status == 0 && !f.Drop && f.DelayMillis == 0 && f.DelayAfterMillis == 0:
		return errors.New("sandbox: fault: the rule does nothing; set delay_ms, delay_after_ms, status or drop")
	}
	return nil
}

// DecodeFault reads a fault rule from JSON: an object with any of the
// members key, times, delay_ms, delay_after_ms, status, drop and
// retry_after, and no others.
func DecodeFault(text []byte) (Fault, error) {
	v, err := cjson.Decode(text)
	if err != nil {
		return Fault{}, fmt.Errorf("sandbox: fault: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Fault{}, errors.New("sandbox: fault: not a JSON object")
	}
	var f Fault
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		val := m[k]
		var ok bool
		switch k {
		case "key":
			f.Key, ok = val.(string)
		case "times":
			f.Times, ok = val.(int64)
		case "delay_ms":
			f.DelayMillis, ok = val.(int64)
		case "delay_after_ms":
			f.DelayAfterMillis, ok = val.(int64)
		case "status":
			f.Status, ok = val.(int64)
		case "drop":
			f.Drop, ok = val.(bool)
		case "retry_after":
			f.RetryAfterSeconds, ok = val.(int64)
		default:
			return Fault{}, fmt.Errorf("sandbox: fault: unknown member %q", k)
		}
		if !ok {
			return Fault{}, fmt.Errorf("sandbox: fault: member %q has the wrong type", k)
		}
	}
	return f, f.Check()
}

func (f Fault) object() map[string]any {
	return map[string]any{"key": f.Key, "times": f.Times, "delay_ms": f.DelayMillis, "delay_after_ms": f.DelayAfterMillis, "status": f.Status, "drop": f.Drop, "retry_after": f.RetryAfterSeconds}
}

// Inject adds a fault rule.
func (s *Sandbox) Inject(f Fault) error {
	if err := f.Check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) >= MaxFaults {
		return fmt.Errorf("sandbox: fault: at most %d rules may be pending", MaxFaults)
	}
	s.faults = append(s.faults, f)
	return nil
}

// ClearFaults removes every pending fault rule.
func (s *Sandbox) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// Faults returns the pending fault rules, Times counting down.
func (s *Sandbox) Faults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.faults)
}

// takeFaultLocked consumes one use of the first rule matching key.
func (s *Sandbox) takeFaultLocked(key string) (Fault, bool) {
	for i, f := range s.faults {
		if f.Key != "" && f.Key != key {
			continue
		}
		if f.Times > 0 {
			s.faults[i].Times--
			if s.faults[i].Times == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
		}
		return f, true
	}
	return Fault{}, false
}

func (s *Sandbox) handleFaults(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		text, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			problem(w, http.StatusBadRequest, httpwire.CodeMalformed, err.Error())
			return
		}
		f, err := DecodeFault(text)
		if err == nil {
			err = s.Inject(f)
		}
		if err != nil {
			problem(w, http.StatusBadRequest, httpwire.CodeMalformed, err.Error())
			return
		}
	case http.MethodDelete:
		s.ClearFaults()
	}
	list := []any{}
	for _, f := range s.Faults() {
		list = append(list, f.object())
	}
	b, err := cjson.Encode(map[string]any{"kind": "SandboxFaults", "protocol": httpwire.Protocol, "faults": list})
	if err != nil {
		problem(w, http.StatusInternalServerError, "FAULTS_UNENCODABLE", err.Error())
		return
	}
	write(w, http.StatusOK, b)
}
