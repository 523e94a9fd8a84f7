// Command limitsdoc writes the table of default limits (LIMITS.md at the
// module's root) from the catalog, between the markers <!-- limits:begin -->
// and <!-- limits:end -->; the text around them is left as it is. Run it with
// go generate ./catalog/; -check fails if the file is out of date instead of
// writing it.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/wecomkit/wecom/catalog"
)

// The markers around the generated text in LIMITS.md.
const (
	begin = "<!-- limits:begin -->\n"
	end   = "<!-- limits:end -->"
)

func main() {
	out := flag.String("out", "LIMITS.md", "the Markdown file whose table to update")
	check := flag.Bool("check", false, "fail if the file is out of date; write nothing")
	flag.Parse()
	if err := run(*out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "limitsdoc:", err)
		os.Exit(1)
	}
}

func run(path string, check bool) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := splice(old, Render(catalog.Endpoints(), catalog.Generic()))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(old, updated) {
		return nil
	}
	if check {
		return fmt.Errorf("%s is out of date: run go generate ./catalog/", path)
	}
	return os.WriteFile(path, updated, 0o644)
}

// splice replaces what lies between the markers of doc with text.
func splice(doc []byte, text string) ([]byte, error) {
	i := bytes.Index(doc, []byte(begin))
	j := bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		return nil, errors.New("no " + strings.TrimSpace(begin) + " ... " + end + " markers")
	}
	var b bytes.Buffer
	b.Write(doc[:i+len(begin)])
	b.WriteString(text)
	b.Write(doc[j:])
	return b.Bytes(), nil
}

// Render returns the Markdown table of endpoints' limits. The rules every
// endpoint shares with generic (the base limits) are said once, above the
// table; sources are numbered notes below it.
func Render(endpoints []catalog.Endpoint, generic []catalog.Rule) string {
	var b strings.Builder
	var sources []string
	note := func(src string) string {
		i := slices.Index(sources, src)
		if i < 0 {
			sources = append(sources, src)
			i = len(sources) - 1
		}
		return fmt.Sprintf("[%d]", i+1)
	}
	fmt.Fprintf(&b, "Every API, wrapped or called with `Do`: %s.\n\n", describe(generic, "", note))
	b.WriteString("| endpoint | method | safe to repeat | limits besides those |\n|---|---|---|---|\n")
	for _, e := range endpoints {
		var own []catalog.Rule
		for _, r := range e.Rules {
			if !slices.Contains(generic, r) {
				own = append(own, r)
			}
		}
		limits := describe(own, e.Resource, note)
		if out := exempt(e, generic); out != "" {
			limits = strings.TrimSuffix(out+"; "+limits, "; ")
		}
		if limits == "" {
			limits = "—"
		}
		repeat := "no"
		if e.Repeatable {
			repeat = "yes"
		}
		fmt.Fprintf(&b, "| [`%s`](https://developer.work.weixin.qq.com/document/path/%d) | %s | %s | %s |\n",
			strings.TrimPrefix(string(e.ID), "/cgi-bin/"), e.Doc, e.Method, repeat, limits)
	}
	b.WriteString("\n")
	for i, s := range sources {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	return b.String()
}

// exempt names the rules of generic that e does not count in (WeCom exempts
// app messages and sign-in codes from its base limits, and a robot belongs
// to no corp), or says it counts in none of them; empty when it counts in
// them all.
func exempt(e catalog.Endpoint, generic []catalog.Rule) string {
	var names []string
	for _, g := range generic {
		if !slices.ContainsFunc(e.Rules, func(r catalog.Rule) bool { return r.Name == g.Name }) {
			names = append(names, "`"+g.Name+"`")
		}
	}
	switch len(names) {
	case 0:
		return ""
	case len(generic):
		return "exempt from those"
	}
	return "exempt from " + strings.Join(names, ", ")
}

// describe says rules in words, each with its name and note, naming the
// endpoint's resource for the rules counted per resource.
func describe(rules []catalog.Rule, resource string, note func(string) string) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		words := r.String()
		if resource != "" {
			words = strings.Replace(words, "per corp and resource, shared", "per "+resource+", shared", 1)
			words = strings.Replace(words, "per corp, API and resource", "per "+resource, 1)
		}
		parts[i] = fmt.Sprintf("%s (`%s`) %s", words, r.Name, note(r.Source))
	}
	return strings.Join(parts, "; ")
}
