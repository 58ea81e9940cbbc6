package postgres

// migration is one schema step; migrations[i] brings the schema to version
// i+1. Never edit a released migration: add a new one.
type migration struct {
	description string
	sql         string
}

var migrations = []migration{
	{"initial schema", `
CREATE TABLE runs (
	run_id           text PRIMARY KEY,
	workflow_id      text NOT NULL,
	workflow_version text NOT NULL,
	state            text NOT NULL,
	outcome          text NOT NULL DEFAULT '',
	head_seq         bigint NOT NULL DEFAULT 0 CHECK (head_seq >= 0),
	head_hash        text NOT NULL,
	lease_owner      text NOT NULL DEFAULT '',
	lease_generation bigint NOT NULL DEFAULT 0,
	lease_expires_at bigint NOT NULL DEFAULT 0,
	quarantine       text NOT NULL DEFAULT '',
	created_at       bigint NOT NULL,
	updated_at       bigint NOT NULL,
	created_order    bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);
-- Claiming scans live runs in creation order.
CREATE INDEX runs_live ON runs (created_order) WHERE outcome = '' AND quarantine = '';

CREATE TABLE events (
	run_id      text NOT NULL REFERENCES runs(run_id),
	seq         bigint NOT NULL CHECK (seq >= 1),
	kind        text NOT NULL,
	body        bytea NOT NULL,
	digest      text NOT NULL,
	prev_hash   text NOT NULL,
	chain_hash  text NOT NULL,
	generation  bigint NOT NULL,
	recorded_at bigint NOT NULL,
	PRIMARY KEY (run_id, seq)
);

CREATE TABLE checkpoints (
	run_id         text NOT NULL REFERENCES runs(run_id),
	n              bigint NOT NULL CHECK (n >= 1),
	seq            bigint NOT NULL,
	format_version bigint NOT NULL,
	build_digest   text NOT NULL,
	body           bytea NOT NULL,
	digest         text NOT NULL,
	generation     bigint NOT NULL,
	recorded_at    bigint NOT NULL,
	PRIMARY KEY (run_id, n)
);

CREATE TABLE approvals (
	approval_id    text PRIMARY KEY,
	run_id         text NOT NULL REFERENCES runs(run_id),
	request_digest text NOT NULL,
	nonce          text NOT NULL UNIQUE,
	body           bytea NOT NULL,
	digest         text NOT NULL,
	expires_at     bigint NOT NULL,
	status         text NOT NULL CHECK (status IN ('granted', 'consumed', 'revoked')),
	consumed_by    text NOT NULL DEFAULT '',
	recorded_at    bigint NOT NULL
);

CREATE TABLE intents (
	intent_id       text PRIMARY KEY,
	run_id          text NOT NULL REFERENCES runs(run_id),
	seq             bigint NOT NULL,
	commit_order    bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
	effect_type     text NOT NULL,
	idempotency_key text NOT NULL CONSTRAINT intents_idempotency_key UNIQUE,
	content_digest  text NOT NULL,
	approval_id     text REFERENCES approvals(approval_id),
	body            bytea NOT NULL,
	digest          text NOT NULL,
	generation      bigint NOT NULL,
	recorded_at     bigint NOT NULL
);
CREATE INDEX intents_by_run ON intents (run_id, commit_order);

CREATE TABLE outbox (
	intent_id  text PRIMARY KEY REFERENCES intents(intent_id),
	run_id     text NOT NULL REFERENCES runs(run_id),
	status     text NOT NULL CHECK (status IN ('pending', 'in_flight', 'retry', 'reconcile', 'human', 'done')),
	route      text NOT NULL DEFAULT '',
	attempts   bigint NOT NULL DEFAULT 0,
	updated_at bigint NOT NULL
);
CREATE INDEX outbox_open ON outbox (status) WHERE status <> 'done';

CREATE TABLE attempts (
	intent_id   text NOT NULL REFERENCES intents(intent_id),
	n           bigint NOT NULL CHECK (n >= 1),
	status      text NOT NULL CHECK (status IN ('started', 'succeeded', 'failed_transient', 'failed_permanent', 'unknown', 'reconciled_applied', 'reconciled_not_applied')),
	generation  bigint NOT NULL,
	detail      text NOT NULL DEFAULT '',
	started_at  bigint NOT NULL,
	finished_at bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (intent_id, n)
);

CREATE TABLE receipts (
	intent_id    text PRIMARY KEY REFERENCES intents(intent_id),
	run_id       text NOT NULL REFERENCES runs(run_id),
	commit_order bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
	outcome      text NOT NULL,
	body         bytea NOT NULL,
	digest       text NOT NULL,
	generation   bigint NOT NULL,
	recorded_at  bigint NOT NULL
);
CREATE INDEX receipts_by_run ON receipts (run_id, commit_order);

CREATE TABLE trace (
	run_id      text NOT NULL REFERENCES runs(run_id),
	seq         bigint NOT NULL,
	kind        text NOT NULL,
	body        bytea NOT NULL,
	recorded_at bigint NOT NULL,
	PRIMARY KEY (run_id, seq)
);

CREATE TABLE inbox (
	run_id      text NOT NULL REFERENCES runs(run_id),
	seq         bigint NOT NULL,
	inbound_id  text NOT NULL,
	kind        text NOT NULL,
	actor_role  text NOT NULL,
	actor       text NOT NULL,
	capability  text NOT NULL,
	body        bytea NOT NULL,
	digest      text NOT NULL,
	consumed    boolean NOT NULL DEFAULT false,
	recorded_at bigint NOT NULL,
	PRIMARY KEY (run_id, seq),
	CONSTRAINT inbox_inbound_id UNIQUE (run_id, inbound_id)
);

-- The evidence tables are append-only: history is never rewritten, not
-- even by someone writing SQL by hand. Row triggers refuse UPDATE and
-- DELETE; statement triggers refuse TRUNCATE, which row triggers miss.
CREATE FUNCTION flrh_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'FL001';
END
$$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER receipts_append_only BEFORE UPDATE OR DELETE ON receipts FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER intents_append_only BEFORE UPDATE OR DELETE ON intents FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER trace_append_only BEFORE UPDATE OR DELETE ON trace FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER checkpoints_append_only BEFORE UPDATE ON checkpoints FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER receipts_no_truncate BEFORE TRUNCATE ON receipts FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER intents_no_truncate BEFORE TRUNCATE ON intents FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER trace_no_truncate BEFORE TRUNCATE ON trace FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
`},
	// The runner asks which runs have work to do (Ready) on every poll: a
	// pending inbox entry is found from this index, not from every run's
	// inbox (SQLite's schema has the same, with its live-runs index).
	{"pending inbox entries by run", `
CREATE INDEX inbox_pending ON inbox (run_id) WHERE NOT consumed;
`},
	// A write transaction sends its writes with COMMIT in one pipeline,
	// after deciding on what it read. A write whose row count that
	// decision relies on (an approval consumed, an attempt finished, an
	// inbound event consumed) is wrapped so that touching any other number
	// of rows fails the transaction — and so skips its COMMIT — instead of
	// committing a tick the store would have refused.
	{"guard for pipelined writes", `
CREATE FUNCTION flrh_expect_one(touched bigint, what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF touched <> 1 THEN
		RAISE EXCEPTION '% touched % rows, not one', what, touched USING ERRCODE = 'FL002';
	END IF;
END
$$;
`},
	// No query selects the outbox by status (every read and write finds
	// an intent's row by its key), and an index on the status column made
	// every status change a new index entry: without it, the three
	// status changes of a governed step can be heap-only updates.
	{"outbox_open dropped", `
DROP INDEX outbox_open;
`},
	// A tick's trace records in one row: the records a commit appends
	// cost one heap tuple and one index entry, with their write-ahead log
	// records, instead of one each. The row numbers its first and last
	// record (seq, last_seq) and holds their kinds and bodies in order;
	// each body is sealed, when a sealer is set, under its own position
	// as before, so no record's bytes change. The constraint makes a row
	// whose arrays do not hold exactly last_seq - seq + 1 records, or a
	// NULL among them, impossible to store, whatever writes it. Existing
	// records become one-record rows.
	{"trace records per tick", `
CREATE TABLE trace_ticks (
	run_id      text NOT NULL REFERENCES runs(run_id),
	seq         bigint NOT NULL CHECK (seq >= 1),
	last_seq    bigint NOT NULL,
	kinds       text[] NOT NULL,
	bodies      bytea[] NOT NULL,
	recorded_at bigint NOT NULL,
	PRIMARY KEY (run_id, seq),
	CONSTRAINT trace_records CHECK (last_seq >= seq
		AND array_ndims(kinds) = 1 AND array_ndims(bodies) = 1
		AND cardinality(kinds) = last_seq - seq + 1 AND cardinality(bodies) = last_seq - seq + 1
		AND array_position(kinds, NULL) IS NULL AND array_position(bodies, NULL) IS NULL)
);
INSERT INTO trace_ticks (run_id, seq, last_seq, kinds, bodies, recorded_at)
SELECT run_id, seq, seq, ARRAY[kind], ARRAY[body], recorded_at FROM trace ORDER BY run_id, seq;
DROP TABLE trace;
ALTER TABLE trace_ticks RENAME TO trace;
ALTER INDEX trace_ticks_pkey RENAME TO trace_pkey;
CREATE TRIGGER trace_append_only BEFORE UPDATE OR DELETE ON trace FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER trace_no_truncate BEFORE TRUNCATE ON trace FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
`},
	// An event's three hashes as their 32-byte sums: a canonical
	// "sha256:" and 64 lowercase hex digits is stored as the sum in
	// *_sum, its text column NULL (which costs a bit in the row's null
	// bitmap, not 72 bytes); anything else keeps its text, the sum NULL.
	// Exactly one of each pair is set. Reads give back the same text.
	// The table is rebuilt: its rows may not be updated.
	{"event hashes as sums", `
CREATE TABLE events_sums (
	run_id      text NOT NULL REFERENCES runs(run_id),
	seq         bigint NOT NULL CHECK (seq >= 1),
	kind        text NOT NULL,
	body        bytea NOT NULL,
	digest_sum  bytea,
	digest      text,
	prev_sum    bytea,
	prev_hash   text,
	chain_sum   bytea,
	chain_hash  text,
	generation  bigint NOT NULL,
	recorded_at bigint NOT NULL,
	PRIMARY KEY (run_id, seq),
	CONSTRAINT event_hashes CHECK ((digest_sum IS NULL) <> (digest IS NULL)
		AND (prev_sum IS NULL) <> (prev_hash IS NULL)
		AND (chain_sum IS NULL) <> (chain_hash IS NULL)
		AND octet_length(digest_sum) = 32 AND octet_length(prev_sum) = 32 AND octet_length(chain_sum) = 32)
);
CREATE FUNCTION flrh_sum(h text) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
	SELECT CASE WHEN h ~ '^sha256:[0-9a-f]{64}$' THEN decode(substr(h, 8), 'hex') END
$$;
INSERT INTO events_sums (run_id, seq, kind, body, digest_sum, digest, prev_sum, prev_hash, chain_sum, chain_hash, generation, recorded_at)
SELECT run_id, seq, kind, body,
	flrh_sum(digest), CASE WHEN flrh_sum(digest) IS NULL THEN digest END,
	flrh_sum(prev_hash), CASE WHEN flrh_sum(prev_hash) IS NULL THEN prev_hash END,
	flrh_sum(chain_hash), CASE WHEN flrh_sum(chain_hash) IS NULL THEN chain_hash END,
	generation, recorded_at
FROM events ORDER BY run_id, seq;
DROP FUNCTION flrh_sum(text);
DROP TABLE events;
ALTER TABLE events_sums RENAME TO events;
ALTER INDEX events_sums_pkey RENAME TO events_pkey;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
`},
	// A run's header records the digest of the workflow definition it was
	// created under, so that runners holding another definition of the
	// same id and version leave it alone. An existing run takes the
	// definition digest its latest checkpoint names: the body's top-level
	// "workflow_digest" (build_digest is the platform's, not the
	// definition's). The body is read through encode(..., 'escape'),
	// which never fails, rather than as JSON, which fails the migration
	// on a sealed body; a sealed body starts with a NUL byte, not
	// "{", and leaves "". Canonical JSON sorts its keys, so the top-level member
	// comes after any nested one of that name: the greedy match takes the
	// last. A run with no such checkpoint keeps "".
	{"run definition digest", `
ALTER TABLE runs ADD COLUMN workflow_digest text NOT NULL DEFAULT '';
UPDATE runs SET workflow_digest = COALESCE((
	SELECT CASE WHEN substring(c.body FROM 1 FOR 1) = '\x7b'::bytea
		THEN substring(encode(c.body, 'escape') FROM '.*"workflow_digest":"(sha256:[0-9a-f]{64})"') END
	FROM checkpoints c WHERE c.run_id = runs.run_id
	ORDER BY c.n DESC LIMIT 1), '');
`},
	// Values over TOAST's threshold (about 2 KB: a checkpoint, a tick's
	// trace bodies, now and then a large event, intent or receipt) are
	// compressed with lz4 rather than pglz: the same bytes stored, at a
	// fraction of the server's CPU. Only values written afterwards are
	// compressed so; the rest read as before. A server built without lz4
	// (or older than PostgreSQL 14) refuses the clause, and the block
	// leaves every column as it was.
	{"large values compressed with lz4", `
DO $$
BEGIN
	EXECUTE 'ALTER TABLE checkpoints ALTER COLUMN body SET COMPRESSION lz4';
	EXECUTE 'ALTER TABLE trace ALTER COLUMN bodies SET COMPRESSION lz4';
	EXECUTE 'ALTER TABLE events ALTER COLUMN body SET COMPRESSION lz4';
	EXECUTE 'ALTER TABLE intents ALTER COLUMN body SET COMPRESSION lz4';
	EXECUTE 'ALTER TABLE receipts ALTER COLUMN body SET COMPRESSION lz4';
	EXECUTE 'ALTER TABLE inbox ALTER COLUMN body SET COMPRESSION lz4';
	EXECUTE 'ALTER TABLE approvals ALTER COLUMN body SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
	NULL;
END
$$;
`},
	// A checkpoint or a tick's trace row stays one heap tuple unless it
	// will not fit a page even compressed. Under the default (EXTENDED)
	// storage a row over TOAST's threshold (about 2 KB, which most are)
	// has its large value compressed and then, still over it, cut into
	// TOAST chunks: each a heap tuple and an index entry of its own, with
	// their write-ahead log records, written now and read back through
	// that index. Under MAIN a value is compressed in the row and moved
	// out only when the row would still not fit a page. Every variable-
	// length column of the two tables takes MAIN: one left EXTENDED is the
	// first the server moves out of line, however small. Only the place
	// of values written afterwards changes, never their bytes.
	{"checkpoints and trace rows kept whole", `
ALTER TABLE checkpoints ALTER COLUMN run_id SET STORAGE MAIN, ALTER COLUMN build_digest SET STORAGE MAIN,
	ALTER COLUMN body SET STORAGE MAIN, ALTER COLUMN digest SET STORAGE MAIN;
ALTER TABLE trace ALTER COLUMN run_id SET STORAGE MAIN, ALTER COLUMN kinds SET STORAGE MAIN,
	ALTER COLUMN bodies SET STORAGE MAIN;
`},
	// The checks a row of the hot tables is held to, kept where the
	// server reads them once per connection. A table's CHECK constraint
	// is stored as the text of its expression tree, and every statement
	// that writes the table reads that text back into a tree and plans it
	// before the first row (for the trace and events rows, thousands of
	// bytes per statement); a domain's check is read and planned once per
	// connection and kept. So every check on one column becomes the
	// column's domain, with the same condition, and a table keeps a CHECK
	// only for what relates columns: an event's hash pairs, a trace row's
	// record count. Nothing a row may hold changes: a trace row's arrays
	// are one-dimensional, without NULLs and not empty (with the count,
	// what last_seq >= seq said), sums are 32 bytes, positions and
	// attempt numbers at least 1, a run's head at least 0, a status one
	// of its list. A type change rewrites the table and resets a
	// column's storage and compression, which the trace columns get
	// back.
	{"checks kept in domains", `
CREATE DOMAIN flrh_position AS bigint CONSTRAINT flrh_position_check CHECK (VALUE >= 1);
CREATE DOMAIN flrh_head AS bigint CONSTRAINT flrh_head_check CHECK (VALUE >= 0);
CREATE DOMAIN flrh_sum AS bytea CONSTRAINT flrh_sum_check CHECK (octet_length(VALUE) = 32);
CREATE DOMAIN flrh_outbox_status AS text CONSTRAINT flrh_outbox_status_check
	CHECK (VALUE IN ('pending', 'in_flight', 'retry', 'reconcile', 'human', 'done'));
CREATE DOMAIN flrh_attempt_status AS text CONSTRAINT flrh_attempt_status_check
	CHECK (VALUE IN ('started', 'succeeded', 'failed_transient', 'failed_permanent', 'unknown', 'reconciled_applied', 'reconciled_not_applied'));
CREATE DOMAIN flrh_trace_kinds AS text[] CONSTRAINT flrh_trace_kinds_check
	CHECK (array_ndims(VALUE) = 1 AND array_position(VALUE, NULL) IS NULL AND cardinality(VALUE) >= 1);
CREATE DOMAIN flrh_trace_bodies AS bytea[] CONSTRAINT flrh_trace_bodies_check
	CHECK (array_ndims(VALUE) = 1 AND array_position(VALUE, NULL) IS NULL AND cardinality(VALUE) >= 1);
ALTER TABLE runs DROP CONSTRAINT runs_head_seq_check, ALTER COLUMN head_seq TYPE flrh_head;
ALTER TABLE events DROP CONSTRAINT events_sums_seq_check, DROP CONSTRAINT event_hashes,
	ALTER COLUMN seq TYPE flrh_position, ALTER COLUMN digest_sum TYPE flrh_sum,
	ALTER COLUMN prev_sum TYPE flrh_sum, ALTER COLUMN chain_sum TYPE flrh_sum,
	ADD CONSTRAINT event_hashes CHECK ((digest_sum IS NULL) <> (digest IS NULL)
		AND (prev_sum IS NULL) <> (prev_hash IS NULL) AND (chain_sum IS NULL) <> (chain_hash IS NULL));
ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_n_check, ALTER COLUMN n TYPE flrh_position;
ALTER TABLE outbox DROP CONSTRAINT outbox_status_check, ALTER COLUMN status TYPE flrh_outbox_status;
ALTER TABLE attempts DROP CONSTRAINT attempts_n_check, DROP CONSTRAINT attempts_status_check,
	ALTER COLUMN n TYPE flrh_position, ALTER COLUMN status TYPE flrh_attempt_status;
ALTER TABLE trace DROP CONSTRAINT trace_ticks_seq_check, DROP CONSTRAINT trace_records,
	ALTER COLUMN seq TYPE flrh_position, ALTER COLUMN kinds TYPE flrh_trace_kinds, ALTER COLUMN bodies TYPE flrh_trace_bodies,
	ADD CONSTRAINT trace_records CHECK (cardinality(kinds) = last_seq - seq + 1 AND cardinality(bodies) = last_seq - seq + 1);
ALTER TABLE trace ALTER COLUMN kinds SET STORAGE MAIN, ALTER COLUMN bodies SET STORAGE MAIN;
DO $$
BEGIN
	EXECUTE 'ALTER TABLE trace ALTER COLUMN bodies SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
	NULL;
END
$$;
`},
	// An event's run is checked once per statement instead of once per
	// row. The foreign key ran a SELECT ... FOR KEY SHARE of the run, with
	// its own executor start-up, for every event row (a tick inserts many
	// in one statement); a statement trigger over the inserted rows checks
	// them all in one query and fails the insert with the key's SQLSTATE
	// (23503), so the store's error is the same. The key also held off a
	// DELETE of the run, or a change of its run_id, while events named it:
	// flrh does neither, and now the server refuses both outright (and
	// TRUNCATE, which row triggers miss), so no lock on the run is needed
	// and no event can be left without its run. The functions keep the
	// search_path of the migration, so that a session with another one
	// checks this schema's runs, not a namesake's.
	{"event runs checked per statement", `
CREATE FUNCTION flrh_runs_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'runs are never deleted, truncated or renamed (% on %)', TG_OP, TG_TABLE_NAME USING ERRCODE = 'FL001';
END
$$;
CREATE TRIGGER runs_no_delete BEFORE DELETE ON runs FOR EACH ROW EXECUTE FUNCTION flrh_runs_kept();
CREATE TRIGGER runs_no_truncate BEFORE TRUNCATE ON runs FOR EACH STATEMENT EXECUTE FUNCTION flrh_runs_kept();
CREATE TRIGGER runs_no_rename BEFORE UPDATE OF run_id ON runs FOR EACH ROW
	WHEN (OLD.run_id IS DISTINCT FROM NEW.run_id) EXECUTE FUNCTION flrh_runs_kept();
CREATE FUNCTION flrh_event_runs() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
	missing text;
BEGIN
	SELECT n.run_id INTO missing FROM new_rows n
	WHERE NOT EXISTS (SELECT FROM runs r WHERE r.run_id = n.run_id) LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'insert into table "events" violates its run key: run "%" does not exist', missing
			USING ERRCODE = 'foreign_key_violation', TABLE = 'events', COLUMN = 'run_id';
	END IF;
	RETURN NULL;
END
$$;
CREATE TRIGGER events_run_exists AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION flrh_event_runs();
ALTER TABLE events DROP CONSTRAINT events_sums_run_id_fkey;
`},
	// The two table checks left by migration 10 are no longer read from
	// their stored tree text at every statement that writes their table
	// (the server reads a table CHECK's text back into a tree and plans it
	// per statement, a domain's once per connection). Each moves into a
	// trigger on its table with the same condition, failing with the
	// check's SQLSTATE (23514) and name: an event's hash pairs into the
	// statement trigger that already reads every inserted event for its
	// run, in one query over them; a trace row's record count into a row
	// trigger (one row a tick) that also checks the row's run, in place of
	// the foreign key (runs are never deleted or renamed: see migration
	// 11). Events and trace rows are never updated (their row triggers
	// refuse it), so the insert is the only way a row gets there. A row
	// with a NULL is left to its column's NOT NULL, which came first. The
	// triggers' functions name the runs table with its schema instead of
	// pinning the search_path (a configuration change and back at every
	// call).
	{"table checks in the events and trace triggers", eventsChecked("CREATE FUNCTION", `
	SELECT n.run_id INTO missing FROM new_rows n
	WHERE NOT EXISTS (SELECT FROM %I.runs r WHERE r.run_id = n.run_id) LIMIT 1;`) + `
DROP TRIGGER events_run_exists ON events;
CREATE TRIGGER events_checked AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION flrh_events_checked();
DROP FUNCTION flrh_event_runs();
ALTER TABLE events DROP CONSTRAINT event_hashes;
DO $do$
BEGIN
	EXECUTE format($f$
CREATE FUNCTION flrh_trace_checked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF num_nulls(NEW.run_id, NEW.seq, NEW.last_seq, NEW.kinds, NEW.bodies, NEW.recorded_at) > 0 THEN
		RETURN NEW; -- refused by the column's NOT NULL, as before
	END IF;
	IF NOT (cardinality(NEW.kinds) = NEW.last_seq - NEW.seq + 1 AND cardinality(NEW.bodies) = NEW.last_seq - NEW.seq + 1) THEN
		RAISE EXCEPTION 'new row for relation "trace" violates check constraint "trace_records"'
			USING ERRCODE = 'check_violation', TABLE = 'trace', CONSTRAINT = 'trace_records';
	END IF;
	IF NOT EXISTS (SELECT FROM %I.runs r WHERE r.run_id = NEW.run_id) THEN
		RAISE EXCEPTION 'insert into table "trace" violates its run key: run "%%" does not exist', NEW.run_id
			USING ERRCODE = 'foreign_key_violation', TABLE = 'trace', COLUMN = 'run_id';
	END IF;
	RETURN NEW;
END
$$$f$, current_schema());
END
$do$;
CREATE TRIGGER trace_checked BEFORE INSERT ON trace FOR EACH ROW EXECUTE FUNCTION flrh_trace_checked();
ALTER TABLE trace DROP CONSTRAINT trace_records, DROP CONSTRAINT trace_ticks_run_id_fkey;
`},
	// An outbox row and a receipt name their intent and their run, and
	// each was checked by two foreign keys: the intent's and the run's,
	// one SELECT ... FOR KEY SHARE with its own executor start-up each, per
	// row. One key on the pair, to the intent's (intent_id, run_id), checks
	// both at once: the intent exists, and so does its run (the intent's
	// own key). It also holds what the store always wrote and the old keys
	// did not: an outbox row or a receipt is of its intent's run. The pair
	// needs a unique index on intents, an entry per intent; a step writes
	// one intent and two rows checked by the key.
	{"outbox and receipts keyed by their intent's run", `
ALTER TABLE intents ADD CONSTRAINT intents_intent_run UNIQUE (intent_id, run_id);
ALTER TABLE outbox ADD CONSTRAINT outbox_intent_run_fkey FOREIGN KEY (intent_id, run_id) REFERENCES intents (intent_id, run_id),
	DROP CONSTRAINT outbox_intent_id_fkey, DROP CONSTRAINT outbox_run_id_fkey;
ALTER TABLE receipts ADD CONSTRAINT receipts_intent_run_fkey FOREIGN KEY (intent_id, run_id) REFERENCES intents (intent_id, run_id),
	DROP CONSTRAINT receipts_intent_id_fkey, DROP CONSTRAINT receipts_run_id_fkey;
`},
	// A checkpoint or a tick's trace row is stored uncompressed when the
	// row fits a page as it is (toast_tuple_target at its largest): the
	// server compressed every one over about 2 KB at insert. A larger row
	// is still compressed in place (its columns take MAIN storage) and
	// moved out of line only if it still does not fit. Only rows written
	// afterwards change, and only in how they are stored, never in their
	// bytes.
	{"checkpoints and trace rows stored whole up to a page", `
ALTER TABLE checkpoints SET (toast_tuple_target = 8160);
ALTER TABLE trace SET (toast_tuple_target = 8160);
`},
	// An event's run is looked up by its key, once per inserted event,
	// whatever the size of runs. The statement trigger's query is planned
	// once per connection and kept; written as an anti-join, planned on a
	// young database it hashed the whole runs table at every insert into
	// events, a cost that grew with the runs. OFFSET 0 keeps the EXISTS a
	// subquery run for each distinct run_id inserted, with it as a
	// parameter, which the primary key answers (and keeps the check from
	// being pushed below the DISTINCT). Same checks, same errors.
	{"events' runs looked up by key", eventsChecked("CREATE OR REPLACE FUNCTION", `
	SELECT n.run_id INTO missing FROM (SELECT DISTINCT run_id FROM new_rows OFFSET 0) n
	WHERE NOT EXISTS (SELECT FROM %I.runs r WHERE r.run_id = n.run_id OFFSET 0) LIMIT 1;`) + "\n"},
	// Submit counts the inputs it appends on the run's row, so that its
	// commit changes the row a tick locks: a REPEATABLE READ tick whose
	// snapshot is older than such a commit (taken before its lock waited,
	// or before it reached the run in a group) then fails to lock the row
	// with a serialization failure instead of checking an inbox older than
	// the lock. Existing runs start at 0; the count is never read to
	// decide anything else. A constant default: no row is rewritten. IF
	// NOT EXISTS: an earlier version's schema holding the column (an
	// earlier build ignores it, and the migration tests record their
	// earlier versions' runs with this build's Submit, which writes it)
	// keeps it as it is.
	{"runs count their submissions", `
ALTER TABLE runs ADD COLUMN IF NOT EXISTS submissions bigint NOT NULL DEFAULT 0;
`},
	// An intent's and a receipt's commit order is read only with its run
	// (intents_by_run, receipts_by_run); its values come from an identity
	// no write overrides. The unique index on it alone served no read and
	// took an index entry at every intent and receipt written.
	{"intents and receipts keep their commit order in their run's index alone", `
ALTER TABLE intents DROP CONSTRAINT IF EXISTS intents_commit_order_key;
ALTER TABLE receipts DROP CONSTRAINT IF EXISTS receipts_commit_order_key;
`},
	// The events' and the trace rows' checks are made only for rows the
	// store did not write under its one-round-trip fence (fenceAhead),
	// which sets the transaction's flrh.tick_at only once it has locked
	// the run's row and found the lease, head and hash the store
	// expected. Every row the store writes in that transaction is of that
	// run, which is never deleted or renamed (migration 11), with hash
	// pairs and a record count the store builds itself: the checks could
	// not fail there. Any other insert (by hand, the two-round-trip tick,
	// a merged group) finds the setting unset or empty and is checked as
	// before, with the same errors. The condition is a function's call: a
	// trigger's WHEN is read back from its stored tree text at every
	// statement, and a call's text is a fraction of the expression's.
	// Same trigger functions; only the WHEN is new. Written to run again
	// over itself.
	{"events' and trace rows' checks skipped under the fence", `
CREATE OR REPLACE FUNCTION flrh_unfenced() RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN ` + unfenced + `;
END
$$;
DROP TRIGGER events_checked ON events;
CREATE TRIGGER events_checked AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_events_checked();
DROP TRIGGER trace_checked ON trace;
CREATE TRIGGER trace_checked BEFORE INSERT ON trace FOR EACH ROW
	WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_trace_checked();
`},
	// The foreign keys a governed step's rows are checked by — a
	// checkpoint's, an intent's and an input's to their run, an outbox
	// row's and a receipt's to their intent of their run, an attempt's to
	// its intent — become row triggers with migration 18's condition: each
	// key ran a SELECT ... FOR KEY SHARE with its own executor set-up for
	// every row, about 38,000 instructions, seven a step, where the store
	// has already settled every one under its fence (the run's row locked
	// in the transaction; an outbox row or an attempt written from the
	// intent the statement inserts, a receipt or an attempt beside the
	// outbox row of its intent and run that it moves). A row written any
	// other way is checked by its trigger against the row it names, with
	// the key's SQLSTATE (23503); a row with a NULL there is left to the
	// column's NOT NULL. Runs and intents are never deleted, renamed or
	// updated (migrations 1 and 11), so the keys' hold on them is not
	// needed; and with the pair's key gone, intents' unique (intent_id,
	// run_id) serves nothing and goes: the intent is found by its key.
	{"the step's keys as triggers skipped under the fence", `
DO $do$
BEGIN
	EXECUTE format($f$
CREATE OR REPLACE FUNCTION flrh_keys_checked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_ARGV[0] = 'run' THEN
		IF NEW.run_id IS NOT NULL AND NOT EXISTS (SELECT FROM %I.runs r WHERE r.run_id = NEW.run_id) THEN
			RAISE EXCEPTION 'insert into table "%%" violates its run key: run "%%" does not exist', TG_TABLE_NAME, NEW.run_id
				USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, COLUMN = 'run_id';
		END IF;
	ELSIF TG_ARGV[0] = 'intent' THEN
		IF NEW.intent_id IS NOT NULL AND NOT EXISTS (SELECT FROM %I.intents i WHERE i.intent_id = NEW.intent_id) THEN
			RAISE EXCEPTION 'insert into table "%%" violates its intent key: intent "%%" does not exist', TG_TABLE_NAME, NEW.intent_id
				USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, COLUMN = 'intent_id';
		END IF;
	ELSIF NEW.intent_id IS NOT NULL AND NEW.run_id IS NOT NULL
		AND NOT EXISTS (SELECT FROM %I.intents i WHERE i.intent_id = NEW.intent_id AND i.run_id = NEW.run_id) THEN
		RAISE EXCEPTION 'insert into table "%%" violates its intent key: intent "%%" of run "%%" does not exist', TG_TABLE_NAME, NEW.intent_id, NEW.run_id
			USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, COLUMN = 'intent_id';
	END IF;
	RETURN NEW;
END
$$$f$, current_schema(), current_schema(), current_schema());
END
$do$;
DROP TRIGGER IF EXISTS checkpoints_key_checked ON checkpoints;
DROP TRIGGER IF EXISTS intents_key_checked ON intents;
DROP TRIGGER IF EXISTS inbox_key_checked ON inbox;
DROP TRIGGER IF EXISTS outbox_key_checked ON outbox;
DROP TRIGGER IF EXISTS receipts_key_checked ON receipts;
DROP TRIGGER IF EXISTS attempts_key_checked ON attempts;
CREATE TRIGGER checkpoints_key_checked BEFORE INSERT ON checkpoints FOR EACH ROW
	WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_keys_checked('run');
CREATE TRIGGER intents_key_checked BEFORE INSERT ON intents FOR EACH ROW
	WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_keys_checked('run');
CREATE TRIGGER inbox_key_checked BEFORE INSERT ON inbox FOR EACH ROW
	WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_keys_checked('run');
CREATE TRIGGER outbox_key_checked BEFORE INSERT ON outbox FOR EACH ROW
	WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_keys_checked('intent run');
CREATE TRIGGER receipts_key_checked BEFORE INSERT ON receipts FOR EACH ROW
	WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_keys_checked('intent run');
CREATE TRIGGER attempts_key_checked BEFORE INSERT ON attempts FOR EACH ROW
	WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_keys_checked('intent');
ALTER TABLE checkpoints DROP CONSTRAINT IF EXISTS checkpoints_run_id_fkey;
ALTER TABLE intents DROP CONSTRAINT IF EXISTS intents_run_id_fkey;
ALTER TABLE inbox DROP CONSTRAINT IF EXISTS inbox_run_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_intent_run_fkey;
ALTER TABLE receipts DROP CONSTRAINT IF EXISTS receipts_intent_run_fkey;
ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_intent_id_fkey;
ALTER TABLE intents DROP CONSTRAINT IF EXISTS intents_intent_run;
`},
	// A tick's events in one row, as its trace records since migration 5:
	// the events a commit appends cost one heap tuple and one index entry,
	// with their write-ahead log records, where they cost one each. The
	// row numbers its first and last event (seq, last_seq) and holds their
	// kinds and bodies in order, and their digests and chain hashes as
	// arrays of sums (an element NULL where the hash is kept as its text)
	// beside arrays of texts (NULL when every hash of the row is a sum;
	// else an element NULL where it is). Only the first event's previous
	// hash is stored, as a pair as before: each later event's is the
	// chain hash of the one before it, which is how the store writes
	// them. The key is the row's last position, so that the events after
	// a position are read from the first row ending past it. A row's
	// checks (contiguous positions, arrays as long as its events, without
	// NULL kinds or bodies, each hash as exactly one of sum and text,
	// sums of 32 bytes, the run existing) are made by a row trigger,
	// skipped under the fence as migration 18's. Its values are stored
	// as the trace rows are: uncompressed in the row up to a page.
	// Existing events become one-event rows with the same values; the
	// table is rebuilt, its rows may not be updated.
	{"events per tick", `
CREATE TABLE event_ticks (
	run_id       text NOT NULL,
	seq          flrh_position NOT NULL,
	last_seq     bigint NOT NULL,
	kinds        flrh_trace_kinds NOT NULL,
	bodies       flrh_trace_bodies NOT NULL,
	digest_sums  bytea[] NOT NULL,
	digests      text[],
	prev_sum     bytea,
	prev_hash    text,
	chain_sums   bytea[] NOT NULL,
	chain_hashes text[],
	generation   bigint NOT NULL,
	recorded_at  bigint NOT NULL,
	PRIMARY KEY (run_id, last_seq)
);
INSERT INTO event_ticks (run_id, seq, last_seq, kinds, bodies, digest_sums, digests, prev_sum, prev_hash, chain_sums, chain_hashes, generation, recorded_at)
SELECT run_id, seq, seq, ARRAY[kind], ARRAY[body], ARRAY[digest_sum::bytea], CASE WHEN digest IS NOT NULL THEN ARRAY[digest] END,
	prev_sum, prev_hash, ARRAY[chain_sum::bytea], CASE WHEN chain_hash IS NOT NULL THEN ARRAY[chain_hash] END, generation, recorded_at
FROM events ORDER BY run_id, seq;
DROP TABLE events;
DROP FUNCTION flrh_events_checked();
ALTER TABLE event_ticks RENAME TO events;
ALTER INDEX event_ticks_pkey RENAME TO events_pkey;
ALTER TABLE events ALTER COLUMN run_id SET STORAGE MAIN, ALTER COLUMN kinds SET STORAGE MAIN,
	ALTER COLUMN bodies SET STORAGE MAIN, ALTER COLUMN digest_sums SET STORAGE MAIN, ALTER COLUMN digests SET STORAGE MAIN,
	ALTER COLUMN prev_sum SET STORAGE MAIN, ALTER COLUMN prev_hash SET STORAGE MAIN,
	ALTER COLUMN chain_sums SET STORAGE MAIN, ALTER COLUMN chain_hashes SET STORAGE MAIN;
ALTER TABLE events SET (toast_tuple_target = 8160);
DO $$
BEGIN
	EXECUTE 'ALTER TABLE events ALTER COLUMN bodies SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
	NULL;
END
$$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
DO $do$
BEGIN
	EXECUTE format($f$
CREATE FUNCTION flrh_events_checked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	IF num_nulls(NEW.run_id, NEW.seq, NEW.last_seq, NEW.kinds, NEW.bodies, NEW.digest_sums, NEW.chain_sums, NEW.generation, NEW.recorded_at) > 0 THEN
		RETURN NEW; -- refused by the column's NOT NULL
	END IF;
	n := NEW.last_seq - NEW.seq + 1;
	IF NOT (n >= 1 AND cardinality(NEW.kinds) = n AND cardinality(NEW.bodies) = n
		AND array_ndims(NEW.digest_sums) = 1 AND array_lower(NEW.digest_sums, 1) = 1 AND cardinality(NEW.digest_sums) = n
		AND array_ndims(NEW.chain_sums) = 1 AND array_lower(NEW.chain_sums, 1) = 1 AND cardinality(NEW.chain_sums) = n
		AND array_lower(NEW.kinds, 1) = 1 AND array_lower(NEW.bodies, 1) = 1
		AND (NEW.digests IS NULL OR (array_ndims(NEW.digests) = 1 AND array_lower(NEW.digests, 1) = 1 AND cardinality(NEW.digests) = n))
		AND (NEW.chain_hashes IS NULL OR (array_ndims(NEW.chain_hashes) = 1 AND array_lower(NEW.chain_hashes, 1) = 1 AND cardinality(NEW.chain_hashes) = n))) THEN
		RAISE EXCEPTION 'new row for relation "events" violates check constraint "event_records"'
			USING ERRCODE = 'check_violation', TABLE = 'events', CONSTRAINT = 'event_records';
	END IF;
	IF (NEW.prev_sum IS NULL) = (NEW.prev_hash IS NULL) OR octet_length(NEW.prev_sum) <> 32
		OR EXISTS (SELECT FROM generate_series(1, n) i WHERE (NEW.digest_sums[i] IS NULL) = (NEW.digests[i] IS NULL)
			OR (NEW.chain_sums[i] IS NULL) = (NEW.chain_hashes[i] IS NULL)
			OR octet_length(NEW.digest_sums[i]) <> 32 OR octet_length(NEW.chain_sums[i]) <> 32) THEN
		RAISE EXCEPTION 'new row for relation "events" violates check constraint "event_hashes"'
			USING ERRCODE = 'check_violation', TABLE = 'events', CONSTRAINT = 'event_hashes';
	END IF;
	IF NOT EXISTS (SELECT FROM %I.runs r WHERE r.run_id = NEW.run_id) THEN
		RAISE EXCEPTION 'insert into table "events" violates its run key: run "%%" does not exist', NEW.run_id
			USING ERRCODE = 'foreign_key_violation', TABLE = 'events', COLUMN = 'run_id';
	END IF;
	RETURN NEW;
END
$$$f$, current_schema());
END
$do$;
CREATE TRIGGER events_checked BEFORE INSERT ON events FOR EACH ROW
	WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_events_checked();
`},
	// A run remembers the inbox entries its holder found nothing to take
	// in (Settle): those numbered up to settled_seq, in settled_state at
	// head settled_head. Ready and ClaimReady take a resting run for
	// pending entries after them only, while its head and state are
	// still those. Columns a schema already has (the migration tests
	// rebuild earlier versions' tables from runs this build wrote) are
	// kept as they are: every value they hold is one this build wrote.
	{"runs remember the inbox entries they found nothing to take in", `
ALTER TABLE runs ADD COLUMN IF NOT EXISTS settled_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS settled_head bigint NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS settled_state text NOT NULL DEFAULT '';
`},
	// A run's header records its due time (store.Run.DueAt, Unix
	// nanoseconds, 0 for none), when it next has something to do by the
	// clock alone, so that a resting run is claimed once its time budget
	// runs out instead of runners visiting every resting run now and
	// then. No index: every tick writes it, and an index on it would make
	// every header update a non-HOT one; the claim reads it in the scan
	// of live runs it makes anyway. A run written before cannot have it
	// computed here (it is in the checkpoint's budget ledger): every run
	// not ended is marked due at once (1 ns after the epoch), and the
	// first runner to pass it records what its checkpoint says
	// (store.DueSetter).
	{"runs record when they are next due by the clock", `
ALTER TABLE runs ADD COLUMN IF NOT EXISTS due_at bigint NOT NULL DEFAULT 0;
UPDATE runs SET due_at = 1 WHERE outcome = '';
`},
	// An ended run's record may be pruned (store.Pruner) once it is
	// archived: pruned records each pruning (append-only itself), and the
	// evidence tables' row triggers let a row be deleted only for a run
	// it names, so history is still never rewritten, and never removed
	// behind the store's back; UPDATE and TRUNCATE stay refused. An
	// intent is never deleted: a pruned run's intents are stripped to
	// their idempotency keys, each still bound to its content digest and
	// held by the keys' unique index, so that no later intent reuses one
	// (the one update its trigger lets through). The
	// header is never deleted (runs keeps its triggers): it holds the
	// run's id and head hash. The two indexes serve the deletion: a run's
	// grants by run, and the foreign key check that no intent names a
	// grant being deleted (partial: only an intent that consumed a grant
	// is in it, so a governed step without one writes nothing more).
	// Everything is created only where it is missing, or replaced: the
	// migration tests take a schema this build wrote back to an earlier
	// version by undoing that version's successor alone.
	{"ended runs' records may be pruned", `
CREATE TABLE IF NOT EXISTS pruned (
	run_id    text PRIMARY KEY REFERENCES runs(run_id),
	head_hash text NOT NULL,
	archive   text NOT NULL,
	events    bigint NOT NULL,
	intents   bigint NOT NULL,
	attempts  bigint NOT NULL,
	receipts  bigint NOT NULL,
	grants    bigint NOT NULL,
	inbox     bigint NOT NULL,
	trace     bigint NOT NULL,
	pruned_at bigint NOT NULL
);
DROP TRIGGER IF EXISTS pruned_append_only ON pruned;
DROP TRIGGER IF EXISTS pruned_no_truncate ON pruned;
CREATE TRIGGER pruned_append_only BEFORE UPDATE OR DELETE ON pruned FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER pruned_no_truncate BEFORE TRUNCATE ON pruned FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
CREATE INDEX IF NOT EXISTS approvals_by_run ON approvals (run_id);
CREATE INDEX IF NOT EXISTS intents_by_approval ON intents (approval_id) WHERE approval_id IS NOT NULL;
DO $do$
BEGIN
	EXECUTE format($f$
CREATE OR REPLACE FUNCTION flrh_deleted_if_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT FROM %I.pruned p WHERE p.run_id = OLD.run_id) THEN
		RETURN OLD;
	END IF;
	RAISE EXCEPTION '%% is append-only', TG_TABLE_NAME USING ERRCODE = 'FL001';
END
$$$f$, current_schema());
	EXECUTE format($f$
CREATE OR REPLACE FUNCTION flrh_intent_stripped_if_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT FROM %I.pruned p WHERE p.run_id = OLD.run_id)
		AND (NEW.intent_id, NEW.run_id, NEW.seq, NEW.commit_order, NEW.effect_type, NEW.idempotency_key, NEW.content_digest, NEW.generation, NEW.recorded_at)
			IS NOT DISTINCT FROM (OLD.intent_id, OLD.run_id, OLD.seq, OLD.commit_order, OLD.effect_type, OLD.idempotency_key, OLD.content_digest, OLD.generation, OLD.recorded_at)
		AND NEW.approval_id IS NULL AND NEW.body = ''::bytea AND NEW.digest = '' THEN
		RETURN NEW;
	END IF;
	RAISE EXCEPTION '%% is append-only', TG_TABLE_NAME USING ERRCODE = 'FL001';
END
$$$f$, current_schema());
END
$do$;
DROP TRIGGER IF EXISTS events_append_only ON events;
DROP TRIGGER IF EXISTS events_deleted_if_pruned ON events;
DROP TRIGGER IF EXISTS receipts_append_only ON receipts;
DROP TRIGGER IF EXISTS receipts_deleted_if_pruned ON receipts;
DROP TRIGGER IF EXISTS intents_append_only ON intents;
DROP TRIGGER IF EXISTS intents_stripped_if_pruned ON intents;
DROP TRIGGER IF EXISTS trace_append_only ON trace;
DROP TRIGGER IF EXISTS trace_deleted_if_pruned ON trace;
CREATE TRIGGER events_append_only BEFORE UPDATE ON events FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER receipts_append_only BEFORE UPDATE ON receipts FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER intents_append_only BEFORE DELETE ON intents FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER trace_append_only BEFORE UPDATE ON trace FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER events_deleted_if_pruned BEFORE DELETE ON events FOR EACH ROW EXECUTE FUNCTION flrh_deleted_if_pruned();
CREATE TRIGGER receipts_deleted_if_pruned BEFORE DELETE ON receipts FOR EACH ROW EXECUTE FUNCTION flrh_deleted_if_pruned();
CREATE TRIGGER intents_stripped_if_pruned BEFORE UPDATE ON intents FOR EACH ROW EXECUTE FUNCTION flrh_intent_stripped_if_pruned();
CREATE TRIGGER trace_deleted_if_pruned BEFORE DELETE ON trace FOR EACH ROW EXECUTE FUNCTION flrh_deleted_if_pruned();
`},
	// 24: the lease one process of several sharing the database holds on
	// a named piece of upkeep (store.Duties), such as scheduled pruning;
	// and a pruning records how many of the run's effects it took with
	// their outbox not done (store.Pruning.Open: effects a person
	// abandoned).
	{"duties: one process at a time holds a named piece of upkeep; prunings count the effects taken open", `
ALTER TABLE pruned ADD COLUMN IF NOT EXISTS open_effects bigint NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS duties (
	name       text PRIMARY KEY,
	holder     text NOT NULL,
	generation bigint NOT NULL,
	expires_at bigint NOT NULL
);
`},
	// 25: a run's checkpoints and trace rows may be sealed again under
	// the store's primary key (store.Resealer): while resealing names the
	// run, inside the one transaction that reseals it, a checkpoint's body
	// or a trace row's bodies (as many as before) may change and nothing
	// else of the row. Outside it they stay append-only.
	{"checkpoints and trace records may be sealed again under the primary key", `
CREATE TABLE IF NOT EXISTS resealing (
	run_id     text PRIMARY KEY REFERENCES runs(run_id),
	started_at bigint NOT NULL
);
DO $do$
BEGIN
	EXECUTE format($f$
CREATE OR REPLACE FUNCTION flrh_trace_resealed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT FROM %I.resealing r WHERE r.run_id = OLD.run_id)
		AND (NEW.run_id, NEW.seq, NEW.last_seq, NEW.kinds, NEW.recorded_at)
			IS NOT DISTINCT FROM (OLD.run_id, OLD.seq, OLD.last_seq, OLD.kinds, OLD.recorded_at)
		AND cardinality(NEW.bodies) = cardinality(OLD.bodies) AND array_position(NEW.bodies, NULL) IS NULL THEN
		RETURN NEW;
	END IF;
	RAISE EXCEPTION '%% is append-only', TG_TABLE_NAME USING ERRCODE = 'FL001';
END
$$$f$, current_schema());
	EXECUTE format($f$
CREATE OR REPLACE FUNCTION flrh_checkpoint_resealed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT FROM %I.resealing r WHERE r.run_id = OLD.run_id)
		AND (NEW.run_id, NEW.n, NEW.seq, NEW.format_version, NEW.build_digest, NEW.digest, NEW.generation, NEW.recorded_at)
			IS NOT DISTINCT FROM (OLD.run_id, OLD.n, OLD.seq, OLD.format_version, OLD.build_digest, OLD.digest, OLD.generation, OLD.recorded_at) THEN
		RETURN NEW;
	END IF;
	RAISE EXCEPTION '%% is append-only', TG_TABLE_NAME USING ERRCODE = 'FL001';
END
$$$f$, current_schema());
END
$do$;
DROP TRIGGER IF EXISTS trace_append_only ON trace;
DROP TRIGGER IF EXISTS checkpoints_append_only ON checkpoints;
DROP TRIGGER IF EXISTS trace_resealed_only ON trace;
DROP TRIGGER IF EXISTS checkpoints_resealed_only ON checkpoints;
CREATE TRIGGER trace_resealed_only BEFORE UPDATE ON trace FOR EACH ROW EXECUTE FUNCTION flrh_trace_resealed();
CREATE TRIGGER checkpoints_resealed_only BEFORE UPDATE ON checkpoints FOR EACH ROW EXECUTE FUNCTION flrh_checkpoint_resealed();
`},
	// 26: notices (store.Noticeboard): messages for people outside, each
	// written with the tick that caused it and deleted once delivered.
	// No reference to runs: a run may be pruned before its notice is
	// delivered. Claimed oldest due first (notices_due), by several
	// processes at once (SKIP LOCKED).
	{"notices: messages for people outside, written with the tick that caused them", `
CREATE TABLE IF NOT EXISTS notices (
	ord        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	notice_id  text NOT NULL UNIQUE,
	run_id     text NOT NULL,
	seq        bigint NOT NULL,
	kind       text NOT NULL,
	body       bytea NOT NULL,
	created_at bigint NOT NULL,
	attempts   integer NOT NULL DEFAULT 0,
	next_at    bigint NOT NULL,
	holder     text NOT NULL DEFAULT '',
	held_until bigint NOT NULL DEFAULT 0,
	last_error text NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS notices_due ON notices (next_at, ord);
`},
	// 27: shared limits (store.SharedLimits): the slots of a limit on
	// requests open at once, made once for each slot and then held by one
	// request at a time until it is given back or its hold passes
	// (taken with SKIP LOCKED, so that racing takers pass one another),
	// and the theoretical arrival time of a limit on requests a second.
	{"shared limits: requests open at once and started a second, for every process", `
CREATE TABLE IF NOT EXISTS limit_slots (
	name       text NOT NULL,
	slot       integer NOT NULL,
	holder     text NOT NULL DEFAULT '',
	held_until bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (name, slot)
);
CREATE TABLE IF NOT EXISTS limit_rates (
	name    text PRIMARY KEY,
	arrival bigint NOT NULL
);
`},
	// 28: the queue of a shared limit's slots: who waits for one, since
	// when, and until when its place is kept without its asking again.
	{"shared limits: the queue for a limit's slots, longest waiting first", `
CREATE TABLE IF NOT EXISTS limit_queue (
	name       text NOT NULL,
	holder     text NOT NULL,
	since      bigint NOT NULL,
	seen_until bigint NOT NULL,
	PRIMARY KEY (name, holder)
);
`},
	// 29: the routes a notice was delivered to before its last failed
	// attempt (comma-separated names), so that a notifier of several
	// routes sends it again only to the others.
	{"notices: the routes that took a notice", `
ALTER TABLE notices ADD COLUMN IF NOT EXISTS sent text NOT NULL DEFAULT '';
`},
	// 30: how long each route still to take a notice waits past the
	// notice's due time (store.JoinWaits), so that a route that asked to
	// wait long does not hold back one that may be tried again soon.
	{"notices: each route's wait", `
ALTER TABLE notices ADD COLUMN IF NOT EXISTS waits text NOT NULL DEFAULT '';
`},
	// 31: the bound each request holding or waiting for a shared limit's
	// slot declared, and the rate a limit was last booked under and until
	// when it binds, so that the strictest a process declares holds for
	// all (store.SlotBound, store.RateBound).
	{"shared limits: the strictest bound declared holds", `
ALTER TABLE limit_slots ADD COLUMN IF NOT EXISTS bound integer NOT NULL DEFAULT 0;
ALTER TABLE limit_queue ADD COLUMN IF NOT EXISTS bound integer NOT NULL DEFAULT 0;
ALTER TABLE limit_rates ADD COLUMN IF NOT EXISTS per_second integer NOT NULL DEFAULT 0;
ALTER TABLE limit_rates ADD COLUMN IF NOT EXISTS bound_until bigint NOT NULL DEFAULT 0;
`},
	// 32: webhook deliveries whose signature held but which could not be
	// taken, kept for an operator to take again or drop
	// (store.DeliveryParking).
	{"parked webhook deliveries", `
CREATE TABLE IF NOT EXISTS parked_deliveries (
	key text PRIMARY KEY,
	hook text NOT NULL,
	event text NOT NULL,
	body bytea NOT NULL,
	status integer NOT NULL,
	reason text NOT NULL,
	first_at bigint NOT NULL,
	last_at bigint NOT NULL,
	times integer NOT NULL
);
CREATE INDEX IF NOT EXISTS parked_deliveries_by_hook ON parked_deliveries (hook, last_at DESC, key DESC);
`},
	// 33: the schedules an operator paused (store.SchedulePausing).
	{"paused schedules", `
CREATE TABLE IF NOT EXISTS paused_schedules (
	name text PRIMARY KEY,
	paused_by text NOT NULL,
	reason text NOT NULL,
	since bigint NOT NULL
);
`},
	// 34: where people who started or fed a run from a chat are told
	// what becomes of it (store.FollowUps); no foreign key, as in SQLite.
	{"follow-ups of chat commands", `
CREATE TABLE IF NOT EXISTS follow_ups (
	run_id text NOT NULL,
	name text NOT NULL,
	scheme text NOT NULL,
	address bytea NOT NULL,
	added_at bigint NOT NULL,
	expires_at bigint NOT NULL,
	PRIMARY KEY (run_id, name)
);
CREATE INDEX IF NOT EXISTS follow_ups_by_expiry ON follow_ups (expires_at);
`},
	// 35: a schedule's pause may end by itself (store.PausedSchedule's
	// Until; 0 pauses until resumed).
	{"schedules paused until a time", `
ALTER TABLE paused_schedules ADD COLUMN IF NOT EXISTS until_at bigint NOT NULL DEFAULT 0;
`},
	// 36: a schedule's pause may be set ahead (store.PausedSchedule's
	// From; 0 holds from when it was paused).
	{"schedules paused from a later time", `
ALTER TABLE paused_schedules ADD COLUMN IF NOT EXISTS from_at bigint NOT NULL DEFAULT 0;
`},
	// 37: each schedule's latest run (store.ScheduleHeads).
	{"schedules' latest runs", `
CREATE TABLE IF NOT EXISTS schedule_heads (
	name text PRIMARY KEY,
	run_id text NOT NULL,
	due_at bigint NOT NULL
);
`},
	// 38: a run's labels (store.Run.Labels): on its header, as JSON ('' for
	// none), and a row each in run_labels, the index a filtered listing
	// finds them by in creation order.
	{"runs' labels", `
ALTER TABLE runs ADD COLUMN IF NOT EXISTS labels text NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS run_labels (
	key text NOT NULL,
	value text NOT NULL,
	created_order bigint NOT NULL REFERENCES runs (created_order),
	PRIMARY KEY (key, value, created_order)
);
`},
}

// unfenced is true when the transaction has not passed the one-round-trip
// fence: tickAt unset, or empty (what a setting made in an ended
// transaction reads as).
const unfenced = `coalesce(current_setting('` + tickAt + `', true), '') = ''`

// eventsChecked is the statement that creates (create: "CREATE FUNCTION")
// or replaces the events' statement trigger function in the current
// schema: the hashes' check, then runCheck, which sets missing to an
// inserted row's run_id that runs does not hold (%I is the schema), then
// the error for it. Migrations 12 and 15 differ only in runCheck.
func eventsChecked(create, runCheck string) string {
	return `
DO $do$
BEGIN
	EXECUTE format($f$
` + create + ` flrh_events_checked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	missing text;
BEGIN
	IF EXISTS (SELECT FROM new_rows n WHERE (n.digest_sum IS NULL) = (n.digest IS NULL)
		OR (n.prev_sum IS NULL) = (n.prev_hash IS NULL) OR (n.chain_sum IS NULL) = (n.chain_hash IS NULL)) THEN
		RAISE EXCEPTION 'new row for relation "events" violates check constraint "event_hashes"'
			USING ERRCODE = 'check_violation', TABLE = 'events', CONSTRAINT = 'event_hashes';
	END IF;` + runCheck + `
	IF FOUND THEN
		RAISE EXCEPTION 'insert into table "events" violates its run key: run "%%" does not exist', missing
			USING ERRCODE = 'foreign_key_violation', TABLE = 'events', COLUMN = 'run_id';
	END IF;
	RETURN NULL;
END
$$$f$, current_schema());
END
$do$;`
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = int64(len(migrations))
