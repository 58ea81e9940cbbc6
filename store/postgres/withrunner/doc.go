// Package withrunner holds the tests and benchmarks that drive the runner
// on the PostgreSQL store: several runners sharing one database, a
// campaign that restarts the server under them, and a whole refund run per
// benchmark operation on both backends. They live apart from the store's
// own tests so that the store's conformance never depends on the runner
// building.
package withrunner
