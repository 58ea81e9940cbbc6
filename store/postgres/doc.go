// Package postgres is flrh's store for many runners on many machines: one
// PostgreSQL database (or a Postgres-compatible distributed one) shared by
// every runner process, each run owned by exactly one fenced writer at a
// time.
//
// It keeps the promises of [store.Store] exactly as store/sqlite does, and
// passes the same conformance suite. Where SQLite serializes writers with
// one database-wide lock, this store serializes a run's writers on the
// run's header row: every write transaction runs at REPEATABLE READ and
// begins by locking that row (SELECT … FOR NO KEY UPDATE), then reads the
// clock — the database's clock_timestamp(), so runners on machines with
// skewed clocks agree on lease expiry — and checks the fence. Writes to
// different runs proceed in parallel.
//
// A write transaction is two round trips, however much it writes: BEGIN,
// the lock and every read it decides on travel in one pipeline, its writes
// and COMMIT in the next. A write whose row count the decision relies on
// is guarded in SQL, so that finding other rows fails the transaction
// rather than committing it. A tick that follows the store's own last
// commit of the run under the same lease is one round trip: what it would
// read first is known or checked by the guards, and a tick whose
// one-round-trip attempt the server refuses goes the two-round-trip way.
// That one round trip carries neither BEGIN nor COMMIT: its statements up
// to the Sync are one implicit transaction at READ COMMITTED, its fence
// checking the lease and head on the row it locks.
// A submission and each lease operation is one statement in one round
// trip, which writes only where the check holds; the store explains a
// refusal from the row it read. Beginning an attempt is one round trip too,
// its checks made by the statement that writes; a refused one goes the
// two-round-trip way, which explains it.
//
// A transaction that loses a serialization race or a deadlock has written
// nothing and is run again from the start, a bounded number of times; it
// then sees the winner's commit and fails with the precise code (say
// store.CodeHeadMismatch). A lost connection, a full disk or any other
// failure is reported as store.CodeUnavailable and never retried: if the
// connection dropped during COMMIT, whether the tick landed is unknown to
// the store, and the runner finds out by reading the run's head.
//
// No advisory locks are used anywhere (migrations included), so the store
// runs unchanged on databases that lack them.
//
// Beyond store.Store, [Store] implements [Claimer] (batch claiming of ready
// runs with SKIP LOCKED) and offers a [Watcher] (LISTEN/NOTIFY with a
// polling fallback) so that runners distribute work without a coordinator.
package postgres
