package workflow

import (
	"fmt"
	"slices"
	"strings"

	"flrh.dev/flrh/aif/channel"
	"flrh.dev/flrh/aif/choice"
	"flrh.dev/flrh/aif/fixed"
	"flrh.dev/flrh/cjson"
)

// observation is what the controller observes of one accepted input: one
// outcome per modality of a discrete model, or one raw value per channel
// of a channel model.
type observation struct {
	discrete []int
	raw      map[string]float64
	// bad says why a channel observation could not be formed (a payload
	// member missing or not an integer); the step is skipped and traced.
	bad string
}

// ofEvent is the observation an accepted domain event makes, if any.
func (ctl *controller) ofEvent(evType string, members map[string]any) *observation {
	if ctl.ch == nil {
		if o, ok := ctl.events[evType]; ok {
			return &observation{discrete: o}
		}
		return nil
	}
	return ctl.channelObservation("event:"+evType, members)
}

// ofReceipt is the observation a receipt's outcome makes, if any.
func (ctl *controller) ofReceipt(outcome string) *observation {
	if ctl.ch == nil {
		if o, ok := ctl.receipts[outcome]; ok {
			return &observation{discrete: o}
		}
		return nil
	}
	return ctl.channelObservation("receipt:"+outcome, nil)
}

func (ctl *controller) channelObservation(key string, members map[string]any) *observation {
	spec, ok := ctl.chObserve[key]
	if !ok {
		return nil
	}
	ob := &observation{raw: map[string]float64{}}
	for _, name := range sortedKeys(spec) {
		switch v := spec[name].(type) {
		case int64:
			ob.raw[name] = float64(v)
		case string:
			m := strings.TrimPrefix(v, "$payload.")
			n, ok := members[m].(int64)
			if !ok {
				ob.bad = fmt.Sprintf("channel %s: the payload has no integer member %q", name, m)
				return ob
			}
			ob.raw[name] = float64(n)
		}
	}
	return ob
}

// chanBelief is a channel belief in fixed point: means and uncertainties
// in normalized units.
type chanBelief struct {
	Mu []fixed.Num `json:"mu"`
	V  []fixed.Num `json:"uncertainty"`
}

type chanBeliefs struct {
	Posterior chanBelief `json:"posterior"`
	Prior     chanBelief `json:"prior"`
}

func fixedVector(v []float64) []fixed.Num {
	out := make([]fixed.Num, len(v))
	for i, x := range v {
		out[i], _ = fixed.MustFloat(x)
	}
	return out
}

func (b chanBelief) float() channel.Belief {
	return channel.Belief{Mu: fixed.Floats(b.Mu), V: fixed.Floats(b.V)}
}

func fixedBelief(b channel.Belief) chanBelief {
	return chanBelief{Mu: fixedVector(b.Mu), V: fixedVector(b.V)}
}

// channelController reads a controller whose model is a channel document
// (aif/channel): observations name a raw value per channel, either an
// integer or "$payload.<member>" (an integer member of the event's
// payload); options and the do-nothing baseline name cascades of the
// model's actions.
func (c *compiler) channelController(w *Workflow, fname string, src []byte, m map[string]any) (*controller, *Error) {
	doc, derr := channel.DecodeDocument(src)
	if derr != nil {
		ptr := ""
		if ce, ok := derr.(*channel.Error); ok {
			ptr = ce.Pointer
		}
		return nil, bundleErr(CodeBadController, fname, ptr, "%v", derr)
	}
	ctl := &controller{ch: doc, modelDigest: cjson.Digest(src), chObserve: map[string]map[string]any{}, chOptions: map[string][]string{}}
	names := map[string]bool{}
	for _, s := range doc.Config.Channels {
		names[s.Name] = true
	}
	obs, ok := m["observe"].(map[string]any)
	if !ok {
		return nil, malformed("/controller/observe", "must be an object {events, receipts}")
	}
	for _, k := range sortedKeys(obs) {
		if k != "events" && k != "receipts" {
			return nil, malformed("/controller/observe/"+cjson.EscapePointer(k), "unknown member")
		}
		table, ok := obs[k].(map[string]any)
		if !ok {
			return nil, malformed("/controller/observe/"+k, "must map names to channel values")
		}
		for _, key := range sortedKeys(table) {
			ptr := "/controller/observe/" + k + "/" + cjson.EscapePointer(key)
			prefix := "receipt:"
			if k == "events" {
				prefix = "event:"
				if _, known := w.domain.Profile().EventTypes[key]; !known || key == ReceiptEventType {
					return nil, malformed(ptr, "the domain has no event type %s", key)
				}
			}
			vals, ok := table[key].(map[string]any)
			if !ok || len(vals) != len(names) {
				return nil, malformed(ptr, "must give a value for each of the model's %d channels", len(names))
			}
			for _, ch := range sortedKeys(vals) {
				at := ptr + "/" + cjson.EscapePointer(ch)
				if !names[ch] {
					return nil, malformed(at, "%q is not a channel of the model", ch)
				}
				switch v := vals[ch].(type) {
				case int64:
				case string:
					if k != "events" || !strings.HasPrefix(v, "$payload.") {
						return nil, malformed(at, "a value is an integer or, for an event, \"$payload.<member>\"")
					}
				default:
					return nil, malformed(at, "a value is an integer or, for an event, \"$payload.<member>\"")
				}
			}
			ctl.chObserve[prefix+key] = vals
		}
	}
	cascade := func(ptr string, v any) ([]string, *Error) {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return nil, malformed(ptr, "must list a cascade of the model's actions")
		}
		out := make([]string, len(list))
		for i, a := range list {
			s, _ := a.(string)
			if !slices.Contains(doc.Actions, s) {
				return nil, malformed(fmt.Sprintf("%s/%d", ptr, i), "%q is not an action of the model", s)
			}
			out[i] = s
		}
		return out, nil
	}
	opts, ok := m["options"].(map[string]any)
	if !ok || len(opts) == 0 {
		return nil, malformed("/controller/options", "must map each option the gates may offer to a cascade of the model's actions")
	}
	for _, k := range sortedKeys(opts) {
		ptr := "/controller/options/" + cjson.EscapePointer(k)
		if !cjson.ValidID(k) {
			return nil, malformed(ptr, "an option is an id")
		}
		cas, err := cascade(ptr, opts[k])
		if err != nil {
			return nil, err
		}
		ctl.chOptions[k] = cas
	}
	var err *Error
	if ctl.chNothing, err = cascade("/controller/nothing", m["nothing"]); err != nil {
		return nil, err
	}
	return ctl, nil
}

// observeChannels is one live update of a channel belief: the observation
// updates the prior (free energy per tick), and the next prior follows the
// do-nothing action through the model's kernel.
func (t *tick) observeChannels(ob observation) error {
	ctl, st := t.w.ctl, t.st
	cfg := ctl.ch.Config
	if ob.bad != "" {
		t.note("aif.observation_skipped", map[string]any{"why": ob.bad})
		return nil
	}
	o, err := cfg.Normalize(ob.raw)
	if err != nil {
		t.note("aif.observation_skipped", map[string]any{"why": err.Error()})
		return nil
	}
	tk, err := cfg.Update(st.AIF.Channels.Prior.float(), o)
	if err != nil {
		return fmt.Errorf("workflow: controller: %w", err)
	}
	next, err := cfg.Predict(ctl.ch.Kernel, tk.Posterior, ctl.chNothing[0])
	if err != nil {
		return fmt.Errorf("workflow: controller: %w", err)
	}
	rec := cfg.Record(tk)
	st.AIF = &belief{Tick: st.AIF.Tick + 1, FreeEnergy: rec.FreeEnergy,
		Channels: &chanBeliefs{Posterior: fixedBelief(tk.Posterior), Prior: fixedBelief(next)}}
	t.noteValue("aif.step", map[string]any{"model": ctl.modelDigest, "tick": st.AIF.Tick, "record": rec})
	return nil
}

// actedChannels moves the channel prior along the first action of the
// option H authorized.
func (t *tick) actedChannels(action string) error {
	ctl, st := t.w.ctl, t.st
	next, err := ctl.ch.Config.Predict(ctl.ch.Kernel, st.AIF.Channels.Posterior.float(), action)
	if err != nil {
		return fmt.Errorf("workflow: controller: %w", err)
	}
	st.AIF.Channels.Prior = fixedBelief(next)
	return nil
}

// scoreChannels scores each offered option's cascade from the channel
// posterior, with the model's temporal discount.
func (t *tick) scoreChannels(of offer, b *belief) (choice.Request, string, error) {
	ctl := t.w.ctl
	cfg := ctl.ch.Config
	post := b.Channels.Posterior.float()
	cand := func(id string, cas []string) (choice.Candidate, error) {
		_, steps, err := cfg.ScoreCascade(ctl.ch.Kernel, post, cas, ctl.ch.Discount)
		if err != nil {
			return choice.Candidate{}, err
		}
		cores := make([]choice.Core, len(steps))
		for i, s := range steps {
			cores[i] = choice.Core{Risk: s.Risk, Ambiguity: s.Ambiguity}
		}
		return choice.Cascade(id, cores, ctl.ch.Discount)
	}
	nothing, err := cand("nothing", ctl.chNothing)
	if err != nil {
		return choice.Request{}, "", fmt.Errorf("workflow: controller: %w", err)
	}
	req := choice.Request{Nothing: nothing, Margin: ctl.margin, Temperature: ctl.temperature, EventDigest: t.in.Digest}
	unscored := ""
	for _, o := range of.Options {
		cas, ok := ctl.chOptions[o]
		if !ok {
			unscored = o
			continue
		}
		c, err := cand(o, cas)
		if err != nil {
			return choice.Request{}, "", fmt.Errorf("workflow: controller: %w", err)
		}
		req.Candidates = append(req.Candidates, c)
	}
	return req, unscored, nil
}
