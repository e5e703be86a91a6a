package core

import (
	"fmt"
	"net/mail"
	"regexp"
	"strconv"
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
	envVarName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	hostname    = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]([-a-z0-9]*[a-z0-9])?$`)
	// An image repository without tag or digest: registry/path segments.
	imageRepo   = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$`)
	ImageDigest = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

const (
	maxVariableValue = 32 << 10
	maxReplicas      = 100
	MaxListItems     = 100
)

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

// Config checks a service's image, processes, variables and domains.
func (c *Checks) Config(image *string, cfg *model.ServiceConfig) {
	if image != nil && (len(*image) > 255 || !imageRepo.MatchString(*image)) {
		c.Add(Invalid(fmt.Sprintf("image %q must be a repository without tag or digest, e.g. registry.example.com/team/app", *image), "input", "image"))
	}
	procs := map[string]*model.Process{}
	if cfg.Processes != nil {
		if len(cfg.Processes) == 0 {
			c.Add(Invalid("a service needs at least one process", "input", "processes"))
		}
		if len(cfg.Processes) > 20 {
			c.Add(Invalid("a service has at most 20 processes", "input", "processes"))
		}
		for i := range cfg.Processes {
			pr := &cfg.Processes[i]
			c.Name(pr.Name, "process name", "input", "processes", i, "name")
			if procs[pr.Name] != nil {
				c.Add(Invalid(fmt.Sprintf("process %q appears twice", pr.Name), "input", "processes", strconv.Itoa(i), "name"))
			}
			procs[pr.Name] = pr
			if pr.Replicas < 0 || pr.Replicas > maxReplicas {
				c.Add(Invalid(fmt.Sprintf("replicas must be between 0 and %d", maxReplicas), "input", "processes", strconv.Itoa(i), "replicas"))
			}
			if len(pr.Command) > 100 {
				c.Add(Invalid("a command has at most 100 arguments", "input", "processes", strconv.Itoa(i), "command"))
			}
			if pr.Port != nil {
				c.Port(*pr.Port, "input", "processes", i, "port")
			}
			if pb := pr.ReadinessProbe; pb != nil {
				c.Port(pb.Port, "input", "processes", i, "readinessProbe", "port")
				if pb.Path != nil && !strings.HasPrefix(*pb.Path, "/") {
					c.Add(Invalid("a probe path starts with '/'", "input", "processes", strconv.Itoa(i), "readinessProbe", "path"))
				}
				if pb.InitialDelaySeconds < 0 || pb.InitialDelaySeconds > 3600 || pb.PeriodSeconds < 1 || pb.PeriodSeconds > 3600 {
					c.Add(Invalid("probe delays are 0-3600 seconds and periods 1-3600 seconds", "input", "processes", strconv.Itoa(i), "readinessProbe"))
				}
			}
		}
	}
	if len(cfg.Domains) > 50 {
		c.Add(Invalid("a service has at most 50 domains", "input", "domains"))
	}
	hosts := map[string]bool{}
	for i, d := range cfg.Domains {
		if !hostname.MatchString(d.Host) || len(d.Host) > 253 {
			c.Add(Invalid(fmt.Sprintf("domain %q is not a lowercase host name", d.Host), "input", "domains", strconv.Itoa(i), "host"))
		}
		if hosts[d.Host] {
			c.Add(Invalid(fmt.Sprintf("domain %q appears twice", d.Host), "input", "domains", strconv.Itoa(i), "host"))
		}
		hosts[d.Host] = true
		switch pr := procs[d.Process]; {
		case pr == nil:
			c.Add(Invalid(fmt.Sprintf("domain %q names process %q, which the service does not have", d.Host, d.Process), "input", "domains", strconv.Itoa(i), "process"))
		case pr.Port == nil:
			c.Add(Invalid(fmt.Sprintf("domain %q needs process %q to have a port", d.Host, d.Process), "input", "domains", strconv.Itoa(i), "process"))
		}
	}
}

// Variables checks a list of variables given together (a service's).
func (c *Checks) Variables(vars []VariableInput, path ...any) {
	if len(vars) > 200 {
		c.Add(Invalid("at most 200 variables", FieldPath(path...)...))
	}
	seen := map[string]bool{}
	for i, v := range vars {
		p := append(append([]any{}, path...), i)
		c.Variable(v, p...)
		if seen[v.Name] {
			c.Add(Invalid(fmt.Sprintf("variable %q appears twice", v.Name), FieldPath(append(p, "name")...)...))
		}
		seen[v.Name] = true
	}
}

// Variable checks one variable. The message never quotes the value: it may
// be a secret.
func (c *Checks) Variable(v VariableInput, path ...any) {
	if !envVarName.MatchString(v.Name) || len(v.Name) > 255 {
		c.Add(Invalid(fmt.Sprintf("variable name %q must be letters, digits and '_', not starting with a digit", v.Name), FieldPath(append(path, "name")...)...))
	}
	if len(v.Value) > maxVariableValue || !utf8.ValidString(v.Value) {
		c.Add(Invalid(fmt.Sprintf("the value of %s must be valid text of at most %d bytes", v.Name, maxVariableValue), FieldPath(append(path, "value")...)...))
	}
}

func (c *Checks) Port(p int, path ...any) {
	if p < 1 || p > 65535 {
		c.Add(Invalid(fmt.Sprintf("port %d must be between 1 and 65535", p), FieldPath(path...)...))
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

// VariableInput is a variable as a caller gives it.
type VariableInput struct {
	Name   string
	Value  string
	Secret bool
}
