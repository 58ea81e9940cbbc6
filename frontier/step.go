package frontier

import (
	"slices"

	"flrh.dev/flrh/cjson"
)

// Backpressure is an RBackpressure report: the next state's occupancy next
// to the profile's limits.
type Backpressure struct {
	OpenEpochCount    int64
	ActiveValueCount  int64
	ReadyBatchCount   int64
	OutstandingDemand int64
	Limits            Limits
}

// Stats are the per-transition RStats counters.
type Stats struct {
	AcceptedDeltaCount   int64
	RetractedDeltaCount  int64
	StabilizedEpochCount int64
	PublishedBatchCount  int64
}

// Transition is an accepted RTransition.
type Transition struct {
	ProfileDigest    string
	PriorStateDigest string
	CommandDigest    string
	Next             *State
	Published        []*PublishedBatch // publication order
	Backpressure     Backpressure
	Stats            Stats
	Digest           string // transition_digest
}

// Step is step_r: it applies one command to prior under profile and returns
// the next state and whatever was published, or a typed rejection. A nil
// prior means the initial state. Step never modifies prior, and a rejection
// carries no state at all, so a refused command changes nothing.
func Step(prior *State, profile Profile, cmd Command) (*Transition, *Rejection) {
	t, rej := step(prior, &profile, cmd, stepRecord, nil, nil)
	if rej != nil {
		if profile.digest != "" {
			rej.ProfileDigest = profile.digest
		}
		return nil, rej
	}
	return &t, nil
}

// StepState is Step for a caller that keeps only the next state and what
// was published: the same next state (sealed, its digest taken) and the
// same batches, or the same rejection, without the command and transition
// digests a Transition records — two SHA-256 passes per command, one of
// them over the whole next state. The workflow, which starts R afresh
// every tick and records only the batches, takes this path.
func StepState(prior *State, profile Profile, cmd Command) (*State, []*PublishedBatch, *Rejection) {
	t, rej := step(prior, &profile, cmd, stepSeal, nil, nil)
	if rej != nil {
		if profile.digest != "" {
			rej.ProfileDigest = profile.digest
		}
		return nil, nil, rej
	}
	return t.Next, t.Published, nil
}

// Publish steps prior through cmds in order, as StepState would one after
// the other, and returns only what they published, in publication order;
// or, at the first command refused, its index and StepState's rejection
// (the commands before it published, the batches are dropped). Its caller
// keeps no state: the workflow starts R from the same state every tick and
// records only the batches. So no state after prior is sealed — neither its
// canonical pieces written nor its digest taken, a SHA-256 pass over the
// whole state per command — since nothing ever encodes or digests them; a
// batch's identity does not depend on the state it was published from.
func Publish(prior *State, profile Profile, cmds []Command) ([]*PublishedBatch, int, *Rejection) {
	return publish(prior, profile, cmds, false)
}

// PublishUndigested is Publish for a caller that reads no batch's
// published digest: each batch's Digest is empty, and so is the
// published_batch_digest of its canonical bytes, and neither is derived.
// Everything else — the batches' every other member, their order, the
// index and rejection of a command refused — is Publish's. A batch built
// before (ready in prior, built by the steps that reached it) is
// published as it was built, with the digest it was given then.
func PublishUndigested(prior *State, profile Profile, cmds []Command) ([]*PublishedBatch, int, *Rejection) {
	return publish(prior, profile, cmds, true)
}

func publish(prior *State, profile Profile, cmds []Command, undigested bool) ([]*PublishedBatch, int, *Rejection) {
	var out []*PublishedBatch
	h := hashers.Get().(*hasher) // one hasher for every command's digests
	defer putHasher(h)
	h.undigested = undigested
	// The states between the commands are only ever the next command's
	// prior: two headers serve them all, each written over once the state
	// it held is no longer the prior (its slices, shared with the states
	// after it and never written through, stay as they were). They are
	// the pooled hasher's, which nothing holds once Publish returns: the
	// batches it returns hold no state.
	var states *[2]State
	if len(cmds) > 1 {
		states = &h.states
	}
	s := prior
	for i, cmd := range cmds {
		var into *State
		if states != nil {
			into = &states[i%2]
		}
		t, rej := step(s, &profile, cmd, stepBare, h, into)
		if rej != nil {
			if profile.digest != "" {
				rej.ProfileDigest = profile.digest
			}
			return nil, i, rej
		}
		s = t.Next
		switch {
		case len(t.Published) == 0:
		case out == nil:
			// The first batches are the list as the step returned it,
			// capped at its length (drain): a later command's batches
			// are appended to a copy, and the states it shares an array
			// with hold none of its elements. Nothing else keeps the
			// step's list: a tick of one published epoch takes no list
			// of its own.
			out = t.Published
		default:
			out = append(out, t.Published...)
		}
	}
	return out, -1, nil
}

// stepMode is what step takes besides the next state and the batches.
type stepMode int

const (
	stepRecord stepMode = iota // the transition record: command and transition digests (Step)
	stepSeal                   // the next state sealed: its pieces and digest (StepState)
	stepBare                   // nothing: a state only stepped further (Publish)
)

// step is step_r; mode says what it takes beyond the next state's values
// and the published batches. A bare state (stepBare) is only ever the
// prior of another bare step: sealing a state reuses its prior's pieces.
// into, when not nil, is the header the next state is written in (it must
// not be prior, and nothing may hold it but the caller); nil allocates
// one.
func step(prior *State, p *Profile, cmd Command, mode stepMode, h *hasher, into *State) (Transition, *Rejection) {
	if p.digest == "" {
		return Transition{}, reject(CodeMalformedDataflowProfile, "/profile")
	}
	if prior == nil {
		prior = InitialState(*p)
	}
	if prior.profileDigest != p.digest {
		return Transition{}, reject(CodeProfileMismatch, "/prior_state/profile_digest")
	}
	if prior.dataflow != p.dataflow {
		return Transition{}, reject(CodeDataflowVersionMismatch, "/prior_state/dataflow_version")
	}
	if cmd == nil {
		return Transition{}, reject(CodeMalformedCommand, "/command")
	}
	pd, df := cmd.base()
	if pd != p.digest {
		return Transition{}, reject(CodeProfileMismatch, "/command/profile_digest")
	}
	if df != p.dataflow {
		return Transition{}, reject(CodeDataflowVersionMismatch, "/command/dataflow_version")
	}
	next := into
	if next == nil {
		next = new(State)
	}
	*next = State{
		profileDigest: prior.profileDigest,
		dataflow:      prior.dataflow,
		sources:       prior.sources,
		marks:         prior.marks,
		known:         prior.known,
		demand:        prior.demand,
		epochs:        prior.epochs,
		ready:         prior.ready,
		// In Publish's own headers (into) the prior is dead once this
		// state is made: its own marks become this state's own.
		ownMarks: into != nil && prior.ownMarks,
	}
	var (
		stats     Stats
		published []*PublishedBatch
		digests   []string
		rej       *Rejection
	)
	if h == nil {
		h = newHasher() // every digest this command takes
	}
	switch c := cmd.(type) {
	case ApplyDeltaBatch:
		// The delta digests are bound only by the command digest, which
		// a bare step does not take.
		digests, rej = applyDeltas(p, prior, next, c, &stats, mode == stepRecord)
	case AdvanceFrontier:
		published, rej = advance(p, prior, next, c, &stats, h, into != nil)
	case GrantDemand:
		published, rej = grant(p, prior, next, c, &stats)
	default:
		return Transition{}, reject(CodeMalformedCommand, "/command/kind")
	}
	if rej != nil {
		return Transition{}, rej
	}
	if mode == stepBare {
		return Transition{Next: next, Published: published}, nil
	}
	next.seal(prior, h)
	if mode == stepSeal {
		return Transition{Next: next, Published: published}, nil
	}
	t := Transition{
		ProfileDigest:    p.digest,
		PriorStateDigest: prior.digest,
		CommandDigest:    commandDigest(cmd, digests, h),
		Next:             next,
		Published:        published,
		Stats:            stats,
		Backpressure: Backpressure{
			OpenEpochCount:    int64(len(next.epochs)),
			ActiveValueCount:  int64(next.ActiveValueCount()),
			ReadyBatchCount:   int64(len(next.ready)),
			OutstandingDemand: next.demand,
			Limits:            p.limits,
		},
	}
	t.Digest = t.computeDigest(h)
	return t, nil
}

// applyDeltas validates a delta batch against the prior state and builds
// the next open epochs. With withDigests, it returns the sorted,
// de-duplicated delta digests the command digest binds.
func applyDeltas(p *Profile, prior, next *State, c ApplyDeltaBatch, stats *Stats, withDigests bool) ([]string, *Rejection) {
	n := len(c.Deltas)
	if n == 0 {
		return nil, reject(CodeMalformedCommand, "/command/deltas")
	}
	if int64(n) > p.limits.MaxDeltasPerCommand {
		return nil, reject(CodeInputLimitExceeded, "/command/deltas").limit(p.limits.MaxDeltasPerCommand, int64(n))
	}
	// Per-delta checks run in the caller's order so the reported pointer
	// names the caller's index.
	for i := range c.Deltas {
		d := &c.Deltas[i]
		if d.deliveryID == "" { // the zero ValueDelta
			return nil, reject(CodeMalformedValueDelta, deltaPath(i, ""))
		}
		si := p.sourceIndex(d.sourceID)
		if si < 0 {
			r := reject(CodeUnknownFrontierSource, deltaPath(i, "/source_id"))
			r.Context.SourceID = d.sourceID
			return nil, r
		}
		if d.dataflow != p.dataflow {
			return nil, reject(CodeDataflowVersionMismatch, deltaPath(i, "/dataflow_version"))
		}
		if d.value.kind == KindEffectProposal && d.value.proposal.Versions.Dataflow != p.dataflow {
			return nil, reject(CodeDataflowVersionMismatch, deltaPath(i, "/value/versions/dataflow"))
		}
		if prior.known[si] && d.logicalTime < prior.marks[si] {
			r := reject(CodeLateDelta, deltaPath(i, "/logical_time")).at(d.logicalTime)
			r.Context.SourceID = d.sourceID
			return nil, r
		}
	}
	// Normalize the batch as a set: one member per delivery id, ordered by
	// (logical time, delivery id) so each epoch is merged once.
	order := sortByDelivery(c.Deltas)
	norm := make([]*ValueDelta, 0, n)
	for i := 0; i < n; {
		first := order[i].d
		j := i + 1
		for j < n && order[j].d.deliveryID == first.deliveryID {
			j++
		}
		group := order[i:j]
		removals := 0
		for _, k := range group {
			if k.d.diff < 0 {
				removals++
			}
		}
		if removals > 1 || (removals == 1 && len(group) > 1) {
			r := reject(CodeAmbiguousDeltaBatch, "/command/deltas").at(first.logicalTime)
			r.Context.DeliveryID = first.deliveryID
			return nil, r
		}
		for _, k := range group[1:] {
			if k.d.Digest() != first.Digest() {
				r := reject(CodeValueIdentityConflict, "/command/deltas").at(first.logicalTime)
				r.Context.DeliveryID = first.deliveryID
				return nil, r
			}
		}
		norm = append(norm, first)
		i = j
	}
	var digests []string
	if withDigests {
		digests = sortedDigests(norm)
	}

	// Check every member against the active deliveries before building.
	for _, d := range norm {
		e := findEpoch(prior.epochs, d.logicalTime)
		var have *storedValue
		if e != nil {
			if k := e.find(d.deliveryID); k >= 0 {
				have = e.values[k]
			}
		}
		switch {
		case d.diff < 0 && have == nil:
			r := reject(CodeUnknownDelivery, "/command/deltas").at(d.logicalTime)
			r.Context.DeliveryID = d.deliveryID
			return nil, r
		case have != nil && (have.value.digest != d.value.digest || have.sourceID != d.sourceID):
			r := reject(CodeValueIdentityConflict, "/command/deltas").at(d.logicalTime)
			r.Context.DeliveryID = d.deliveryID
			return nil, r
		}
	}

	slices.SortFunc(norm, func(a, b *ValueDelta) int {
		switch {
		case a.logicalTime < b.logicalTime:
			return -1
		case a.logicalTime > b.logicalTime:
			return 1
		}
		return compareCanonString(a.deliveryID, b.deliveryID)
	})
	epochs := make([]*epoch, 0, len(prior.epochs)+1)
	pi := 0 // next prior epoch to copy
	for i := 0; i < len(norm); {
		t := norm[i].logicalTime
		j := i + 1
		for j < len(norm) && norm[j].logicalTime == t {
			j++
		}
		for pi < len(prior.epochs) && prior.epochs[pi].time < t {
			epochs = append(epochs, prior.epochs[pi])
			pi++
		}
		var old *epoch
		if pi < len(prior.epochs) && prior.epochs[pi].time == t {
			old = prior.epochs[pi]
			pi++
		}
		if e := mergeEpoch(old, t, norm[i:j], stats); len(e.values) > 0 {
			epochs = append(epochs, e)
		}
		i = j
	}
	epochs = append(epochs, prior.epochs[pi:]...)
	next.epochs = epochs

	active := int64(next.ActiveValueCount())
	if active > p.limits.MaxActiveValues {
		return nil, reject(CodeQueueCapacityExceeded, "/command/deltas").limit(p.limits.MaxActiveValues, active)
	}
	if int64(len(epochs)) > p.limits.MaxOpenEpochs {
		return nil, reject(CodeQueueCapacityExceeded, "/command/deltas").limit(p.limits.MaxOpenEpochs, int64(len(epochs)))
	}
	return digests, nil
}

// mergeEpoch returns a new epoch holding old's values with the deltas (all
// at time t, in delivery-id order, already checked) applied.
//
// A merge of at most mergedRoom values (a tick's proposal and verdict at a
// new time) allocates the epoch, its value list and its added values
// together (mergedEpoch); nothing of the box is shared with another epoch
// but the added values, which later epochs may point to as old's.
func mergeEpoch(old *epoch, t int64, ds []*ValueDelta, stats *Stats) *epoch {
	return mergeEpochIn(old, t, ds, stats, true)
}

// mergeEpochIn is mergeEpoch; boxed false allocates every part on its
// own, the reference a boxed merge is held to in tests.
func mergeEpochIn(old *epoch, t int64, ds []*ValueDelta, stats *Stats, boxed bool) *epoch {
	var prev []*storedValue
	if old != nil {
		prev = old.values
	}
	var (
		e     *epoch
		vals  []*storedValue
		added []storedValue
		arena []byte // the pre and post pieces of the added values
	)
	if n := len(prev) + len(ds); boxed && n <= mergedRoom {
		box := new(mergedEpoch)
		e, vals, added = &box.e, box.vals[:0:n], box.added[:0:len(ds)]
	} else {
		e, vals = new(epoch), make([]*storedValue, 0, n)
	}
	k := 0
	for _, d := range ds {
		for k < len(prev) && prev[k].deliveryID < d.deliveryID {
			vals = append(vals, prev[k])
			k++
		}
		present := k < len(prev) && prev[k].deliveryID == d.deliveryID
		switch {
		case d.diff < 0:
			k++ // drop the retracted delivery
			stats.RetractedDeltaCount++
		case present:
			vals = append(vals, prev[k]) // an exact repeat is idempotent
			k++
		default:
			if arena == nil {
				if added == nil {
					added = make([]storedValue, 0, len(ds))
				}
				size := 0
				for _, d := range ds {
					size += storedPieceSize(d.deliveryID, d.sourceID, d.value.kind, d.value.digest)
				}
				arena = make([]byte, 0, size)
			}
			added = append(added, storedValue{deliveryID: d.deliveryID, sourceID: d.sourceID, logicalTime: t, value: d.value})
			sv := &added[len(added)-1]
			arena = sv.encode(arena)
			vals = append(vals, sv)
			stats.AcceptedDeltaCount++
		}
	}
	vals = append(vals, prev[k:]...)
	e.time, e.values = t, vals
	return e.seal()
}

// mergedRoom is how many values a mergedEpoch holds.
const mergedRoom = 2

// mergedEpoch is a small merged epoch in one allocation: the epoch, its
// value list and the values the merge added.
type mergedEpoch struct {
	e     epoch
	vals  [mergedRoom]*storedValue
	added [mergedRoom]storedValue
}

func findEpoch(es []*epoch, t int64) *epoch {
	i, ok := slices.BinarySearchFunc(es, t, func(e *epoch, t int64) int {
		switch {
		case e.time < t:
			return -1
		case e.time > t:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return es[i]
}

func deltaPath(i int, sub string) string {
	return "/command/deltas/" + string(appendInt(nil, int64(i))) + sub
}

// advance moves one source's low watermark and stabilizes every open epoch
// the new global watermark strictly passes.
//
// own says next is one of Publish's own headers (step's into).
func advance(p *Profile, prior, next *State, c AdvanceFrontier, stats *Stats, h *hasher, own bool) ([]*PublishedBatch, *Rejection) {
	si := p.sourceIndex(c.SourceID)
	if si < 0 {
		r := reject(CodeUnknownFrontierSource, "/command/source_id")
		if cjson.ValidID(c.SourceID) {
			r.Context.SourceID = c.SourceID
		}
		return nil, r
	}
	if c.LowWatermark < 0 {
		return nil, reject(CodeMalformedCommand, "/command/low_watermark")
	}
	if prior.known[si] && c.LowWatermark < prior.marks[si] {
		r := reject(CodeFrontierRegression, "/command/low_watermark").expect(prior.marks[si], c.LowWatermark)
		r.Context.SourceID = c.SourceID
		return nil, r
	}
	// A state of Publish's own headers after an advance holds marks of
	// its own (next.ownMarks, set by step from its prior's): the next
	// advance writes them in place. Any other state's are copied first.
	marks, known := next.marks, next.known
	if !next.ownMarks {
		marks, known = slices.Clone(prior.marks), slices.Clone(prior.known)
		next.ownMarks = own
	}
	marks[si], known[si] = c.LowWatermark, true
	next.marks, next.known = marks, known

	low, ok := globalMark(marks, known)
	closing := 0
	if ok {
		for closing < len(prior.epochs) && prior.epochs[closing].time < low {
			closing++
		}
	}
	ready := slices.Clone(prior.ready)
	for _, e := range prior.epochs[:closing] {
		b, rej := buildBatch(p, e, low, h)
		if rej != nil {
			return nil, rej
		}
		ready = append(ready, b)
	}
	ready, demand, published := drain(ready, prior.demand)
	if int64(len(ready)) > p.limits.MaxReadyBatches {
		return nil, reject(CodeQueueCapacityExceeded, "/prior_state/ready_batches").limit(p.limits.MaxReadyBatches, int64(len(ready)))
	}
	next.epochs = prior.epochs[closing:]
	next.ready, next.demand = ready, demand
	stats.StabilizedEpochCount = int64(closing)
	stats.PublishedBatchCount = int64(len(published))
	return published, nil
}

// grant adds whole-batch demand and publishes what it allows.
func grant(p *Profile, prior, next *State, c GrantDemand, stats *Stats) ([]*PublishedBatch, *Rejection) {
	if c.Batches < 1 {
		return nil, reject(CodeMalformedCommand, "/command/batches")
	}
	if c.Batches > p.limits.MaxDemandPerCommand {
		return nil, reject(CodeDemandLimitExceeded, "/command/batches").limit(p.limits.MaxDemandPerCommand, c.Batches)
	}
	// Both operands are bounded by the profile ceilings, so the sum cannot
	// overflow; it is still checked against the outstanding limit first.
	granted := prior.demand + c.Batches
	if granted > p.limits.MaxOutstandingDemand {
		return nil, reject(CodeDemandLimitExceeded, "/command/batches").limit(p.limits.MaxOutstandingDemand, granted)
	}
	ready, demand, published := drain(slices.Clone(prior.ready), granted)
	next.ready, next.demand = ready, demand
	stats.PublishedBatchCount = int64(len(published))
	return published, nil
}

// drain publishes ready batches in order, one per unit of demand; unused
// demand stays outstanding.
func drain(ready []*PublishedBatch, demand int64) (rest []*PublishedBatch, left int64, published []*PublishedBatch) {
	slices.SortFunc(ready, comparePublished)
	n := int64(len(ready))
	if demand < n {
		n = demand
	}
	return ready[n:], demand - n, ready[:n:n]
}

// computeDigest hashes the M3TransitionPreimage, streaming the next state
// from its cached pieces.
func (t *Transition) computeDigest(h *hasher) string {
	h.reset()
	h.bytes(transitionPreimageOpen)
	h.keep(t.writeBody(h.scratch(512), h.bytes))
	h.bytes(closeBrace)
	return h.digest()
}

var transitionPreimageOpen = []byte(`{"contract_version":"` + ContractVersion + `","kind":"M3TransitionPreimage","transition_without_transition_digest":`)

// writeBody emits the transition without its digest, writing its small
// pieces in b (which w must not keep) and returning b.
func (t *Transition) writeBody(b []byte, w func([]byte)) []byte {
	b = append(b, '{')
	b = appendKey(b, "backpressure", true)
	bp := &t.Backpressure
	b = append(b, '{')
	b = appendKey(b, "active_value_count", true)
	b = appendInt(b, bp.ActiveValueCount)
	b = appendKey(b, "kind", false)
	b = appendString(b, "RBackpressure")
	b = appendKey(b, "limits", false)
	b = bp.Limits.appendCanonical(b)
	b = appendKey(b, "open_epoch_count", false)
	b = appendInt(b, bp.OpenEpochCount)
	b = appendKey(b, "outstanding_demand", false)
	b = appendInt(b, bp.OutstandingDemand)
	b = appendKey(b, "ready_batch_count", false)
	b = appendInt(b, bp.ReadyBatchCount)
	b = append(b, '}')
	b = appendKey(b, "command_digest", false)
	b = appendString(b, t.CommandDigest)
	b = appendKey(b, "contract_version", false)
	b = appendString(b, ContractVersion)
	b = appendKey(b, "kind", false)
	b = appendString(b, "RTransition")
	b = appendKey(b, "next_state", false)
	w(b)
	t.Next.writeOpen(w)
	b = b[:0]
	b = append(b, ',')
	b = appendKey(b, "state_digest", true)
	b = appendString(b, t.Next.digest)
	b = append(b, '}')
	b = appendKey(b, "prior_state_digest", false)
	b = appendString(b, t.PriorStateDigest)
	b = appendKey(b, "profile_digest", false)
	b = appendString(b, t.ProfileDigest)
	b = appendKey(b, "published_batches", false)
	b = append(b, '[')
	w(b)
	for i, p := range t.Published {
		if i > 0 {
			w(comma)
		}
		w(p.canonical())
	}
	b = b[:0]
	b = append(b, ']')
	b = appendKey(b, "schema_version", false)
	b = appendString(b, ResultSchema)
	b = appendKey(b, "stats", false)
	st := &t.Stats
	b = append(b, '{')
	b = appendKey(b, "accepted_delta_count", true)
	b = appendInt(b, st.AcceptedDeltaCount)
	b = appendKey(b, "published_batch_count", false)
	b = appendInt(b, st.PublishedBatchCount)
	b = appendKey(b, "retracted_delta_count", false)
	b = appendInt(b, st.RetractedDeltaCount)
	b = appendKey(b, "stabilized_epoch_count", false)
	b = appendInt(b, st.StabilizedEpochCount)
	b = append(b, '}', '}')
	w(b)
	return b
}

// MarshalJSON writes the canonical RTransition.
func (t *Transition) MarshalJSON() ([]byte, error) { return t.AppendCanonical(nil), nil }

// AppendCanonical appends the canonical RTransition bytes to b.
func (t *Transition) AppendCanonical(b []byte) []byte {
	if cap(b)-len(b) < t.bodySize() {
		b = append(make([]byte, 0, len(b)+t.bodySize()+128), b...)
	}
	t.writeBody(make([]byte, 0, 512), func(p []byte) { b = append(b, p...) })
	b = b[:len(b)-1]
	b = appendKey(b, "transition_digest", false)
	b = appendString(b, t.Digest)
	return append(b, '}')
}

func (t *Transition) bodySize() int {
	n := 1024 + t.Next.canonicalSize()
	for _, p := range t.Published {
		n += p.canonicalLen() + 1
	}
	return n
}
