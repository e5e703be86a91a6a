package desired

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The expression the scanner stands for.
var referenceExpression = regexp.MustCompile(`\$\{\{\s*services\.([a-z0-9-]+)\.(url|port|host|variables\.([A-Za-z_][A-Za-z0-9_]*))\s*\}\}`)

// scanAll lists the scanner's matches as the expression's submatch
// indexes would: start, end, service, what, variable.
func scanAll(val string) [][]string {
	var out [][]string
	for from := 0; ; {
		r, ok := nextReference(val, from)
		if !ok {
			return out
		}
		what := r.what
		if r.variable != "" {
			what = "variables." + r.variable
		}
		out = append(out, []string{val[r.start:r.end], r.service, what, r.variable})
		from = r.end
	}
}

func expressionAll(val string) [][]string {
	var out [][]string
	for _, m := range referenceExpression.FindAllStringSubmatch(val, -1) {
		out = append(out, m[:4])
	}
	return out
}

// The scanner finds what the regular expression finds, on the forms the
// documentation shows, on near misses, and on random text built from the
// pieces of references.
func TestReferenceScannerMatchesTheExpression(t *testing.T) {
	cases := []string{
		"${{ services.api.url }}", "${{services.api.port}}", "x ${{ services.api.host }} y", "${{\tservices.a-1.variables.TOKEN_2\n}}",
		"${{ services.api.variables.9bad }}", "${{ services.API.url }}", "${{ services..url }}", "${{ services.api.urls }}",
		"${{ services.api.url }", "${{${{ services.api.url }}", "$${{ services.api.url }}}}", "${{ services.api.variables. }}",
		"${{ services.api.variables._x }} and ${{ services.b.port }}", "no references", "${{", "${{ services.", "",
		"${{ services.api.url }}${{ services.api.url }}", "${{  services.api.variables.A }}tail",
	}
	pieces := []string{"${{", "}}", " ", "\t", "services.", "api", "a-b", ".", "url", "port", "host", "variables.", "TOKEN", "_",
		"9", "x", "$", "{", "}", "-", "A"}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		got, want := scanAll(c), expressionAll(c)
		if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
			t.Fatalf("%q: the scanner finds %q, the expression %q", c, got, want)
		}
	}
}
