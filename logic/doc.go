// Package logic is flrh's Datalog engine: a Soufflé-compatible language with
// explicit negation, four-valued truth states, stratified semi-naive
// evaluation, provenance and incremental maintenance.
//
// # Language
//
// Programs are written in the Soufflé subset most programs use:
//
//	.type Node <: symbol
//	.decl edge(x: Node, y: Node)
//	.decl path(x: Node, y: Node)
//	.input edge
//	.output path
//	path(x, y) :- edge(x, y).
//	path(x, z) :- path(x, y), edge(y, z).
//
// with `.decl` (attributes typed `symbol` or `number`, or a `.type` alias of
// one), `.input`, `.output`, inline facts, variables and `_`, aggregates
// (`n = count : e(x, _)`, `sum y : {…}`, `min`, `max`; see [Aggregation]
// for what a proof says of them), `!` default
// negation, comparisons `< <= > >= = !=`, integer arithmetic `+ - * / %` with
// C semantics (truncating division; division by zero is a typed evaluation
// error), `//` and `/* */` comments. On top of Soufflé it has explicit
// negation: a signed literal such as `-blocked(x)` in a head derives negative
// evidence, and in a body it matches negative evidence.
//
// # Truth states
//
// Every atom has positive and negative support, kept apart. Together they
// give one of four states (see [TruthState]): NEITHER, TRUE_ONLY, FALSE_ONLY,
// BOTH. BOTH is a conflict; it is reported with the supports of both sides
// and never resolved by rule order. Default negation `!p(x)` succeeds when p(x)
// has no positive support (NEITHER or FALSE_ONLY) once p's stratum is
// complete; a cycle through default negation is rejected with
// OUTSIDE_V0_NEGATIVE_RECURSION. Explicit negation is monotone and may recurse.
//
// # API
//
//	prog, err := logic.Parse("paths.dl", src)   // syntax only
//	comp, err := logic.Check(prog)               // names, arity, types, safety, strata
//	comp, err := logic.Load("paths.dl", src)     // both
//	m, err := logic.Evaluate(comp, facts, logic.Limits{MaxTuples: 1e8})
//	m.State(logic.Fact{Rel: "path", Args: []logic.Value{logic.Sym("a"), logic.Sym("c")}})
//	m.Tuples("path", false)  // one side of a relation, in value order
//	m.Supports(fact)         // base support and every rule instantiation that holds
//	m.Explain(fact)          // a minimal, well-founded proof tree
//	m.Why(atom)              // state plus one proof per side (two for BOTH)
//	m.Conflicts()            // every BOTH atom with both sides' supports
//	m2, err := m.Apply(changes) // incremental update; m is consumed
//
// [Solve] is the pure per-tick waist: named base supports with +1/-1 deltas
// in the vocabulary of the reference M2 contract, a logical time, and the
// next materialization, net fact changes and conflicts in return.
// [ReadFacts] and [Materialization.WriteFacts] speak Soufflé's
// tab-separated fact files; [EvaluateFiles] evaluates a program over such
// files read straight into its relations, as Evaluate over ReadFacts would.
//
// A [Compiled] program is immutable and may be shared. Queries on a
// [Materialization] are read-only; [Materialization.Apply] and [Solve]
// consume the materialization they update (see docs/logic.md).
//
// All errors are *[Error] values with a [Code] and, for program errors, a
// file:line:column position. Evaluation is deterministic: output order,
// error precedence and proofs do not depend on map iteration, rule order or
// scheduling. The package reads no clock, randomness, environment or files.
package logic
