-- What migration 20 replaced, put back on a schema this build migrated:
-- the events table with a row per event (each event's previous hash its
-- own pair), its statement trigger checking the hash pairs and the runs
-- as migration 15 left it (under migration 18's condition); the
-- migrations after 19 forgotten. Every event a row holds becomes its own
-- row. The migration tests take a schema back to version 19 with it.
CREATE TABLE events_v19 (
	run_id      text NOT NULL,
	seq         flrh_position NOT NULL,
	kind        text NOT NULL,
	body        bytea NOT NULL,
	digest_sum  flrh_sum,
	digest      text,
	prev_sum    flrh_sum,
	prev_hash   text,
	chain_sum   flrh_sum,
	chain_hash  text,
	generation  bigint NOT NULL,
	recorded_at bigint NOT NULL,
	PRIMARY KEY (run_id, seq)
);
INSERT INTO events_v19 (run_id, seq, kind, body, digest_sum, digest, prev_sum, prev_hash, chain_sum, chain_hash, generation, recorded_at)
SELECT e.run_id, e.seq + i - 1, e.kinds[i], e.bodies[i], e.digest_sums[i], e.digests[i],
	CASE WHEN i = 1 THEN e.prev_sum ELSE e.chain_sums[i - 1] END, CASE WHEN i = 1 THEN e.prev_hash ELSE e.chain_hashes[i - 1] END,
	e.chain_sums[i], e.chain_hashes[i], e.generation, e.recorded_at
FROM events e CROSS JOIN LATERAL generate_series(1, cardinality(e.kinds)) AS i ORDER BY 1, 2;
DROP TABLE events;
DROP FUNCTION flrh_events_checked();
ALTER TABLE events_v19 RENAME TO events;
ALTER INDEX events_v19_pkey RENAME TO events_pkey;
DO $$
BEGIN
	EXECUTE 'ALTER TABLE events ALTER COLUMN body SET COMPRESSION lz4';
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
	missing text;
BEGIN
	IF EXISTS (SELECT FROM new_rows n WHERE (n.digest_sum IS NULL) = (n.digest IS NULL)
		OR (n.prev_sum IS NULL) = (n.prev_hash IS NULL) OR (n.chain_sum IS NULL) = (n.chain_hash IS NULL)) THEN
		RAISE EXCEPTION 'new row for relation "events" violates check constraint "event_hashes"'
			USING ERRCODE = 'check_violation', TABLE = 'events', CONSTRAINT = 'event_hashes';
	END IF;
	SELECT n.run_id INTO missing FROM (SELECT DISTINCT run_id FROM new_rows OFFSET 0) n
	WHERE NOT EXISTS (SELECT FROM %I.runs r WHERE r.run_id = n.run_id OFFSET 0) LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'insert into table "events" violates its run key: run "%%" does not exist', missing
			USING ERRCODE = 'foreign_key_violation', TABLE = 'events', COLUMN = 'run_id';
	END IF;
	RETURN NULL;
END
$$$f$, current_schema());
END
$do$;
CREATE TRIGGER events_checked AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT WHEN (flrh_unfenced()) EXECUTE FUNCTION flrh_events_checked();
DELETE FROM schema_migrations WHERE version > 19;
