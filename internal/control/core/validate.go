package core

import (
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nebulactrl/nebula/internal/model"
)

var (
	// Names that become parts of Kubernetes object names: DNS labels.
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// Label keys and values follow Kubernetes: an optional DNS prefix and a
	// name of at most 63 characters.
	labelName   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	labelPrefix = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	ImageDigest = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// MaxListItems bounds the lists an input may give (labels, environments).
const MaxListItems = 100

func FieldPath(path ...any) []string {
	out := make([]string, len(path))
	for i, p := range path {
		out[i] = fmt.Sprint(p)
	}
	return out
}

// Name checks a DNS-label name of an object.
func (c *Checks) Name(v, what string, path ...any) {
	if !dnsLabel.MatchString(v) || len(v) > 63 {
		c.Add(Invalid(fmt.Sprintf("%s %q must be 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit", what, v), FieldPath(path...)...))
	}
}

// Text checks free text of at most max characters; required means not blank.
func (c *Checks) Text(v, what string, max int, required bool, path ...any) {
	switch {
	case required && strings.TrimSpace(v) == "":
		c.Add(Invalid(what+" must not be empty", FieldPath(path...)...))
	case utf8.RuneCountInString(v) > max:
		c.Add(Invalid(fmt.Sprintf("%s must be at most %d characters", what, max), FieldPath(path...)...))
	case !utf8.ValidString(v) || strings.ContainsAny(v, "\x00"):
		c.Add(Invalid(what+" must be valid text", FieldPath(path...)...))
	}
}

func (c *Checks) Email(v string, path ...any) {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Address != v || len(v) > 254 {
		c.Add(Invalid(fmt.Sprintf("%q is not an email address", v), FieldPath(path...)...))
	}
}

// Labels checks a label set: valid keys and values, no key twice.
func (c *Checks) Labels(ls []model.Label, path ...any) model.Labels {
	if len(ls) > MaxListItems {
		c.Add(Invalid(fmt.Sprintf("at most %d labels", MaxListItems), FieldPath(path...)...))
		return nil
	}
	seen := map[string]bool{}
	for i, l := range ls {
		p := append(append([]any{}, path...), i)
		if !validLabelKey(l.Key) {
			c.Add(Invalid(fmt.Sprintf("label key %q is not valid: an optional DNS prefix and '/', then 1-63 letters, digits, '-', '_' or '.'", l.Key), FieldPath(append(p, "key")...)...))
		}
		if l.Value != "" && (len(l.Value) > 63 || !labelName.MatchString(l.Value)) {
			c.Add(Invalid(fmt.Sprintf("label value %q is not valid: at most 63 letters, digits, '-', '_' or '.'", l.Value), FieldPath(append(p, "value")...)...))
		}
		if seen[l.Key] {
			c.Add(Invalid(fmt.Sprintf("label key %q appears twice", l.Key), FieldPath(append(p, "key")...)...))
		}
		seen[l.Key] = true
	}
	return model.NewLabels(ls)
}

func validLabelKey(k string) bool {
	prefix, name, found := strings.Cut(k, "/")
	if !found {
		name, prefix = prefix, ""
	} else if prefix == "" || len(prefix) > 253 || !labelPrefix.MatchString(prefix) {
		return false
	}
	return len(name) <= 63 && labelName.MatchString(name)
}

// KnownKeys checks that every selector key is a label key some target has:
// a key no target carries is almost always a typo, and would match nothing.
func (c *Checks) KnownKeys(selector model.Labels, known map[string]bool, what string, path ...any) {
	for i, s := range selector {
		if known[s.Key] {
			continue
		}
		keys := make([]string, 0, len(known))
		for k := range known {
			keys = append(keys, k)
		}
		sortStrings(keys)
		hint := "no " + what + " has any label yet"
		if len(keys) > 0 {
			hint = "known keys: " + strings.Join(keys, ", ")
		}
		c.Add(Invalid(fmt.Sprintf("unknown label key %q: no %s carries it (%s)", s.Key, what, hint), FieldPath(append(append([]any{}, path...), i, "key")...)...))
	}
}

// ClipText cuts s to at most n bytes, on a rune boundary.
func ClipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Changed applies an optional new value and records it in the audit event.
func Changed[T comparable](ev *Audit, key string, dst *T, v *T) {
	if v == nil || *v == *dst {
		return
	}
	ev.Details[key] = map[string]any{"from": *dst, "to": *v}
	*dst = *v
}

func OrEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
