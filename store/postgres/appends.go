package postgres

import (
	"strings"
	"sync"
)

// appends builds one statement of several writes, each but the last a
// data-modifying WITH, numbering their parameters as they are added. A
// statement with guards has every write in its WITH and the guards as its
// query; a tick's merged writes (see mergeable) come first in the WITH.
//
// The statement's text, and the order of its parameters, follow from the
// tick's shape alone (what it carries of each kind of row, not the rows'
// values: see shape). A tick's appends are built in two passes of the same
// code: the first (text false) only collects the parameters and the shape;
// when a tick of that shape has been seen, its text is reused, and only
// then does a second pass (text true) build the text. So a tick of a shape
// already seen builds no SQL text. Each part of the statement adds its
// parameters first, in the order of their placeholders, and builds its
// text from the placeholders only when text is set.
type appends struct {
	text   bool     // build the text (else only the parameters and the shape)
	ctes   []string // merged writes, each "name AS (statement)"
	parts  []string
	guards []string // expressions of the query, when there are any
	vals   []any
	tsRef  string // the tick time's parameter, once added
	tsSet  bool   // the tick time's parameter is added
	shape  shape
}

// shape is what an appended statement's text depends on. Two ticks of
// the same shape get byte-identical text, their parameters in the same
// order.
type shape struct {
	intents    uint8  // merged intents
	begun      uint64 // bit i: merged intent i is written begun
	closed     uint8  // merged attempt results closed by their receipts
	submit     bool   // the tick's one input, appended consumed
	consumed   uint8  // inputs consumed from the inbox, each a part guarded
	events     bool
	texts      uint8 // bit j: event hash column j has a text (see hashColumns)
	checkpoint bool
	trace      bool
	inboxEmpty bool
	fence      bool   // the tick's fence folded in, as its first part
	fenceInbox bool   // the folded fence checks the inbox (fenceAheadInboxWrite)
	fenceKnown bool   // the folded fence is the empty inbox's check (fenceAheadKnownWrite)
	parts      uint16 // parts and guards added
	wide       bool   // too many merged rows for the fields above: never cached
}

// maxMerged is the most merged intents or results a cached shape counts.
const maxMerged = 64

// reset empties a for another pass, building the text or not.
func (a *appends) reset(text bool) {
	*a = appends{text: text, vals: a.vals[:0]}
	if text {
		a.parts = make([]string, 0, 6)
	}
}

// placeholders are "$1" … "$N" for the first N parameters, built once.
var placeholders = func() []string {
	ps := make([]string, 129)
	for i := 1; i < len(ps); i++ {
		ps[i] = "$" + itoa(i)
	}
	return ps
}()

// arg adds a parameter and returns its placeholder ("" when not building
// the text).
func (a *appends) arg(v any) string {
	a.vals = append(a.vals, v)
	if !a.text {
		return ""
	}
	if n := len(a.vals); n < len(placeholders) {
		return placeholders[n]
	}
	return "$" + itoa(len(a.vals))
}

// args adds parameters and returns their placeholders, comma-separated
// ("" when not building the text).
func (a *appends) args(vs ...any) string {
	if !a.text {
		a.vals = append(a.vals, vs...)
		return ""
	}
	ps := make([]string, len(vs))
	for i, v := range vs {
		ps[i] = a.arg(v)
	}
	return strings.Join(ps, ", ")
}

// ts is the tick's time (see tsParam), its parameter added once ("" when
// not building the text).
func (a *appends) ts(ts any) string {
	if !a.tsSet {
		a.tsSet = true
		a.tsRef = a.arg(ts)
	}
	if !a.text {
		return ""
	}
	return `COALESCE(` + a.tsRef + `::bigint, current_setting('` + tickAt + `')::bigint)`
}

// add adds a part built by the caller (when building the text).
func (a *appends) add(stmt string) {
	a.shape.parts++
	if a.text {
		a.parts = append(a.parts, stmt)
	}
}

// guard adds expressions the statement's query evaluates, each failing
// the transaction when its check does not hold.
func (a *appends) guard(exprs ...string) {
	a.shape.parts += uint16(len(exprs))
	if a.text {
		a.guards = append(a.guards, exprs...)
	}
}

// foldFence makes the tick's fence (fenceAheadWrite, or
// fenceAheadInboxWrite when inbox, fenceAheadKnownWrite when also known;
// its parameters fence, and then subs when inbox: the statement's first)
// the statement's first part, f, and the fence's guard (touchedOne) its
// query's first expression. The server runs the query before the parts
// it does not read, and its expressions in order, so the fence locks and
// checks the run and sets the tick's time before any other part runs.
// When the tick merges an attempt result closed by its receipt, the first
// such result's update joins f instead and its guard takes the fence's
// place (see closed): it updates nothing unless the fence moved the run,
// and the fence runs before it changes a row, for the join has no row
// without f's; a subquery of f fewer.
func (a *appends) foldFence(fence []any, inbox, known bool, subs int64) {
	a.vals = append(a.vals, fence...)
	if inbox {
		a.vals = append(a.vals, subs)
	}
	a.shape.fence, a.shape.fenceInbox, a.shape.fenceKnown = true, inbox, inbox && known
	a.shape.parts++ // the guard
	if !a.text {
		return
	}
	write := fenceAheadWrite
	if a.shape.fenceKnown {
		write = fenceAheadKnownWrite
	} else if inbox {
		write = fenceAheadInboxWrite
	}
	a.ctes = append(a.ctes, "f AS ("+write+" RETURNING "+fenceReturning+")")
	a.guards = append(a.guards, touchedOne("f", "fence"))
}

// intent merges the tick's i-th intent and its outbox row (in flight with
// its first attempt when begun): what intentSQL or intentBegunSQL writes.
func (a *appends) intent(i int, begun bool, id *string, runID, head any, effect, key, content *string, approval any, body []byte, digest *string, gen, ts any) {
	vals := a.args(id, runID, head, effect, key, content, approval, body, digest, gen)
	at := a.ts(ts)
	if i >= maxMerged {
		a.shape.wide = true
	} else {
		a.shape.intents = uint8(i + 1)
		if begun {
			a.shape.begun |= 1 << i
		}
	}
	if !a.text {
		return
	}
	n := itoa(i)
	a.ctes = append(a.ctes, "i"+n+` AS (INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
	VALUES (`+vals+`, `+at+`) RETURNING intent_id, run_id, generation, recorded_at)`)
	if !begun {
		a.ctes = append(a.ctes, "o"+n+` AS (INSERT INTO outbox (intent_id, run_id, status, updated_at) SELECT intent_id, run_id, 'pending', recorded_at FROM i`+n+`)`)
		return
	}
	a.ctes = append(a.ctes, "o"+n+` AS (INSERT INTO outbox (intent_id, run_id, status, attempts, updated_at) SELECT intent_id, run_id, 'in_flight', 1, recorded_at FROM i`+n+`)`,
		"t"+n+` AS (INSERT INTO attempts (intent_id, n, status, generation, started_at) SELECT intent_id, 1, 'started', generation, recorded_at FROM i`+n+`)`)
}

// closed merges the tick's i-th attempt result with its intent's receipt
// (see closedWithResult): what their own statement writes, its guards
// among the statement's. The attempt is found by its key alone: that its
// intent is the run's holds through the receipt's guard, which requires
// the intent's outbox row in the run (the outbox's key is the intent's
// with its run), and the receipt's own key; a join to intents for it
// took two plan nodes and an index lookup a tick.
func (a *appends) closed(i int, status string, detail *string, runID any, intentID *string, n int64, route *string, outcome string, body []byte, digest string, gen, ts any) {
	// The values not already pointers go as pointers into one allocation
	// (see aheadFenceArgs).
	v := &closedArgs{status: status, outcome: outcome, digest: digest, body: body, n: n}
	run, id, at := a.arg(runID), a.arg(intentID), a.ts(ts)
	st, det, num := a.arg(&v.status), a.arg(detail), a.arg(&v.n)
	rt := a.arg(route)
	rest := a.args(&v.outcome, &v.body, &v.digest, gen)
	if i >= maxMerged {
		a.shape.wide = true
	} else {
		a.shape.closed = uint8(i + 1)
	}
	if !a.text {
		a.shape.parts += 2 // the guards below
		return
	}
	k := itoa(i)
	from := ""
	if a.shape.fence && len(a.guards) == 1 {
		// The folded fence's only guard so far: the first result's
		// update joins the fence's row instead, and its guard takes the
		// fence's place (see foldFence).
		a.guards, from = a.guards[:0], " FROM f"
	}
	a.ctes = append(a.ctes,
		"ra"+k+` AS (UPDATE attempts SET status = `+st+`::text, detail = `+det+`, finished_at = `+at+from+`
	WHERE intent_id = `+id+` AND n = `+num+` RETURNING 1)`,
		"ro"+k+` AS (UPDATE outbox SET status = 'done', route = `+rt+`, updated_at = `+at+` WHERE intent_id = `+id+` AND run_id = `+run+` RETURNING 1)`,
		"rr"+k+` AS (INSERT INTO receipts (intent_id, run_id, outcome, body, digest, generation, recorded_at)
	SELECT `+id+`, `+run+`, `+rest+`, `+at+` FROM ro`+k+`)`)
	a.guard(touchedOne("ra"+k, "attempt result"), touchedOne("ro"+k, "receipt"))
}

// closedArgs hold closed's values that go as pointers.
type closedArgs struct {
	status, outcome, digest string
	body                    []byte
	n                       int64
}

// consume merges the consumption of the tick's i-th input taken from the
// inbox (store.FromInbox): what consumeSQL writes, its guard among the
// statement's. The update finds the entry by its key and, when a
// transaction committed since the statement's snapshot has consumed it,
// re-reads it and updates nothing: the guard then fails the statement,
// as the statement of its own failed. The guard is touchedOne's; the
// query evaluates it after the guards before it (the
// fence's first), so the update runs after the fence has locked the run.
// Its rows are not seen by the statement's snapshot: a tick that checks
// its inbox is left empty does not merge it (see queueTick).
func (a *appends) consume(i int, runID any, inboundID *string) {
	run, id := a.arg(runID), a.arg(inboundID)
	if i >= maxMerged {
		a.shape.wide = true
	} else {
		a.shape.consumed = uint8(i + 1)
	}
	if !a.text {
		a.shape.parts++ // the guard below
		return
	}
	k := "ci" + itoa(i)
	a.ctes = append(a.ctes, k+` AS (UPDATE inbox SET consumed = true WHERE run_id = `+run+` AND inbound_id = `+id+` AND NOT consumed RETURNING 1)`)
	a.guard(touchedOne(k, "inbound consumption"))
}

// sql returns the statement's text (building the text).
func (a *appends) sql() string {
	var b strings.Builder
	size := 0
	for _, p := range a.ctes {
		size += len(p) + 8
	}
	for _, p := range a.parts {
		size += len(p) + 16
	}
	for _, g := range a.guards {
		size += len(g) + 8
	}
	b.Grow(size)
	with := 0
	next := func() {
		if with == 0 {
			b.WriteString("WITH ")
		} else {
			b.WriteString(",\n")
		}
		with++
	}
	for _, c := range a.ctes {
		next()
		b.WriteString(c)
	}
	inWith := a.parts
	if len(a.guards) == 0 {
		inWith = a.parts[:len(a.parts)-1]
	}
	for i, p := range inWith {
		next()
		b.WriteString("a")
		b.WriteString(itoa(i))
		b.WriteString(" AS (")
		b.WriteString(p)
		b.WriteString(")")
	}
	if with > 0 {
		b.WriteString("\n")
	}
	if len(a.guards) == 0 {
		b.WriteString(a.parts[len(a.parts)-1])
	} else {
		b.WriteString("SELECT ")
		for i, g := range a.guards {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(g)
		}
	}
	return b.String()
}

// maxShapes bounds the texts a store keeps: shapes are few (a workflow's
// ticks take a handful), and a shape past the bound has its text built
// each time.
const maxShapes = 128

// shapes is a store's appended statements' texts by shape.
type shapes struct {
	mu sync.RWMutex
	m  map[shape]string
}

func (c *shapes) get(k shape) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sql, ok := c.m[k]
	return sql, ok
}

func (c *shapes) put(k shape, sql string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[shape]string{}
	}
	if len(c.m) < maxShapes {
		c.m[k] = sql
	}
}

func (c *shapes) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// touchedOne is the guard on the statement's write named from, which
// finds at most one row by its key: it fails the statement, as
// flrh_expect_one does, when the write touched none, and calls the
// function only then. A subquery returning the row, where a count of the
// rows needed an aggregate: the aggregate's set-up at every execution
// cost the server more than the subquery's (decision 1804). Were a key
// ever to find two rows, the subquery would fail the statement too.
func touchedOne(from, what string) string {
	return `CASE WHEN (SELECT 1 FROM ` + from + `) IS NULL THEN flrh_expect_one(0, '` + what + `') END`
}
