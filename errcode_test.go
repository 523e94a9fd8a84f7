package wecom_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/wecomkit/wecom/catalog"
)

// TestCodesAreTheCatalogs fails for a Code constant of errors.go that is not
// package catalog's constant of the same name: an errcode has one home.
func TestCodesAreTheCatalogs(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range catalog.Errcodes() {
		names[e.Name] = true
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			name := vs.Names[0].Name
			sel, _ := vs.Values[0].(*ast.SelectorExpr)
			if pkg, _ := sel.X.(*ast.Ident); pkg == nil || pkg.Name != "catalog" || sel.Sel.Name != name || !names[name] {
				t.Errorf("%s is not catalog.%s, a row of catalog.Errcodes()", name, name)
			}
			n++
		}
	}
	if n == 0 {
		t.Error("no Code constants found in errors.go")
	}
}
