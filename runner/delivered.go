package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/store"
)

// Another system's deliveries (a webhook's) come at least once: a sender
// that saw no answer sends the same delivery again, under the same id.
// Deliver records a delivery's input under an inbox id made of the
// delivery's key, in the same write as the input (or as the run it
// starts), so the store takes a second delivery as the first submitted
// again and the run reads the input once, however often it came and
// whatever crashed between.

// Delivery is an input another system delivered.
type Delivery struct {
	// Key names the delivery among all a run may receive: the sender's
	// name and its delivery id ("shop:msg_1"). The same key with other
	// content is refused.
	Key string
	// RunID is the run the input is for.
	RunID string
	// Input is the input's JSON.
	Input []byte
	// Actor is the sender's name, recorded as an agent's.
	Actor string
	// Workflow and Version, when Workflow is set, start the run with the
	// input when it does not exist yet; Labels are then the run's.
	Workflow, Version string
	Labels            map[string]string
}

// Delivered is what Deliver did.
type Delivered struct {
	// Started: the delivery started the run (now, or when it came
	// before).
	Started bool
	// Again: the run held the delivery already; nothing was written.
	Again bool
}

// DeliveryInboxID is the inbox id of the input delivered under key.
func DeliveryInboxID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "delivery:" + hex.EncodeToString(sum[:16])
}

// Deliver hands the run a delivered input once: it starts the run with
// it (when d names a workflow and the run does not exist), or submits it
// to the run, or finds that the run holds it already. A run that does
// not exist, or has ended, refuses a delivery it does not hold as it
// refuses any input (store.CodeNotFound, EndedError).
func (r *Runner) Deliver(ctx context.Context, d Delivery) (Delivered, error) {
	id := DeliveryInboxID(d.Key)
	start := d.Workflow != ""
	if start {
		// A run that exists takes the delivery as its next input, judged
		// as inputs are, not as a first one.
		_, err := r.cfg.Store.Run(ctx, d.RunID)
		switch {
		case err == nil:
			start = false
		case store.CodeOf(err) != store.CodeNotFound:
			return Delivered{}, err
		}
	}
	if start {
		n, err := r.prepareStart(StartRequest{RunID: d.RunID, WorkflowID: d.Workflow, Version: d.Version, Input: d.Input,
			By: Actor{Name: d.Actor, Role: "agent", Capability: "run.start"}, Labels: d.Labels})
		if err != nil {
			return Delivered{}, err
		}
		n.input.ID = id
		err = r.startPrepared(ctx, n)
		if err == nil {
			return Delivered{Started: true}, nil
		}
		if store.CodeOf(err) != store.CodeExists {
			return Delivered{}, err
		}
		// The run exists: started by this delivery before, or by another.
	}
	v, err := cjson.Decode(d.Input)
	if err != nil {
		return Delivered{}, fmt.Errorf("runner: delivered input: %w", err)
	}
	if err := plainInput(v); err != nil {
		return Delivered{}, err
	}
	in, err := r.inbound(d.RunID, KindInput, Actor{Name: d.Actor, Role: "agent", Capability: "input.propose"}, v)
	if err != nil {
		return Delivered{}, err
	}
	in.ID = id
	prior, held, err := r.heldDelivery(ctx, d.RunID, id)
	if err != nil {
		return Delivered{}, err
	}
	if held {
		if prior.Digest != in.Digest {
			return Delivered{}, store.Errorf(store.CodeExists, "deliver", d.RunID, nil, "delivery %q came before with other content", d.Key)
		}
		return Delivered{Started: prior.Capability == "run.start", Again: true}, nil
	}
	if err := r.submitInbound(ctx, in); err != nil {
		return Delivered{}, err
	}
	return Delivered{}, nil
}

// heldDelivery is the run's inbox entry of id, if it holds one.
func (r *Runner) heldDelivery(ctx context.Context, runID, id string) (store.Inbound, bool, error) {
	entries, err := r.cfg.Store.Inbox(ctx, runID, false)
	if err != nil {
		return store.Inbound{}, false, err
	}
	for _, e := range entries {
		if e.ID == id {
			return e, true, nil
		}
	}
	return store.Inbound{}, false, nil
}
