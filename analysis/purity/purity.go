// Package purity is a go/analysis pass that keeps flrh's pure packages pure.
//
// flrh promises byte-exact replay: the same accepted events must reproduce
// every digest. That holds only if the packages that compute (F, L, R, H,
// the control FSM, MRP, AIF) read nothing but their arguments. This pass
// rejects, in non-test files of the packages it is told are pure:
//
//   - imports that reach the world: os, os/exec, os/signal, syscall, net
//     (but not the pure parsers net/url and net/netip), runtime, plugin,
//     io/ioutil, log, log/slog, math/rand, math/rand/v2, crypto/rand,
//     hash/maphash, and any flrh package that is not itself pure;
//   - clock reads and timers: time.Now, time.Since, time.Until, time.Sleep,
//     time.After, time.AfterFunc, time.Tick, time.NewTimer, time.NewTicker,
//     time.LoadLocation (the time package's types and arithmetic are fine);
//   - filesystem walks in path/filepath (Abs, EvalSymlinks, Glob, Walk,
//     WalkDir) and printing to the process's stdout (fmt.Print*, fmt.Scan*);
//   - go statements and select statements;
//   - ranging over a map, unless the loop is visibly order-free: its body only
//     writes map entries, deletes them, or appends to slices that the function
//     sorts afterwards; or the loop carries a //flrh:orderfree comment saying
//     why order cannot reach the output.
package purity

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// Module is the import path prefix of flrh's own packages.
const Module = "flrh.dev/flrh"

// Packages lists flrh's pure packages, relative to Module. A package below
// one of them (say logic/ground below logic) is pure too.
var Packages = []string{
	"cjson", "jsonread", "protocol", "kernel", "control", "logic", "seam", "frontier",
	"authority", "mrp", "aif", "tripwire", "workflow", "panel", "effect/httpwire", "schemaerr", "redact", "yamljson", "policytest", "idtoken", "webhook", "cron", "jsontemplate", "ratelimit", "label",
}

// Analyzer reports impure constructs in pure packages.
var Analyzer = &analysis.Analyzer{
	Name:     "purity",
	Doc:      "reports clock, randomness, environment, filesystem, network, goroutine and map-order use in pure packages",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

var pureFlag string

func init() {
	Analyzer.Flags.StringVar(&pureFlag, "pure", "", "comma-separated import paths treated as pure (default: flrh's pure packages)")
}

func purePaths() []string {
	if pureFlag != "" {
		return strings.Split(pureFlag, ",")
	}
	out := make([]string, len(Packages))
	for i, p := range Packages {
		out[i] = Module + "/" + p
	}
	return out
}

// IsPure reports whether the import path names a pure package (or one below it).
func IsPure(path string) bool {
	for _, p := range purePaths() {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// vouched lists the packages of Module, relative to it, that a pure
// package may import though they are not pure packages themselves, each
// with what it does: nothing that reads a clock, randomness, the
// environment or I/O, or starts a goroutine, but something a pure package
// must not write itself. Any other package of Module a pure package
// imports must be pure.
var vouched = map[string]string{
	// unsafe.String over bytes their owner promised never to change
	// (workflow.Result.State, decision 1725): no copy for a cache key.
	"internal/unchanged": "views bytes nobody changes as a string",
}

var forbiddenImports = map[string]string{
	"os":              "the process environment and filesystem",
	"os/exec":         "other processes",
	"os/signal":       "signals",
	"os/user":         "the user database",
	"syscall":         "system calls",
	"runtime":         "the scheduler and machine",
	"plugin":          "code loaded at run time",
	"io/ioutil":       "the filesystem",
	"log":             "process output",
	"log/slog":        "process output",
	"math/rand":       "randomness",
	"math/rand/v2":    "randomness",
	"crypto/rand":     "randomness",
	"hash/maphash":    "per-process random seeds",
	"net":             "the network",
	"net/http":        "the network",
	"net/rpc":         "the network",
	"net/smtp":        "the network",
	"net/mail":        "the network",
	"database/sql":    "a database",
	"unsafe":          "memory outside the type system",
	"time/tzdata":     "timezone data",
	"crypto/tls":      "the network",
	"crypto/x509":     "system roots",
	"debug/buildinfo": "the binary on disk",
}

var forbiddenCalls = map[string]map[string]string{
	"time": {
		"Now": "reads the clock", "Since": "reads the clock", "Until": "reads the clock",
		"Sleep": "waits on the clock", "After": "waits on the clock", "AfterFunc": "starts a timer",
		"Tick": "starts a ticker", "NewTimer": "starts a timer", "NewTicker": "starts a ticker",
		"LoadLocation": "reads timezone files",
	},
	"path/filepath": {
		"Abs": "reads the working directory", "EvalSymlinks": "reads the filesystem",
		"Glob": "reads the filesystem", "Walk": "reads the filesystem", "WalkDir": "reads the filesystem",
	},
	"fmt": {
		"Print": "writes to stdout", "Println": "writes to stdout", "Printf": "writes to stdout",
		"Scan": "reads stdin", "Scanln": "reads stdin", "Scanf": "reads stdin",
	},
}

func run(pass *analysis.Pass) (any, error) {
	if !IsPure(pass.Pkg.Path()) {
		return nil, nil
	}
	for _, f := range pass.Files {
		if isTestFile(pass, f) {
			continue
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if why, bad := forbiddenImports[path]; bad {
				pass.Reportf(imp.Pos(), "pure package imports %s, which reaches %s", path, why)
			} else if strings.HasPrefix(path, "net/") && path != "net/url" && path != "net/netip" {
				pass.Reportf(imp.Pos(), "pure package imports %s, which reaches the network", path)
			} else if _, ok := vouched[strings.TrimPrefix(path, Module+"/")]; ok {
				// Named below with what it does and why a pure package may.
			} else if strings.HasPrefix(path, Module+"/") && !IsPure(path) {
				pass.Reportf(imp.Pos(), "pure package imports %s, which is not a pure package", path)
			}
		}
	}
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	filter := []ast.Node{(*ast.GoStmt)(nil), (*ast.SelectStmt)(nil), (*ast.CallExpr)(nil), (*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)}
	ins.Preorder(filter, func(n ast.Node) {
		if isTestPos(pass, n) {
			return
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			pass.Reportf(n.Pos(), "pure package starts a goroutine")
		case *ast.SelectStmt:
			pass.Reportf(n.Pos(), "pure package selects on channels")
		case *ast.CallExpr:
			checkCall(pass, n)
		case *ast.FuncDecl:
			if n.Body != nil {
				checkMapRanges(pass, n.Body)
			}
		case *ast.FuncLit:
			checkMapRanges(pass, n.Body)
		}
	})
	return nil, nil
}

// isTestFile reports files that are not part of the package's production
// code: tests, and files the go tool generates (a test main lives in the
// build cache under a name without a .go suffix).
func isTestFile(pass *analysis.Pass, f *ast.File) bool {
	return notProduction(pass.Fset.Position(f.Pos()).Filename)
}

func isTestPos(pass *analysis.Pass, n ast.Node) bool {
	return notProduction(pass.Fset.Position(n.Pos()).Filename)
}

func notProduction(name string) bool {
	return strings.HasSuffix(name, "_test.go") || !strings.HasSuffix(name, ".go")
}

func checkCall(pass *analysis.Pass, call *ast.CallExpr) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	fn, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		return // methods (t.Add, d.Seconds) are arithmetic on values we were given
	}
	if why, bad := forbiddenCalls[fn.Pkg().Path()][fn.Name()]; bad {
		pass.Reportf(call.Pos(), "pure package calls %s.%s, which %s", fn.Pkg().Path(), fn.Name(), why)
	}
}

// checkMapRanges reports range-over-map loops in body whose iteration order
// could reach the function's output. Nested function literals are checked
// on their own visit.
func checkMapRanges(pass *analysis.Pass, body *ast.BlockStmt) {
	sorted := sortedSlices(pass, body)
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		rs, ok := n.(*ast.RangeStmt)
		if !ok {
			return true
		}
		t := pass.TypesInfo.TypeOf(rs.X)
		if t == nil {
			return true
		}
		if _, isMap := t.Underlying().(*types.Map); !isMap {
			return true
		}
		if hasOrderFreeComment(pass, rs) || orderFreeBody(pass, rs.Body, sorted) {
			return true
		}
		pass.Reportf(rs.Pos(), "range over a map in a pure package: iteration order may reach the output; sort the keys first, or mark the loop //flrh:orderfree with the reason")
		return true
	})
}

func hasOrderFreeComment(pass *analysis.Pass, rs *ast.RangeStmt) bool {
	pos := pass.Fset.Position(rs.Pos())
	for _, f := range pass.Files {
		if pass.Fset.Position(f.Pos()).Filename != pos.Filename {
			continue
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				cp := pass.Fset.Position(c.Pos())
				if strings.HasPrefix(c.Text, "//flrh:orderfree") && (cp.Line == pos.Line || cp.Line == pos.Line-1) {
					return true
				}
			}
		}
	}
	return false
}

// sortedSlices collects the objects of slice variables that the function
// passes as the first argument to a sort.* or slices.Sort* call.
func sortedSlices(pass *analysis.Pass, body *ast.BlockStmt) map[types.Object]bool {
	out := map[types.Object]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		fn, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Func)
		if !ok || fn.Pkg() == nil {
			return true
		}
		p, name := fn.Pkg().Path(), fn.Name()
		if p == "sort" || (p == "slices" && strings.HasPrefix(name, "Sort")) {
			arg := call.Args[0]
			if conv, ok := arg.(*ast.CallExpr); ok && len(conv.Args) == 1 { // sort.Sort(byX(s))
				arg = conv.Args[0]
			}
			if id, ok := arg.(*ast.Ident); ok {
				if obj := pass.TypesInfo.ObjectOf(id); obj != nil {
					out[obj] = true
				}
			}
		}
		return true
	})
	return out
}

// orderFreeBody reports whether every statement of a map-range body is one
// whose combined effect does not depend on iteration order.
func orderFreeBody(pass *analysis.Pass, body *ast.BlockStmt, sorted map[types.Object]bool) bool {
	for _, st := range body.List {
		if !orderFreeStmt(pass, st, sorted) {
			return false
		}
	}
	return true
}

func orderFreeStmt(pass *analysis.Pass, st ast.Stmt, sorted map[types.Object]bool) bool {
	switch s := st.(type) {
	case *ast.AssignStmt:
		for i, lhs := range s.Lhs {
			switch l := lhs.(type) {
			case *ast.IndexExpr: // m2[k] = ...: writing map entries commutes
				if t := pass.TypesInfo.TypeOf(l.X); t == nil {
					return false
				} else if _, isMap := t.Underlying().(*types.Map); !isMap {
					return false
				}
			case *ast.Ident: // s = append(s, ...) with s sorted later
				obj := pass.TypesInfo.ObjectOf(l)
				if obj == nil || !sorted[obj] || i >= len(s.Rhs) || !isAppendTo(pass, s.Rhs[i], obj) {
					return false
				}
			default:
				return false
			}
		}
		return true
	case *ast.ExprStmt:
		call, ok := s.X.(*ast.CallExpr)
		if !ok {
			return false
		}
		id, ok := call.Fun.(*ast.Ident)
		return ok && id.Name == "delete" && pass.TypesInfo.Uses[id] == types.Universe.Lookup("delete")
	case *ast.IfStmt: // a filter around order-free statements
		if s.Init != nil || s.Else != nil {
			return false
		}
		return orderFreeBody(pass, s.Body, sorted)
	case *ast.BranchStmt:
		return s.Label == nil && s.Tok.String() == "continue"
	}
	return false
}

func isAppendTo(pass *analysis.Pass, e ast.Expr, obj types.Object) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return false
	}
	id, ok := call.Fun.(*ast.Ident)
	if !ok || id.Name != "append" || pass.TypesInfo.Uses[id] != types.Universe.Lookup("append") {
		return false
	}
	first, ok := call.Args[0].(*ast.Ident)
	return ok && pass.TypesInfo.ObjectOf(first) == obj
}
