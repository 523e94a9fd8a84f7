package catalog

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestEveryErrcodeDeclared fails for a Code constant (in errcode.go or a
// family's errcode_*.go) that Errcodes does not declare under its name and
// value, and for a row without a constant.
func TestEveryErrcodeDeclared(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("errcode*.go")
	if err != nil {
		t.Fatal(err)
	}
	var decls []ast.Decl
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	consts := map[string]int{}
	for _, d := range decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Names) != 1 || len(vs.Values) != 1 || vs.Type != nil {
				continue
			}
			if v, ok := constValue(vs.Values[0]); ok {
				consts[vs.Names[0].Name] = v
			}
		}
	}
	rows := map[string]bool{}
	codes := map[int]string{}
	for _, e := range Errcodes() {
		if rows[e.Name] {
			t.Errorf("%s declared twice", e.Name)
		}
		rows[e.Name] = true
		if other, ok := codes[e.Code]; ok {
			t.Errorf("errcode %d is both %s and %s", e.Code, other, e.Name)
		}
		codes[e.Code] = e.Name
		if v, ok := consts[e.Name]; !ok || v != e.Code {
			t.Errorf("row %s (%d): the constant is %d (declared: %t)", e.Name, e.Code, v, ok)
		}
		if e.Meaning == "" {
			t.Errorf("%s has no meaning", e.Name)
		}
	}
	for name := range consts {
		if !rows[name] {
			t.Errorf("constant %s is not in Errcodes()", name)
		}
	}
}

// constValue reads an integer literal, signed or not.
func constValue(x ast.Expr) (int, bool) {
	sign := 1
	if u, ok := x.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		sign, x = -1, u.X
	}
	lit, ok := x.(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return 0, false
	}
	v, ok := constant.Int64Val(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
	return sign * int(v), ok
}

func TestClassOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code int
		want Class
	}{
		{CodeSystemBusy, ClassBusy},
		{CodeDataVersionConflict, ClassBusy},
		{CodeFrequencyLimited, ClassRate},
		{CodeConcurrencyLimited, ClassConcurrency},
		{CodeAccessTokenMissing, ClassToken},
		{CodeSuiteTokenExpired, ClassToken},
		{CodeInvalidWebhook, ClassCredential},
		{CodeInvalidSuiteTicket, ClassNone},
		{12345, ClassNone},
	} {
		if got := ClassOf(tc.code); got != tc.want {
			t.Errorf("ClassOf(%d) = %d, want %d", tc.code, got, tc.want)
		}
	}
}
