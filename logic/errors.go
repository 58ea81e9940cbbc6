package logic

import (
	"fmt"
	"strings"
)

// Code classifies an [Error]. Codes are stable strings: callers and tests
// branch on them, and evaluation-budget codes match the reference
// logic-semantics vocabulary.
type Code string

// Program errors (found by Parse and Check).
const (
	SyntaxError        Code = "SYNTAX_ERROR"
	UndeclaredRelation Code = "UNDECLARED_RELATION"
	DuplicateDecl      Code = "DUPLICATE_DECLARATION"
	UnknownType        Code = "UNKNOWN_TYPE"
	ArityMismatch      Code = "ARITY_MISMATCH"
	TypeMismatch       Code = "TYPE_MISMATCH"
	UnsafeVariable     Code = "UNSAFE_VARIABLE"
	UnsupportedFeature Code = "UNSUPPORTED_FEATURE"
	NegativeRecursion  Code = "OUTSIDE_V0_NEGATIVE_RECURSION"
	// RecursiveAggregate: an aggregate reads a relation of its own rule's
	// recursive cycle (aggregates, like negation, must be stratified).
	RecursiveAggregate  Code = "RECURSIVE_AGGREGATE"
	MalformedFact       Code = "MALFORMED_FACT"
	DivisionByZero      Code = "DIVISION_BY_ZERO"
	ArithmeticOverflow  Code = "ARITHMETIC_OVERFLOW"
	RuleBudgetExhausted Code = "RULE_BUDGET_EXHAUSTED"
	DepthExceeded       Code = "DERIVATION_DEPTH_EXCEEDED"
	TupleBudgetExceeded Code = "TUPLE_BUDGET_EXHAUSTED"
	InputBudgetExceeded Code = "INPUT_BUDGET_EXHAUSTED"
	// MemoryBudgetExceeded: the relations' storage passed Limits.MaxBytes.
	MemoryBudgetExceeded Code = "MEMORY_BUDGET_EXHAUSTED"
	UnknownFact          Code = "UNKNOWN_FACT"
	Consumed             Code = "MATERIALIZATION_CONSUMED"
)

// Warning codes (see [Compiled.Warnings]).
const (
	VariableOccursOnce  Code = "VARIABLE_OCCURS_ONCE"
	RelationAlwaysEmpty Code = "RELATION_ALWAYS_EMPTY"
)

// Support-ledger conflicts, named as in the reference M2 contract.
const (
	AmbiguousBatchDelta  Code = "AMBIGUOUS_BATCH_DELTA"
	UnknownDerivation    Code = "UNKNOWN_DERIVATION"
	IdentityConflict     Code = "DERIVATION_IDENTITY_CONFLICT"
	DerivedSupportTarget Code = "DERIVED_SUPPORT_TARGET"
	LogicalTimeRegress   Code = "LOGICAL_TIME_REGRESSION"
	ProgramMismatch      Code = "RULE_BUNDLE_MISMATCH"
	MalformedDelta       Code = "MALFORMED_FACT_DELTA_INPUT"
)

// Pos is a position in a source file. Line and Col count from 1; Col counts
// bytes. The zero Pos means "no position".
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	var buf [64]byte
	return string(p.appendText(buf[:0]))
}

// Error is every error this package returns. Pos is set for errors that
// belong to a place in a program or fact file; Cycle lists the relations of
// a rejected negative cycle in order, the first repeated at the end.
type Error struct {
	Code  Code
	Pos   Pos
	Msg   string
	Cycle []string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Pos.File != "" || e.Pos.Line != 0 {
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	b.WriteString(" [")
	b.WriteString(string(e.Code))
	b.WriteString("]")
	return b.String()
}

func errorf(code Code, pos Pos, format string, args ...any) *Error {
	return &Error{Code: code, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}
