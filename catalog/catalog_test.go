package catalog

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"path/filepath"
	"testing"
	"time"
)

func TestEndpointsValid(t *testing.T) {
	t.Parallel()
	seen := map[ID]bool{}
	for _, e := range Endpoints() {
		if err := e.Validate(); err != nil {
			t.Error(err)
		}
		if seen[e.ID] {
			t.Errorf("%s declared twice", e.ID)
		}
		seen[e.ID] = true
		if e.Sample == "" && e.Method == "POST" && e.Body != MultipartBody { // an upload's sample is its query, if it has one
			t.Errorf("%s: a POST without a sample body", e.ID)
		}
		for _, r := range e.Rules {
			if r.Source == "" {
				t.Errorf("%s: rule %q has no source", e.ID, r.Name)
			}
		}
	}
}

// TestEveryIDDeclared fails for an ID constant that the tables (table.go
// and a family's table_*.go) do not declare: a typed method naming it could
// not be called.
func TestEveryIDDeclared(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("table*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no table files: %v", err)
	}
	n := 0
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "ID" {
					continue
				}
				for _, v := range vs.Values {
					lit := v.(*ast.BasicLit)
					path := lit.Value[1 : len(lit.Value)-1]
					n++
					if _, ok := Lookup(path); !ok {
						t.Errorf("ID %s is not in Endpoints()", path)
					}
				}
			}
		}
	}
	if n != len(Endpoints()) {
		t.Errorf("%d ID constants, %d endpoints", n, len(Endpoints()))
	}
}

func TestRuleValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    Rule
		ok   bool
	}{
		{"in flight", Rule{Name: "c", Scope: ScopeAPI, InFlight: 5}, true},
		{"rate", Rule{Name: "m", Scope: ScopeAPI, Limit: 5, Per: Minute}, true},
		{"weighted day", Rule{Name: "d", Scope: ScopeApp, Limit: 5, Per: Day, Weighted: true}, true},
		{"no name", Rule{Scope: ScopeAPI, InFlight: 5}, false},
		{"no scope", Rule{Name: "c", InFlight: 5}, false},
		{"both caps", Rule{Name: "c", Scope: ScopeAPI, InFlight: 5, Limit: 5, Per: Minute}, false},
		{"no cap", Rule{Name: "c", Scope: ScopeAPI}, false},
		{"negative", Rule{Name: "c", Scope: ScopeAPI, InFlight: -1}, false},
		{"rate without period", Rule{Name: "c", Scope: ScopeAPI, Limit: 5}, false},
		{"weighted in flight", Rule{Name: "c", Scope: ScopeAPI, InFlight: 5, Weighted: true}, false},
		{"shared without group", Rule{Name: "c", Scope: ScopeShared, InFlight: 1}, false},
	} {
		err := tc.r.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidRule)) {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	twice := []Rule{{Name: "a", Scope: ScopeAPI, InFlight: 1}, {Name: "b", Scope: ScopeAPI, InFlight: 2}}
	if err := ValidateRules(twice); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("two in-flight caps on one scope: %v", err)
	}
	same := []Rule{{Name: "a", Scope: ScopeAPI, InFlight: 1}, {Name: "a", Scope: ScopeAPI, Limit: 2, Per: Hour}}
	if err := ValidateRules(same); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("one name twice: %v", err)
	}
}

func TestDayIsChinaStandardTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at, day, next string
	}{
		{"2026-11-24T15:59:59Z", "20261124", "2026-11-24T16:00:00Z"},
		{"2026-11-24T16:00:00Z", "20261125", "2026-11-25T16:00:00Z"},
		{"2026-12-31T23:00:00Z", "20270101", "2027-01-01T16:00:00Z"},
		{"2026-11-24T08:00:00+08:00", "20261124", "2026-11-24T16:00:00Z"},
	} {
		at, _ := time.Parse(time.RFC3339, tc.at)
		next, _ := time.Parse(time.RFC3339, tc.next)
		if got := DayOf(at); got != tc.day {
			t.Errorf("DayOf(%s) = %s, want %s", tc.at, got, tc.day)
		}
		if got := NextDay(at); !got.Equal(next) {
			t.Errorf("NextDay(%s) = %s, want %s", tc.at, got, tc.next)
		}
		if got := Day.BlockAt(at); !got.Equal(next) {
			t.Errorf("Day.BlockAt(%s) = %s", tc.at, got)
		}
	}
	at := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	if got := Minute.BlockAt(at); got.Sub(at) != time.Minute {
		t.Errorf("Minute.BlockAt = +%s", got.Sub(at))
	}
	if Minute.Calendar() || Hour.Calendar() || !Day.Calendar() || !Month.Calendar() {
		t.Error("Day and Month are the calendar periods, Minute and Hour are not")
	}
}

// TestMonthIsChinaStandardTime: a month is named and ends in China
// Standard Time, across a year's end and a short February.
func TestMonthIsChinaStandardTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at, month, next string
	}{
		{"2026-11-30T15:59:59Z", "202611", "2026-11-30T16:00:00Z"},
		{"2026-11-30T16:00:00Z", "202612", "2026-12-31T16:00:00Z"},
		{"2026-12-31T16:00:00Z", "202701", "2027-01-31T16:00:00Z"},
		{"2027-02-10T00:00:00Z", "202702", "2027-02-28T16:00:00Z"},
		{"2028-02-28T16:00:00Z", "202802", "2028-02-29T16:00:00Z"},
	} {
		at, _ := time.Parse(time.RFC3339, tc.at)
		next, _ := time.Parse(time.RFC3339, tc.next)
		if got := MonthOf(at); got != tc.month {
			t.Errorf("MonthOf(%s) = %s, want %s", tc.at, got, tc.month)
		}
		if got := NextMonth(at); !got.Equal(next) {
			t.Errorf("NextMonth(%s) = %s, want %s", tc.at, got, tc.next)
		}
		if got := Month.BlockAt(at); !got.Equal(next) {
			t.Errorf("Month.BlockAt(%s) = %s", tc.at, got)
		}
		r := Rule{Name: "m", Scope: ScopeAPI, Limit: 3000, Per: Month}
		if key, _ := r.Key(KeyInput{Corp: "ww1", API: "/x", Now: at}); key != "{ww1}/x~month:"+tc.month {
			t.Errorf("the key of a Month rule at %s: %q", tc.at, key)
		}
	}
	if err := (Rule{Name: "m", Scope: ScopeAPI, Limit: 3000, Per: Month}).Validate(); err != nil {
		t.Errorf("a Month rule: %v", err)
	}
	if err := (Rule{Name: "m", Scope: ScopeAPI, Limit: 3000, Per: Month + 1}).Validate(); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("a period past Month: %v", err)
	}
}

// TestEndpointKeys: an endpoint whose rules count what a request says
// reads it, refuses a request that does not say it, and is refused by
// Validate without its Keys.
func TestEndpointKeys(t *testing.T) {
	t.Parallel()
	e, _ := Lookup(MarkTag.Path())
	q, body, err := e.SampleRequest()
	if err != nil {
		t.Fatal(err)
	}
	k, err := e.Keys(q, body)
	if err != nil || k.Resource != CustomerResource("zhangsan", "woAJ2GCAAAXtWyujaWJHDDGi0mACH71w") {
		t.Errorf("Keys(sample) = %+v, %v", k, err)
	}
	for _, bad := range []string{`{"userid":"zhangsan","add_tag":["et1"]}`, `{"userid":1}`, `[`, ``} {
		if _, err := e.Keys(nil, []byte(bad)); !errors.Is(err, ErrNoKeys) {
			t.Errorf("Keys(%s) = %v, want ErrNoKeys", bad, err)
		}
	}
	e.Keys = nil
	if err := e.Validate(); err == nil {
		t.Error("Validate accepted a per-customer rule without Keys")
	}
	e.Keys, e.Sample = CustomerKeys, `{"userid":"zhangsan"}`
	if err := e.Validate(); !errors.Is(err, ErrNoKeys) {
		t.Errorf("Validate of a sample without the customer = %v, want ErrNoKeys", err)
	}
}

// The catalog's KeysFuncs read requests from outside: they never panic, and
// either name what they count or fail with ErrNoKeys.
func FuzzKeys(f *testing.F) {
	for _, s := range []string{`{"userid":"u","external_userid":"wm"}`, `{"userid":1}`, `[`, ``, `null`, `{"userid":"","external_userid":""}`} {
		f.Add(s, "media_id=m1")
	}
	f.Fuzz(func(t *testing.T, body, query string) {
		q, _ := url.ParseQuery(query)
		if k, err := CustomerKeys(q, []byte(body)); err == nil && k.Resource == "" || err != nil && !errors.Is(err, ErrNoKeys) {
			t.Errorf("CustomerKeys(%q) = %+v, %v", body, k, err)
		}
		if k, err := MediaKeys(q, []byte(body)); err == nil && k.Resource == "" || err != nil && !errors.Is(err, ErrNoKeys) {
			t.Errorf("MediaKeys(%q) = %+v, %v", query, k, err)
		}
	})
}
