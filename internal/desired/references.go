package desired

import "strings"

// A reference names another service's values inside a variable value:
// ${{ services.api.url }}, ${{ services.api.port }}, ${{ services.api.host }}
// or ${{ services.api.variables.TOKEN }} — as the regular expression
//
//	\$\{\{\s*services\.([a-z0-9-]+)\.(url|port|host|variables\.([A-Za-z_][A-Za-z0-9_]*))\s*\}\}
//
// says, matched by hand (TestReferenceScannerMatchesTheExpression holds
// the two to the same matches): the expression took a fifth of a compile.
type reference struct {
	// start and end delimit the reference in the value.
	start, end int
	service    string
	// what is url, port, host or variables; variable is set for variables.
	what, variable string
}

// nextReference finds the first reference in val at or after from.
func nextReference(val string, from int) (reference, bool) {
	for from < len(val) {
		i := strings.Index(val[from:], "${{")
		if i < 0 {
			return reference{}, false
		}
		at := from + i
		if r, ok := referenceAt(val, at); ok {
			return r, true
		}
		from = at + 1
	}
	return reference{}, false
}

// referenceAt matches a reference starting at val[at] ("${{").
func referenceAt(val string, at int) (reference, bool) {
	r := reference{start: at}
	j := spaces(val, at+3)
	if !strings.HasPrefix(val[j:], "services.") {
		return r, false
	}
	j += len("services.")
	k := j
	for k < len(val) && (val[k] >= 'a' && val[k] <= 'z' || val[k] >= '0' && val[k] <= '9' || val[k] == '-') {
		k++
	}
	if k == j || k >= len(val) || val[k] != '.' {
		return r, false
	}
	r.service = val[j:k]
	j = k + 1
	switch rest := val[j:]; {
	case strings.HasPrefix(rest, "url"), strings.HasPrefix(rest, "port"), strings.HasPrefix(rest, "host"):
		n := 3
		if rest[0] == 'p' || rest[0] == 'h' {
			n = 4
		}
		r.what, j = rest[:n], j+n
	case strings.HasPrefix(rest, "variables."):
		j += len("variables.")
		k = j
		if k < len(val) && (isLetter(val[k]) || val[k] == '_') {
			k++
			for k < len(val) && (isLetter(val[k]) || val[k] == '_' || val[k] >= '0' && val[k] <= '9') {
				k++
			}
		}
		if k == j {
			return r, false
		}
		r.what, r.variable, j = "variables", val[j:k], k
	default:
		return r, false
	}
	j = spaces(val, j)
	if !strings.HasPrefix(val[j:], "}}") {
		return r, false
	}
	r.end = j + 2
	return r, true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// spaces skips what \s matches (RE2's Perl class: \t \n \f \r and space).
func spaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\f' || s[i] == '\r') {
		i++
	}
	return i
}
