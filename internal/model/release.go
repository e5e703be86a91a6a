package model

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ReleaseVariable is a variable as a release froze it: the one in force
// for the release's service in its environment (of a name set at several
// scopes, the narrowest one's), its value as written (references to other
// services are expanded when the release is compiled), and a secret by the
// version of its sealed value, never the value.
type ReleaseVariable struct {
	Name  string        `json:"name"`
	Scope VariableScope `json:"scope"`
	Value string        `json:"value,omitempty"`
	// Secret: Version names the sealed value (a SecretVersion) and Value
	// is empty.
	Secret  bool            `json:"secret,omitempty"`
	Version SecretVersionID `json:"version,omitempty"`
}

// Frozen reports whether the release carries its variables. A release
// made before releases froze them carries none until the control plane
// freezes it from the variables in force (at its first start after the
// upgrade); until then it runs the variables in force, as it did.
func (r *Release) Frozen() bool { return r.Variables != nil }

// SecretVersionID names one value a secret variable held: the variable and
// when it was set.
type SecretVersionID string

// SecretVersion is one value a secret variable held, sealed as it was
// (bound to its variable): releases refer to it, so that a release runs the
// value it froze though the variable changed or was deleted since.
type SecretVersion struct {
	ID         SecretVersionID
	TenantID   TenantID
	ProjectID  ProjectID
	VariableID VariableID
	Sealed     string
	CreatedAt  time.Time
}

// Version names the value a secret variable holds now.
func (v *Variable) Version() SecretVersionID {
	return SecretVersionID(fmt.Sprintf("%s@%d", v.ID, v.UpdatedAt.UnixMicro()))
}

// SecretVersion is the version of the value a secret variable holds now.
func (v *Variable) SecretVersion() *SecretVersion {
	return &SecretVersion{ID: v.Version(), TenantID: v.TenantID, ProjectID: v.ProjectID, VariableID: v.ID,
		Sealed: v.Value, CreatedAt: v.UpdatedAt}
}

// Binding is what the sealed value is bound to: its variable's row.
func (s *SecretVersion) Binding() string { return "variable:" + string(s.VariableID) }

// ConfigChangeKind says how a named part of a release's configuration
// differs from another release's.
type ConfigChangeKind string

const (
	ConfigAdded   ConfigChangeKind = "ADDED"
	ConfigChanged ConfigChangeKind = "CHANGED"
	ConfigRemoved ConfigChangeKind = "REMOVED"
)

// ConfigChange is one named part (a process, a domain's host, a variable)
// that differs.
type ConfigChange struct {
	Name   string
	Change ConfigChangeKind
	// Secret: a variable that is or was a secret (never with a value).
	Secret bool
}

// ImageChange is an image reference that differs.
type ImageChange struct{ From, To string }

// ReleaseDiff is what changed from release From to release To.
type ReleaseDiff struct {
	From, To  *Release
	Image     *ImageChange
	Processes []ConfigChange
	Domains   []ConfigChange
	Variables []ConfigChange
}

// DiffReleases is what changed from one release to another, each list in
// name order. A secret is CHANGED when its version differs: its value is
// never compared or shown.
func DiffReleases(from, to *Release) ReleaseDiff {
	d := ReleaseDiff{From: from, To: to}
	if a, b := from.Image+"@"+from.ImageDigest, to.Image+"@"+to.ImageDigest; a != b {
		d.Image = &ImageChange{From: a, To: b}
	}
	d.Processes = diffNamed(from.Processes, to.Processes, func(p Process) string { return p.Name },
		Process.Equal, nil)
	d.Domains = diffNamed(from.Domains, to.Domains, func(x Domain) string { return x.Host },
		func(a, b Domain) bool { return a == b }, nil)
	d.Variables = diffNamed(from.Variables, to.Variables, func(v ReleaseVariable) string { return v.Name },
		func(a, b ReleaseVariable) bool { return a == b }, func(v ReleaseVariable) bool { return v.Secret })
	return d
}

// Equal reports whether two processes run the same (their pointers
// followed).
func (p Process) Equal(o Process) bool {
	return p.Name == o.Name && p.Replicas == o.Replicas && slices.Equal(p.Command, o.Command) &&
		samePtr(p.Port, o.Port) && p.ReadinessProbe.equal(o.ReadinessProbe)
}

func (p *Probe) equal(o *Probe) bool {
	if p == nil || o == nil {
		return p == o
	}
	return samePtr(p.Path, o.Path) && p.Port == o.Port && p.InitialDelaySeconds == o.InitialDelaySeconds &&
		p.PeriodSeconds == o.PeriodSeconds
}

func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// diffNamed compares two lists by name: added, changed (same reports
// false) and removed, in name order; secret marks an item as secret.
func diffNamed[T any](from, to []T, name func(T) string, same func(a, b T) bool, secret func(T) bool) []ConfigChange {
	before := map[string]T{}
	for _, x := range from {
		before[name(x)] = x
	}
	out := []ConfigChange{}
	isSecret := func(xs ...T) bool {
		for _, x := range xs {
			if secret != nil && secret(x) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for _, x := range to {
		n := name(x)
		seen[n] = true
		switch b, ok := before[n]; {
		case !ok:
			out = append(out, ConfigChange{Name: n, Change: ConfigAdded, Secret: isSecret(x)})
		case !same(b, x):
			out = append(out, ConfigChange{Name: n, Change: ConfigChanged, Secret: isSecret(b, x)})
		}
	}
	for _, x := range from {
		if n := name(x); !seen[n] {
			out = append(out, ConfigChange{Name: n, Change: ConfigRemoved, Secret: isSecret(x)})
		}
	}
	slices.SortFunc(out, func(a, b ConfigChange) int { return strings.Compare(a.Name, b.Name) })
	return out
}
