package desired

import (
	"cmp"
	"slices"

	"github.com/nebulactrl/nebula/internal/model"
)

// A release carries its configuration: the image digest, its service's
// processes and domains, and the variables in force for the service in
// the release's environment, frozen when the release is made (Freeze). The
// compiler compiles what the release in force says: its processes,
// domains and variables, not the service's rows as they are now. A release
// made before releases froze their variables (model.Release.Frozen false)
// compiles from the rows in force, as it always did, until the control
// plane freezes it from them.

// Freeze is what a release of service svc in environment env freezes of
// its project's variables vars: of each name, the narrowest scope's value
// (service, then environment, then project), in name order; a secret by
// its version (the value stays sealed in its version). Never nil.
func Freeze(vars []*model.Variable, svc model.ServiceID, env model.EnvironmentID) []model.ReleaseVariable {
	rank := func(v *model.Variable) int {
		switch {
		case v.ServiceID != nil:
			if *v.ServiceID == svc {
				return 3
			}
		case v.EnvironmentID != nil:
			if *v.EnvironmentID == env {
				return 2
			}
		default:
			return 1
		}
		return 0 // another service's or environment's
	}
	best := map[string]*model.Variable{}
	for _, v := range vars {
		if r := rank(v); r > 0 && (best[v.Name] == nil || r > rank(best[v.Name])) {
			best[v.Name] = v
		}
	}
	out := make([]model.ReleaseVariable, 0, len(best))
	for _, v := range best {
		rv := model.ReleaseVariable{Name: v.Name, Scope: v.Kind()}
		if v.Secret {
			rv.Secret, rv.Version = true, v.Version()
		} else {
			rv.Value = v.Value
		}
		out = append(out, rv)
	}
	slices.SortFunc(out, func(a, b model.ReleaseVariable) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// domainsOf are the domains svc serves under its release rel: the
// release's own when it froze its configuration, the service's otherwise.
func domainsOf(svc *model.Service, rel *model.Release) []model.Domain {
	if rel != nil && rel.Frozen() {
		return rel.Domains
	}
	return svc.Domains
}

// SameConfig reports whether two releases run the same configuration:
// processes, domains and frozen variables (not the image).
func SameConfig(a, b *model.Release) bool {
	return slices.EqualFunc(a.Processes, b.Processes, model.Process.Equal) && slices.Equal(a.Domains, b.Domains) &&
		a.Frozen() == b.Frozen() && slices.Equal(a.Variables, b.Variables)
}
