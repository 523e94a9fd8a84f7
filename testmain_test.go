package wecom

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testMainRunners are the calls a TestMain makes to skip the race
// runtime's second of sleep at exit (waiting.SkipExitSleep).
var testMainRunners = map[string]bool{
	"waiting.Run": true, "waiting.Main": true, "redistest.Main": true, "redistest.MainWaiting": true,
	"Main": true, // redistest's own
}

// TestEveryTestMainSkipsTheExitSleep: every package of the module with
// tests has a TestMain that calls one of testMainRunners, so that none of
// its test binaries sleeps a second at exit under -race.
func TestEveryTestMainSkipsTheExitSleep(t *testing.T) {
	t.Parallel()
	tested := map[string]bool{} // directory -> its TestMain calls a runner
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || exists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir // not this module's
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		tested[dir] = tested[dir] || callsRunner(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tested) < 10 {
		t.Fatalf("only %d directories with tests found", len(tested))
	}
	for dir, ok := range tested {
		if !ok {
			t.Errorf("%s: no TestMain calling waiting.Run (or Main, or redistest's Main): its binary sleeps a second at exit under -race", dir)
		}
	}
}

// callsRunner reports whether f's TestMain calls one of testMainRunners.
func callsRunner(f *ast.File) bool {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "TestMain" || fn.Recv != nil || fn.Body == nil {
			continue
		}
		found := false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fun := call.Fun.(type) {
			case *ast.Ident:
				found = found || testMainRunners[fun.Name]
			case *ast.SelectorExpr:
				if x, ok := fun.X.(*ast.Ident); ok {
					found = found || testMainRunners[x.Name+"."+fun.Sel.Name]
				}
			}
			return true
		})
		return found
	}
	return false
}

// exists reports whether path names a file.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
