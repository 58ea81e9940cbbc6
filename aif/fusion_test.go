package aif

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"strings"
	"testing"
)

// TestNoFusableMultiplyAdd guards bitwise reproducibility: Go may fuse a
// floating-point product that feeds an addition or subtraction into one
// multiply-add (it does on arm64), which changes the last bits. Every such
// product in the controller's packages must be wrapped in an explicit
// float64 conversion, which forces rounding. This test type-checks the
// non-test sources and fails on any float product used directly as an
// operand of + or - (or as the right side of += / -=).
func TestNoFusableMultiplyAdd(t *testing.T) {
	imp := &localImporter{std: importer.ForCompiler(token.NewFileSet(), "source", nil), done: map[string]*types.Package{}}
	dirs := []string{".", "channel", "choice", "reduce", "budget", "strategy", "fixed", "evidence", "internal/fmath", "internal/draw"}
	for _, dir := range dirs {
		fset := token.NewFileSet()
		files, err := parseDir(fset, dir)
		if err != nil {
			t.Fatal(err)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
		conf := types.Config{Importer: imp, Error: func(error) {}}
		_, _ = conf.Check(dir, fset, files, info)
		for _, msg := range fusable(fset, files, info) {
			t.Error(msg)
		}
	}
}

func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, p := range pkgs {
		for _, f := range p.Files {
			files = append(files, f)
		}
	}
	return files, nil
}

// localImporter type-checks the controller's own packages from source,
// imports "math" from source, and stands in an empty package for anything
// else (canonical JSON, hashing, protocol types): none of those carries the
// floating-point arithmetic this test inspects, and skipping them keeps the
// test fast. Unresolved names simply have no type and are not reported.
type localImporter struct {
	std  types.Importer
	done map[string]*types.Package
}

func (l *localImporter) Import(path string) (*types.Package, error) {
	if p, ok := l.done[path]; ok {
		return p, nil
	}
	const prefix = "flrh.dev/flrh/aif/"
	var p *types.Package
	switch {
	case path == "math":
		var err error
		if p, err = l.std.Import(path); err != nil {
			return nil, err
		}
	case strings.HasPrefix(path, prefix):
		fset := token.NewFileSet()
		files, err := parseDir(fset, strings.TrimPrefix(path, prefix))
		if err != nil {
			return nil, err
		}
		conf := types.Config{Importer: l, Error: func(error) {}}
		p, _ = conf.Check(path, fset, files, nil)
	default:
		name := path[strings.LastIndex(path, "/")+1:]
		p = types.NewPackage(path, name)
		p.MarkComplete()
	}
	l.done[path] = p
	return p, nil
}

// fusable lists every float product used directly as an operand of + or -.
func fusable(fset *token.FileSet, files []*ast.File, info *types.Info) []string {
	isFloatMul := func(e ast.Expr) bool {
		b, ok := ast.Unparen(e).(*ast.BinaryExpr)
		if !ok || b.Op != token.MUL {
			return false
		}
		tv := info.Types[b]
		if tv.Value != nil || tv.Type == nil { // constants fold exactly at compile time
			return false
		}
		bt, ok := tv.Type.Underlying().(*types.Basic)
		return ok && bt.Info()&types.IsFloat != 0
	}
	var out []string
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BinaryExpr:
				if (x.Op == token.ADD || x.Op == token.SUB) && (isFloatMul(x.X) || isFloatMul(x.Y)) {
					out = append(out, fset.Position(x.Pos()).String()+": float product feeds "+x.Op.String()+" without float64(...)")
				}
			case *ast.AssignStmt:
				if (x.Tok == token.ADD_ASSIGN || x.Tok == token.SUB_ASSIGN) && isFloatMul(x.Rhs[0]) {
					out = append(out, fset.Position(x.Pos()).String()+": float product feeds "+x.Tok.String()+" without float64(...)")
				}
			}
			return true
		})
	}
	return out
}

// The checker itself must see what it guards against.
func TestFusableDetector(t *testing.T) {
	const src = `package p
func f(a, b, c float64, i, j int) (float64, int) {
	x := a*b + c          // fusable
	y := float64(a*b) + c // rounded first
	c += a * b            // fusable
	k := i*j + 1          // integers do not fuse
	const h = 0.5 * 3.0
	return x + y + h*1, k
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	if _, err := (&types.Config{}).Check("p", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	got := fusable(fset, []*ast.File{f}, info)
	if len(got) != 2 || !strings.Contains(got[0], "p.go:3") || !strings.Contains(got[1], "p.go:5") {
		t.Fatalf("detector found %v", got)
	}
}
