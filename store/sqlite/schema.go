package sqlite

// migrations are applied in order; migration i brings the schema to version
// i+1. Never edit a released migration: add a new one.
var migrations = []string{
	// 1: the initial schema.
	`
CREATE TABLE runs (
	run_id           TEXT PRIMARY KEY,
	workflow_id      TEXT NOT NULL,
	workflow_version TEXT NOT NULL,
	state            TEXT NOT NULL,
	outcome          TEXT NOT NULL DEFAULT '',
	head_seq         INTEGER NOT NULL DEFAULT 0 CHECK (head_seq >= 0),
	head_hash        TEXT NOT NULL,
	lease_owner      TEXT NOT NULL DEFAULT '',
	lease_generation INTEGER NOT NULL DEFAULT 0,
	lease_expires_at INTEGER NOT NULL DEFAULT 0,
	quarantine       TEXT NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	created_order    INTEGER NOT NULL UNIQUE
) STRICT;

CREATE TABLE events (
	run_id      TEXT NOT NULL REFERENCES runs(run_id),
	seq         INTEGER NOT NULL CHECK (seq >= 1),
	kind        TEXT NOT NULL,
	body        BLOB NOT NULL,
	digest      TEXT NOT NULL,
	prev_hash   TEXT NOT NULL,
	chain_hash  TEXT NOT NULL,
	generation  INTEGER NOT NULL,
	recorded_at INTEGER NOT NULL,
	PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE checkpoints (
	run_id         TEXT NOT NULL REFERENCES runs(run_id),
	n              INTEGER NOT NULL CHECK (n >= 1),
	seq            INTEGER NOT NULL,
	format_version INTEGER NOT NULL,
	build_digest   TEXT NOT NULL,
	body           BLOB NOT NULL,
	digest         TEXT NOT NULL,
	generation     INTEGER NOT NULL,
	recorded_at    INTEGER NOT NULL,
	PRIMARY KEY (run_id, n)
) STRICT, WITHOUT ROWID;

CREATE TABLE approvals (
	approval_id    TEXT PRIMARY KEY,
	run_id         TEXT NOT NULL REFERENCES runs(run_id),
	request_digest TEXT NOT NULL,
	nonce          TEXT NOT NULL UNIQUE,
	body           BLOB NOT NULL,
	digest         TEXT NOT NULL,
	expires_at     INTEGER NOT NULL,
	status         TEXT NOT NULL CHECK (status IN ('granted', 'consumed', 'revoked')),
	consumed_by    TEXT NOT NULL DEFAULT '',
	recorded_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE intents (
	intent_id       TEXT PRIMARY KEY,
	run_id          TEXT NOT NULL REFERENCES runs(run_id),
	seq             INTEGER NOT NULL,
	commit_order    INTEGER NOT NULL UNIQUE,
	effect_type     TEXT NOT NULL,
	idempotency_key TEXT NOT NULL UNIQUE,
	content_digest  TEXT NOT NULL,
	approval_id     TEXT REFERENCES approvals(approval_id),
	body            BLOB NOT NULL,
	digest          TEXT NOT NULL,
	generation      INTEGER NOT NULL,
	recorded_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX intents_by_run ON intents(run_id, commit_order);

CREATE TABLE outbox (
	intent_id  TEXT PRIMARY KEY REFERENCES intents(intent_id),
	run_id     TEXT NOT NULL REFERENCES runs(run_id),
	status     TEXT NOT NULL CHECK (status IN ('pending', 'in_flight', 'retry', 'reconcile', 'human', 'done')),
	route      TEXT NOT NULL DEFAULT '',
	attempts   INTEGER NOT NULL DEFAULT 0,
	updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX outbox_open ON outbox(status) WHERE status <> 'done';

CREATE TABLE attempts (
	intent_id   TEXT NOT NULL REFERENCES intents(intent_id),
	n           INTEGER NOT NULL CHECK (n >= 1),
	status      TEXT NOT NULL CHECK (status IN ('started', 'succeeded', 'failed_transient', 'failed_permanent', 'unknown', 'reconciled_applied', 'reconciled_not_applied')),
	generation  INTEGER NOT NULL,
	detail      TEXT NOT NULL DEFAULT '',
	started_at  INTEGER NOT NULL,
	finished_at INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (intent_id, n)
) STRICT, WITHOUT ROWID;

CREATE TABLE receipts (
	intent_id    TEXT PRIMARY KEY REFERENCES intents(intent_id),
	run_id       TEXT NOT NULL REFERENCES runs(run_id),
	commit_order INTEGER NOT NULL UNIQUE,
	outcome      TEXT NOT NULL,
	body         BLOB NOT NULL,
	digest       TEXT NOT NULL,
	generation   INTEGER NOT NULL,
	recorded_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE trace (
	run_id      TEXT NOT NULL REFERENCES runs(run_id),
	seq         INTEGER NOT NULL,
	kind        TEXT NOT NULL,
	body        BLOB NOT NULL,
	recorded_at INTEGER NOT NULL,
	PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE inbox (
	run_id      TEXT NOT NULL REFERENCES runs(run_id),
	seq         INTEGER NOT NULL,
	inbound_id  TEXT NOT NULL,
	kind        TEXT NOT NULL,
	actor_role  TEXT NOT NULL,
	actor       TEXT NOT NULL,
	capability  TEXT NOT NULL,
	body        BLOB NOT NULL,
	digest      TEXT NOT NULL,
	consumed    INTEGER NOT NULL DEFAULT 0 CHECK (consumed IN (0, 1)),
	recorded_at INTEGER NOT NULL,
	PRIMARY KEY (run_id, seq),
	UNIQUE (run_id, inbound_id)
) STRICT, WITHOUT ROWID;

-- The evidence tables are append-only: history is never rewritten.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER receipts_no_update BEFORE UPDATE ON receipts BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
CREATE TRIGGER receipts_no_delete BEFORE DELETE ON receipts BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
CREATE TRIGGER intents_no_update BEFORE UPDATE ON intents BEGIN SELECT RAISE(ABORT, 'intents are append-only'); END;
CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents BEGIN SELECT RAISE(ABORT, 'intents are append-only'); END;
CREATE TRIGGER trace_no_update BEFORE UPDATE ON trace BEGIN SELECT RAISE(ABORT, 'trace is append-only'); END;
CREATE TRIGGER trace_no_delete BEFORE DELETE ON trace BEGIN SELECT RAISE(ABORT, 'trace is append-only'); END;
CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints BEGIN SELECT RAISE(ABORT, 'checkpoints are append-only'); END;
`,
	// 2: receipts are read per run (run pages, verification).
	`CREATE INDEX receipts_by_run ON receipts(run_id, commit_order);`,
	// 3: the runner asks which runs have work to do (Ready) on every poll;
	// with these it reads the live runs' states and the pending inbox
	// entries instead of every run and an inbox lookup for each.
	`
CREATE INDEX runs_live ON runs(state, created_order, run_id) WHERE outcome = '' AND quarantine = '';
CREATE INDEX inbox_pending ON inbox(run_id) WHERE consumed = 0;
`,
	// 4: events, trace records and checkpoints move from WITHOUT ROWID
	// tables to rowid tables with a unique (run_id, seq|n) index. Their
	// rows are large (an event with its three hashes is about a kilobyte, a
	// checkpoint several): in a WITHOUT ROWID table a row keeps at most
	// about a quarter of a page in the b-tree and spills the rest to an
	// overflow page of its own, so more than half of those tables' pages
	// were empty space, and every commit wrote those pages to the log. A
	// rowid table keeps rows of up to a page whole and appends them in
	// commit order; the index holds only the keys. The rows, their bytes
	// and their order are unchanged; the append-only triggers are made
	// again under their names.
	`
CREATE TABLE events_v4 (
	run_id      TEXT NOT NULL REFERENCES runs(run_id),
	seq         INTEGER NOT NULL CHECK (seq >= 1),
	kind        TEXT NOT NULL,
	body        BLOB NOT NULL,
	digest      TEXT NOT NULL,
	prev_hash   TEXT NOT NULL,
	chain_hash  TEXT NOT NULL,
	generation  INTEGER NOT NULL,
	recorded_at INTEGER NOT NULL,
	UNIQUE (run_id, seq)
) STRICT;
INSERT INTO events_v4 (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at)
	SELECT run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at FROM events ORDER BY recorded_at, run_id, seq;
DROP TABLE events;
ALTER TABLE events_v4 RENAME TO events;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE TABLE trace_v4 (
	run_id      TEXT NOT NULL REFERENCES runs(run_id),
	seq         INTEGER NOT NULL,
	kind        TEXT NOT NULL,
	body        BLOB NOT NULL,
	recorded_at INTEGER NOT NULL,
	UNIQUE (run_id, seq)
) STRICT;
INSERT INTO trace_v4 (run_id, seq, kind, body, recorded_at)
	SELECT run_id, seq, kind, body, recorded_at FROM trace ORDER BY recorded_at, run_id, seq;
DROP TABLE trace;
ALTER TABLE trace_v4 RENAME TO trace;
CREATE TRIGGER trace_no_update BEFORE UPDATE ON trace BEGIN SELECT RAISE(ABORT, 'trace is append-only'); END;
CREATE TRIGGER trace_no_delete BEFORE DELETE ON trace BEGIN SELECT RAISE(ABORT, 'trace is append-only'); END;

CREATE TABLE checkpoints_v4 (
	run_id         TEXT NOT NULL REFERENCES runs(run_id),
	n              INTEGER NOT NULL CHECK (n >= 1),
	seq            INTEGER NOT NULL,
	format_version INTEGER NOT NULL,
	build_digest   TEXT NOT NULL,
	body           BLOB NOT NULL,
	digest         TEXT NOT NULL,
	generation     INTEGER NOT NULL,
	recorded_at    INTEGER NOT NULL,
	UNIQUE (run_id, n)
) STRICT;
INSERT INTO checkpoints_v4 (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
	SELECT run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at FROM checkpoints ORDER BY recorded_at, run_id, n;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_v4 RENAME TO checkpoints;
CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints BEGIN SELECT RAISE(ABORT, 'checkpoints are append-only'); END;
`,
	// 5: two b-trees fewer written per receipt and per outbox row. A
	// receipt's commit order becomes its rowid (it was a separate unique
	// index, read for its maximum on every receipt), and the outbox, whose
	// rows are small and only ever found by intent id, is kept in its
	// primary key's b-tree alone (WITHOUT ROWID) instead of a table and an
	// index of the same key. Rows and their order are unchanged.
	`
CREATE TABLE receipts_v5 (
	commit_order INTEGER PRIMARY KEY,
	intent_id    TEXT NOT NULL UNIQUE REFERENCES intents(intent_id),
	run_id       TEXT NOT NULL REFERENCES runs(run_id),
	outcome      TEXT NOT NULL,
	body         BLOB NOT NULL,
	digest       TEXT NOT NULL,
	generation   INTEGER NOT NULL,
	recorded_at  INTEGER NOT NULL
) STRICT;
INSERT INTO receipts_v5 (commit_order, intent_id, run_id, outcome, body, digest, generation, recorded_at)
	SELECT commit_order, intent_id, run_id, outcome, body, digest, generation, recorded_at FROM receipts ORDER BY commit_order;
DROP TABLE receipts;
ALTER TABLE receipts_v5 RENAME TO receipts;
CREATE INDEX receipts_by_run ON receipts(run_id);
CREATE TRIGGER receipts_no_update BEFORE UPDATE ON receipts BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
CREATE TRIGGER receipts_no_delete BEFORE DELETE ON receipts BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;

CREATE TABLE outbox_v5 (
	intent_id  TEXT PRIMARY KEY REFERENCES intents(intent_id),
	run_id     TEXT NOT NULL REFERENCES runs(run_id),
	status     TEXT NOT NULL CHECK (status IN ('pending', 'in_flight', 'retry', 'reconcile', 'human', 'done')),
	route      TEXT NOT NULL DEFAULT '',
	attempts   INTEGER NOT NULL DEFAULT 0,
	updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO outbox_v5 (intent_id, run_id, status, route, attempts, updated_at)
	SELECT intent_id, run_id, status, route, attempts, updated_at FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_v5 RENAME TO outbox;
CREATE INDEX outbox_open ON outbox(status) WHERE status <> 'done';
`,
	// 6: fewer rows, bytes and b-trees written per tick. A tick's trace
	// records are one row instead of one each (trace.go has the form;
	// existing records become one-record rows). An event's digest,
	// previous hash and chain hash, each the 71 characters of "sha256:"
	// and 64 hex digits, are kept as the 32 bytes of the sum (the columns
	// are typed ANY: any other text is kept as text, and every value reads
	// back as it was written); the rows and their order are otherwise
	// unchanged. An index no read uses is dropped, a page written by nearly
	// every commit: outbox_open (no query selects the outbox by status).
	// A run's row keeps the numbers of its last trace record and last
	// checkpoint, which the tick's fence read returns with the rest of the
	// row, instead of two reads of those tables' indexes in every commit.
	`
CREATE TABLE events_v6 (
	run_id      TEXT NOT NULL REFERENCES runs(run_id),
	seq         INTEGER NOT NULL CHECK (seq >= 1),
	kind        TEXT NOT NULL,
	body        BLOB NOT NULL,
	digest      ANY NOT NULL,
	prev_hash   ANY NOT NULL,
	chain_hash  ANY NOT NULL,
	generation  INTEGER NOT NULL,
	recorded_at INTEGER NOT NULL,
	UNIQUE (run_id, seq)
) STRICT;
INSERT INTO events_v6 (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at)
	SELECT run_id, seq, kind, body,
		CASE WHEN length(digest) = 71 AND substr(digest, 1, 7) = 'sha256:' AND substr(digest, 8) NOT GLOB '*[^0-9a-f]*' THEN unhex(substr(digest, 8)) ELSE digest END,
		CASE WHEN length(prev_hash) = 71 AND substr(prev_hash, 1, 7) = 'sha256:' AND substr(prev_hash, 8) NOT GLOB '*[^0-9a-f]*' THEN unhex(substr(prev_hash, 8)) ELSE prev_hash END,
		CASE WHEN length(chain_hash) = 71 AND substr(chain_hash, 1, 7) = 'sha256:' AND substr(chain_hash, 8) NOT GLOB '*[^0-9a-f]*' THEN unhex(substr(chain_hash, 8)) ELSE chain_hash END,
		generation, recorded_at
	FROM events ORDER BY rowid;
DROP TABLE events;
ALTER TABLE events_v6 RENAME TO events;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE TABLE trace_v6 (
	run_id      TEXT NOT NULL REFERENCES runs(run_id),
	seq         INTEGER NOT NULL,
	last_seq    INTEGER NOT NULL,
	records     BLOB NOT NULL,
	recorded_at INTEGER NOT NULL,
	UNIQUE (run_id, seq)
) STRICT;
INSERT INTO trace_v6 (run_id, seq, last_seq, records, recorded_at)
	SELECT run_id, seq, seq,
		CAST(unhex(printf('%08x', length(CAST(kind AS BLOB)))) || CAST(kind AS BLOB) || unhex(printf('%08x', length(body))) || body AS BLOB),
		recorded_at
	FROM trace ORDER BY rowid;
DROP TABLE trace;
ALTER TABLE trace_v6 RENAME TO trace;
CREATE TRIGGER trace_no_update BEFORE UPDATE ON trace BEGIN SELECT RAISE(ABORT, 'trace is append-only'); END;
CREATE TRIGGER trace_no_delete BEFORE DELETE ON trace BEGIN SELECT RAISE(ABORT, 'trace is append-only'); END;

DROP INDEX outbox_open;

ALTER TABLE runs ADD COLUMN trace_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN checkpoint_n INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET
	trace_seq = COALESCE((SELECT MAX(last_seq) FROM trace WHERE trace.run_id = runs.run_id), 0),
	checkpoint_n = COALESCE((SELECT MAX(n) FROM checkpoints WHERE checkpoints.run_id = runs.run_id), 0);
`,
	// 7: a run's header records the digest of the workflow definition it
	// was created under, so that runners holding another definition of
	// the same id and version leave it alone. An existing run takes the
	// definition digest its latest checkpoint names (the body's top-level
	// "workflow_digest"; the build_digest column is the platform's, not
	// the definition's); a run with no checkpoint, or whose checkpoint is
	// sealed or not JSON, keeps "". CASE is evaluated lazily, so
	// json_extract never sees a body json_valid refused.
	`
ALTER TABLE runs ADD COLUMN workflow_digest TEXT NOT NULL DEFAULT '';
UPDATE runs SET workflow_digest = COALESCE((
	SELECT CASE WHEN json_valid(CAST(c.body AS TEXT))
		THEN CASE WHEN json_type(CAST(c.body AS TEXT), '$.workflow_digest') = 'text'
			THEN json_extract(CAST(c.body AS TEXT), '$.workflow_digest') END END
	FROM checkpoints c WHERE c.run_id = runs.run_id ORDER BY c.n DESC LIMIT 1), '');
`,
	// 8: an intent's commit order becomes its rowid, as a receipt's did in
	// version 5: the unique index of commit orders was a b-tree of its
	// own, written (and read for its maximum) by every intent committed.
	// The order stays unique (it is the table's key); intents_by_run holds
	// the run and, as every index does, the rowid, so it still lists a
	// run's intents in commit order. Rows and their order are unchanged;
	// the append-only triggers are made again under their names. The
	// outbox, attempts and receipts reference intents by intent_id, which
	// stays unique: the rebuild runs with foreign keys off and is checked
	// with foreign_key_check before it commits (migrate).
	`
CREATE TABLE intents_v8 (
	commit_order    INTEGER PRIMARY KEY,
	intent_id       TEXT NOT NULL UNIQUE,
	run_id          TEXT NOT NULL REFERENCES runs(run_id),
	seq             INTEGER NOT NULL,
	effect_type     TEXT NOT NULL,
	idempotency_key TEXT NOT NULL UNIQUE,
	content_digest  TEXT NOT NULL,
	approval_id     TEXT REFERENCES approvals(approval_id),
	body            BLOB NOT NULL,
	digest          TEXT NOT NULL,
	generation      INTEGER NOT NULL,
	recorded_at     INTEGER NOT NULL
) STRICT;
INSERT INTO intents_v8 (commit_order, intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
	SELECT commit_order, intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at FROM intents ORDER BY commit_order;
DROP TABLE intents;
ALTER TABLE intents_v8 RENAME TO intents;
CREATE INDEX intents_by_run ON intents(run_id);
CREATE TRIGGER intents_no_update BEFORE UPDATE ON intents BEGIN SELECT RAISE(ABORT, 'intents are append-only'); END;
CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents BEGIN SELECT RAISE(ABORT, 'intents are append-only'); END;
`,
	// 9: an intent's outbox row and its attempts are keyed by the
	// intent's commit order (its rowid since version 8) instead of its
	// id. Intent ids are digests, in no order, so each intent's outbox
	// row and attempt went to a leaf of its own somewhere in those
	// b-trees: a governed step, which finishes one intent's attempt and
	// begins the next's, rewrote two leaves of each (and their parents
	// as the leaves split). Keyed by commit order they are appended at
	// the right edge, where the previous intent's rows are. The order is
	// the rows' reference to their intent (an outbox row or attempt of
	// no intent is refused, an intent still has at most one outbox row
	// and its attempts are unique by number), and the reads take the
	// intent's id from the intent. The id stays in both tables, written
	// as before, for SQL that finds the rows by it; no read of the store
	// uses it, and the store's reads of a run are those of version 8.
	// Rows are copied unchanged; a row whose intent is gone (possible
	// only with foreign keys off) gets order 0, which the check after
	// the copy reports, and the migration is refused.
	`
CREATE TABLE outbox_v9 (
	intent_order INTEGER PRIMARY KEY REFERENCES intents(commit_order),
	intent_id    TEXT NOT NULL,
	run_id       TEXT NOT NULL REFERENCES runs(run_id),
	status       TEXT NOT NULL CHECK (status IN ('pending', 'in_flight', 'retry', 'reconcile', 'human', 'done')),
	route        TEXT NOT NULL DEFAULT '',
	attempts     INTEGER NOT NULL DEFAULT 0,
	updated_at   INTEGER NOT NULL
) STRICT;
INSERT INTO outbox_v9 (intent_order, intent_id, run_id, status, route, attempts, updated_at)
	SELECT COALESCE((SELECT i.commit_order FROM intents i WHERE i.intent_id = o.intent_id), 0), o.intent_id, o.run_id, o.status, o.route, o.attempts, o.updated_at
	FROM outbox o;
DROP TABLE outbox;
ALTER TABLE outbox_v9 RENAME TO outbox;

CREATE TABLE attempts_v9 (
	intent_order INTEGER NOT NULL REFERENCES intents(commit_order),
	n            INTEGER NOT NULL CHECK (n >= 1),
	intent_id    TEXT NOT NULL,
	status       TEXT NOT NULL CHECK (status IN ('started', 'succeeded', 'failed_transient', 'failed_permanent', 'unknown', 'reconciled_applied', 'reconciled_not_applied')),
	generation   INTEGER NOT NULL,
	detail       TEXT NOT NULL DEFAULT '',
	started_at   INTEGER NOT NULL,
	finished_at  INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (intent_order, n)
) STRICT, WITHOUT ROWID;
INSERT INTO attempts_v9 (intent_order, n, intent_id, status, generation, detail, started_at, finished_at)
	SELECT COALESCE((SELECT i.commit_order FROM intents i WHERE i.intent_id = a.intent_id), 0), a.n, a.intent_id, a.status, a.generation, a.detail, a.started_at, a.finished_at
	FROM attempts a;
DROP TABLE attempts;
ALTER TABLE attempts_v9 RENAME TO attempts;

`,
	// 10 and 11: withdrawn (events, trace and checkpoints keyed by run
	// order, taken out again). No database is migrated to them; one at
	// either is refused (withdrawnVersions). A database at 9 passes over
	// them to 12.
	withdrawn,
	withdrawn,
	// 12: checkpoints' bodies and trace rows may be stored packed
	// (package store/packed; trace.go): nothing is rewritten, as a packed
	// body is told from one stored as it is by its first byte, but a
	// build at 9 would read packed bodies as damaged, so the version
	// keeps it from opening the database.
	nothingToRewrite,
	// 13: a run remembers the inbox entries its holder found nothing to
	// take in (Settle): those numbered up to settled_seq, in settled_state
	// at head settled_head. Ready lists a resting run for pending entries
	// after them only, while the run's head and state are still those.
	`
ALTER TABLE runs ADD COLUMN settled_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN settled_head INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN settled_state TEXT NOT NULL DEFAULT '';
`,
	// 14: a run's header records its due time (store.Run.DueAt, Unix
	// nanoseconds, 0 for none), when it next has something to do by the
	// clock alone, so that Ready lists a resting run once its time budget
	// runs out instead of runners visiting every resting run now and
	// then. A run written before cannot have it computed here (it is in
	// the checkpoint's budget ledger, which may be packed or sealed):
	// every run not ended is marked due at once (1 ns after the epoch),
	// and the first runner to pass it records what its checkpoint says
	// (store.DueSetter).
	`
ALTER TABLE runs ADD COLUMN due_at INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET due_at = 1 WHERE outcome = '';
`,
	// 15: an ended run's record may be pruned (store.Pruner) once it is
	// archived: pruned records each pruning, and the evidence tables'
	// rows may be deleted only for a run it names, so history is still
	// never rewritten, and never removed behind the store's back (the
	// header stays, with its head hash). An intent is never deleted: a
	// pruned run's intents are stripped to their idempotency keys, each
	// still bound to its content digest and held by the keys' unique
	// index, so that no later intent reuses one (the one update the
	// trigger lets through). The two indexes serve the deletion: a run's
	// grants by run, and the foreign key check that no intent names a
	// grant being deleted (only intents that consumed a grant are in it,
	// so a governed step without one writes nothing more).
	`
CREATE TABLE pruned (
	run_id    TEXT PRIMARY KEY REFERENCES runs(run_id),
	head_hash TEXT NOT NULL,
	archive   TEXT NOT NULL,
	events    INTEGER NOT NULL,
	intents   INTEGER NOT NULL,
	attempts  INTEGER NOT NULL,
	receipts  INTEGER NOT NULL,
	grants    INTEGER NOT NULL,
	inbox     INTEGER NOT NULL,
	trace     INTEGER NOT NULL,
	pruned_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TRIGGER pruned_no_update BEFORE UPDATE ON pruned BEGIN SELECT RAISE(ABORT, 'prunings are append-only'); END;
CREATE TRIGGER pruned_no_delete BEFORE DELETE ON pruned BEGIN SELECT RAISE(ABORT, 'prunings are append-only'); END;
CREATE INDEX approvals_by_run ON approvals(run_id);
CREATE INDEX intents_by_approval ON intents(approval_id) WHERE approval_id IS NOT NULL;
DROP TRIGGER events_no_delete;
DROP TRIGGER receipts_no_delete;
DROP TRIGGER intents_no_update;
DROP TRIGGER trace_no_delete;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events WHEN NOT EXISTS (SELECT 1 FROM pruned p WHERE p.run_id = OLD.run_id)
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER receipts_no_delete BEFORE DELETE ON receipts WHEN NOT EXISTS (SELECT 1 FROM pruned p WHERE p.run_id = OLD.run_id)
BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
CREATE TRIGGER intents_no_update BEFORE UPDATE ON intents WHEN NOT (EXISTS (SELECT 1 FROM pruned p WHERE p.run_id = OLD.run_id)
	AND NEW.commit_order IS OLD.commit_order AND NEW.intent_id IS OLD.intent_id AND NEW.run_id IS OLD.run_id AND NEW.seq IS OLD.seq
	AND NEW.effect_type IS OLD.effect_type AND NEW.idempotency_key IS OLD.idempotency_key AND NEW.content_digest IS OLD.content_digest
	AND NEW.generation IS OLD.generation AND NEW.recorded_at IS OLD.recorded_at
	AND NEW.approval_id IS NULL AND NEW.body = x'' AND NEW.digest = '')
BEGIN SELECT RAISE(ABORT, 'intents are append-only'); END;
CREATE TRIGGER trace_no_delete BEFORE DELETE ON trace WHEN NOT EXISTS (SELECT 1 FROM pruned p WHERE p.run_id = OLD.run_id)
BEGIN SELECT RAISE(ABORT, 'trace is append-only'); END;
`,
	// 16: duties (store.Duties): the lease one process of several
	// sharing the store holds on a named piece of upkeep, such as
	// scheduled pruning, so that it is done by one at a time. And a
	// pruning records how many of the run's effects it took with their
	// outbox not done (store.Pruning.Open: effects a person abandoned).
	`
ALTER TABLE pruned ADD COLUMN open_effects INTEGER NOT NULL DEFAULT 0 CHECK (open_effects >= 0);
CREATE TABLE duties (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	generation INTEGER NOT NULL CHECK (generation >= 1),
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
`,
	// 17: a run's checkpoints and trace rows may be sealed again under
	// the store's primary key (store.Resealer): while resealing names the
	// run, inside the one transaction that reseals it, the triggers let a
	// checkpoint's body or a trace row's records change and nothing else
	// of the row. Outside it they stay append-only.
	`
CREATE TABLE resealing (
	run_id     TEXT PRIMARY KEY REFERENCES runs(run_id),
	started_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
DROP TRIGGER trace_no_update;
DROP TRIGGER checkpoints_no_update;
CREATE TRIGGER trace_no_update BEFORE UPDATE ON trace WHEN NOT (EXISTS (SELECT 1 FROM resealing r WHERE r.run_id = OLD.run_id)
	AND NEW.run_id IS OLD.run_id AND NEW.seq IS OLD.seq AND NEW.last_seq IS OLD.last_seq AND NEW.recorded_at IS OLD.recorded_at)
BEGIN SELECT RAISE(ABORT, 'trace is append-only'); END;
CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints WHEN NOT (EXISTS (SELECT 1 FROM resealing r WHERE r.run_id = OLD.run_id)
	AND NEW.run_id IS OLD.run_id AND NEW.n IS OLD.n AND NEW.seq IS OLD.seq AND NEW.format_version IS OLD.format_version
	AND NEW.build_digest IS OLD.build_digest AND NEW.digest IS OLD.digest AND NEW.generation IS OLD.generation
	AND NEW.recorded_at IS OLD.recorded_at)
BEGIN SELECT RAISE(ABORT, 'checkpoints are append-only'); END;
`,
	// 18: notices (store.Noticeboard): messages for people outside, each
	// written with the tick that caused it and deleted once delivered.
	// No reference to runs: a run may be pruned before its notice is
	// delivered. Claimed oldest due first (notices_due).
	`
CREATE TABLE notices (
	notice_id  TEXT NOT NULL UNIQUE,
	run_id     TEXT NOT NULL,
	seq        INTEGER NOT NULL CHECK (seq >= 0),
	kind       TEXT NOT NULL,
	body       BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	attempts   INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
	next_at    INTEGER NOT NULL,
	holder     TEXT NOT NULL DEFAULT '',
	held_until INTEGER NOT NULL DEFAULT 0,
	last_error TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX notices_due ON notices (next_at);
`,
	// 19: shared limits (store.SharedLimits): the slots of a limit on
	// requests open at once, each held by one request until it is given
	// back or its hold passes, and the theoretical arrival time of a limit
	// on requests a second. Not evidence: written without waiting for the
	// disk.
	`
CREATE TABLE limit_slots (
	name       TEXT NOT NULL,
	slot       INTEGER NOT NULL CHECK (slot >= 0),
	holder     TEXT NOT NULL,
	held_until INTEGER NOT NULL,
	UNIQUE (name, slot)
) STRICT;
CREATE TABLE limit_rates (
	name    TEXT NOT NULL UNIQUE,
	arrival INTEGER NOT NULL
) STRICT;
`,
	// 20: the queue of a shared limit's slots: who waits for one, since
	// when, and until when its place is kept without its asking again.
	`
CREATE TABLE limit_queue (
	name       TEXT NOT NULL,
	holder     TEXT NOT NULL,
	since      INTEGER NOT NULL,
	seen_until INTEGER NOT NULL,
	UNIQUE (name, holder)
) STRICT;
`,
	// 21: the routes a notice was delivered to before its last failed
	// attempt (comma-separated names), so that a notifier of several
	// routes sends it again only to the others.
	`
ALTER TABLE notices ADD COLUMN sent TEXT NOT NULL DEFAULT '';
`,
	// 22: how long each route still to take a notice waits past the
	// notice's due time (store.JoinWaits), so that a route that asked to
	// wait long does not hold back one that may be tried again soon.
	`
ALTER TABLE notices ADD COLUMN waits TEXT NOT NULL DEFAULT '';
`,
	// 23: the bound each request holding or waiting for a shared limit's
	// slot declared, and the rate a limit was last booked under and until
	// when it binds, so that the strictest a process declares holds for
	// all (store.SlotBound, store.RateBound).
	`
ALTER TABLE limit_slots ADD COLUMN bound INTEGER NOT NULL DEFAULT 0;
ALTER TABLE limit_queue ADD COLUMN bound INTEGER NOT NULL DEFAULT 0;
ALTER TABLE limit_rates ADD COLUMN per_second INTEGER NOT NULL DEFAULT 0;
ALTER TABLE limit_rates ADD COLUMN bound_until INTEGER NOT NULL DEFAULT 0;
`,
	// 24: webhook deliveries whose signature held but which could not be
	// taken, kept for an operator to take again or drop
	// (store.DeliveryParking); the most recently refused of each hook
	// are listed first.
	`
CREATE TABLE parked_deliveries (
	key TEXT PRIMARY KEY,
	hook TEXT NOT NULL,
	event TEXT NOT NULL,
	body BLOB NOT NULL,
	status INTEGER NOT NULL,
	reason TEXT NOT NULL,
	first_at INTEGER NOT NULL,
	last_at INTEGER NOT NULL,
	times INTEGER NOT NULL
) STRICT;
CREATE INDEX parked_deliveries_by_hook ON parked_deliveries (hook, last_at DESC, key DESC);
`,
	// 25: the schedules an operator paused (store.SchedulePausing): no
	// server sharing the store starts their runs until they are resumed.
	`
CREATE TABLE paused_schedules (
	name TEXT PRIMARY KEY,
	paused_by TEXT NOT NULL,
	reason TEXT NOT NULL,
	since INTEGER NOT NULL
) STRICT;
`,
	// 26: where people who started or fed a run from a chat are told
	// what becomes of it, while the chat service keeps the address
	// (store.FollowUps). No foreign key: a follow-up is kept before the
	// run it names is started, so that its first notice finds it.
	`
CREATE TABLE follow_ups (
	run_id TEXT NOT NULL,
	name TEXT NOT NULL,
	scheme TEXT NOT NULL,
	address BLOB NOT NULL,
	added_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	PRIMARY KEY (run_id, name)
) STRICT;
CREATE INDEX follow_ups_by_expiry ON follow_ups (expires_at);
`,
	// 27: a schedule's pause may end by itself (store.PausedSchedule's
	// Until, Unix nanoseconds; 0 pauses until resumed).
	`
ALTER TABLE paused_schedules ADD COLUMN until_at INTEGER NOT NULL DEFAULT 0;
`,
	// 28: a schedule's pause may be set ahead (store.PausedSchedule's
	// From, Unix nanoseconds; 0 holds from when it was paused).
	`
ALTER TABLE paused_schedules ADD COLUMN from_at INTEGER NOT NULL DEFAULT 0;
`,
	// 29: each schedule's latest run (store.ScheduleHeads), which a
	// schedule that does not overlap its runs waits on.
	`
CREATE TABLE schedule_heads (
	name TEXT PRIMARY KEY,
	run_id TEXT NOT NULL,
	due_at INTEGER NOT NULL
) STRICT;
`,
	// 30: a run's labels (store.Run.Labels): on its header, as JSON ('' for
	// none), and a row each in run_labels, the index a filtered listing
	// finds them by in creation order.
	`
ALTER TABLE runs ADD COLUMN labels TEXT NOT NULL DEFAULT '';
CREATE TABLE run_labels (
	key TEXT NOT NULL,
	value TEXT NOT NULL,
	created_order INTEGER NOT NULL REFERENCES runs(created_order),
	PRIMARY KEY (key, value, created_order)
) STRICT, WITHOUT ROWID;
`,
}

// Migrations that change no table.
const (
	withdrawn        = ""
	nothingToRewrite = ""
)

// withdrawnVersions are schema versions released and taken out again: a
// database at one is refused, never migrated (its tables are not those
// of any version before or after it).
var withdrawnVersions = map[int64]bool{10: true, 11: true}

// rebuiltParents are the tables a migration rebuilds that other tables
// reference, by the version the rebuild brings the schema to. Such a
// migration runs with foreign keys off (DROP TABLE would otherwise delete
// what the children reference); the tables listed are those to check with
// foreign_key_check before the migration commits: the rebuilt table
// (which references others) and every table that references it.
var rebuiltParents = map[int64][]string{
	8: {"intents", "outbox", "attempts", "receipts"},
	9: {"outbox", "attempts"},
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = int64(len(migrations))
