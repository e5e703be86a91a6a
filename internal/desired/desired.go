// Package desired compiles a cluster's desired state: a pure function from
// stored rows to everything that cluster should run — every environment of
// every project placed on it, with namespaces, the processes of each
// service's current release, domains, variables (secrets already opened for
// delivery to that cluster's agent) and the services that are held, with
// the reason.
//
// It does no I/O and reads no clock: the same input always compiles to the
// same state and the same hash. It never decides authorization; callers
// give it only rows of the cluster's tenant.
package desired

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nebulactrl/nebula/internal/model"
)

// Scope of a variable: the narrower one overrides.
type Scope int

const (
	ScopeProject Scope = iota
	ScopeEnvironment
	ScopeService
)

// Variable is one variable row as the compiler sees it.
type Variable struct {
	Scope       Scope
	Environment model.EnvironmentID // for ScopeEnvironment
	Service     model.ServiceID     // for ScopeService
	Name        string
	Value       string // opened, for a readable secret
	Secret      bool
	// Version identifies a secret's value without revealing it, so that a
	// new secret value changes the state's hash though the hash never
	// covers the value itself.
	Version string
	// Unreadable is set for a secret that did not open (wrong or missing
	// master key): its services are held, never given an empty value.
	Unreadable string
}

// Project is a project with what the compiler needs of it.
type Project struct {
	Project      model.Project
	Environments []model.Environment
	Services     []model.Service
	Variables    []Variable
	// Current is the current release of each service in each environment,
	// and Deployments the deployment that made it current.
	Current     map[model.EnvironmentID]map[model.ServiceID]*model.Release
	Deployments map[model.EnvironmentID]map[model.ServiceID]model.DeploymentID
	// Frozen are the variables of each current release that froze them,
	// secrets opened (Release.Variables, in name order).
	Frozen map[model.ReleaseID][]Variable
}

// Input is everything of a tenant that can land on one cluster.
type Input struct {
	Cluster  model.Cluster
	Clusters []model.Cluster         // every cluster of the tenant, for placement
	Targets  []model.NamespaceTarget // every namespace target of the tenant
	Projects []Project
}

// State is a cluster's whole desired state.
type State struct {
	Cluster    model.ClusterID `json:"cluster"`
	Namespaces []Namespace     `json:"namespaces"`
	// Unplaced lists environments whose selectors pick this cluster but
	// whose namespace could not be decided.
	Unplaced []Unplaced `json:"unplaced"`
}

// Namespace holds one environment of one project.
type Namespace struct {
	Name        string              `json:"name"`
	Project     string              `json:"project"`
	Environment string              `json:"environment"`
	EnvID       model.EnvironmentID `json:"environmentId"`
	Services    []Service           `json:"services"`
	Held        []Held              `json:"held"`
}

// Service is what runs for one service: its current release.
type Service struct {
	Name      string          `json:"name"`
	ID        model.ServiceID `json:"id"`
	Release   int             `json:"release"`
	ReleaseID model.ReleaseID `json:"releaseId"`
	// Deployment made this release current; the agent reports the stages
	// of rolling it out under this id.
	Deployment model.DeploymentID `json:"deployment,omitempty"`
	Image      string             `json:"image"`
	Processes  []Process          `json:"processes"`
	Env        []EnvVar           `json:"env"`
	Domains    []Domain           `json:"domains"`
	// shown is the service's canonical JSON, secrets redacted, when a
	// Compiler kept it (incremental.go): Shown and Hash copy it.
	shown []byte
}

type Process struct {
	Name     string       `json:"name"`
	Command  []string     `json:"command"`
	Replicas int          `json:"replicas"`
	Port     *int         `json:"port,omitempty"`
	Probe    *model.Probe `json:"readinessProbe,omitempty"`
}

type EnvVar struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Secret  bool   `json:"secret,omitempty"`
	Version string `json:"version,omitempty"`
}

type Domain struct {
	Host    string `json:"host"`
	Process string `json:"process"`
	Port    int    `json:"port"`
}

// Held is a service the agent must leave exactly as it runs now.
type Held struct {
	Name   string          `json:"name"`
	ID     model.ServiceID `json:"id"`
	Reason string          `json:"reason"`
}

type Unplaced struct {
	Project     string `json:"project"`
	Environment string `json:"environment"`
	Reason      string `json:"reason"`
}

// Redacted is the value shown in place of a secret outside delivery.
const Redacted = "<redacted>"

// Compile computes the desired state of in.Cluster.
func Compile(in Input) State { return (*Compiler)(nil).Compile(in) }

// Compile computes the desired state of in.Cluster, reusing what c
// compiled before from the same inputs (incremental.go); a nil Compiler
// keeps nothing.
func (c *Compiler) Compile(in Input) State {
	st := State{Cluster: in.Cluster.ID, Namespaces: []Namespace{}, Unplaced: []Unplaced{}}
	projects := slices.Clone(in.Projects)
	slices.SortFunc(projects, func(a, b Project) int { return cmp.Compare(a.Project.Name, b.Project.Name) })
	for _, p := range projects {
		var ix *projectIndex // made when an environment of the project lands here
		envs := slices.Clone(p.Environments)
		slices.SortFunc(envs, func(a, b model.Environment) int { return cmp.Compare(a.Name, b.Name) })
		for _, env := range envs {
			// An environment whose selector does not match this cluster
			// cannot land on it; only the ones that do need full placement.
			if !in.Cluster.Labels.Matches(env.ClusterSelector) {
				continue
			}
			pl := Place(env, in.Clusters, in.Targets)
			if pl.Cluster == nil || pl.Cluster.ID != in.Cluster.ID {
				// An environment that picks this cluster but lands nowhere is
				// reported here, so the cluster's owners see why.
				if pl.Cluster == nil && isCandidate(pl, in.Cluster.ID) {
					st.Unplaced = append(st.Unplaced, Unplaced{Project: p.Project.Name, Environment: env.Name, Reason: pl.Reason})
				}
				continue
			}
			if ix == nil {
				ix = indexProject(p)
			}
			st.Namespaces = append(st.Namespaces, c.namespace(ix, env, pl.Namespace))
		}
	}
	return st
}

func isCandidate(pl Placement, c model.ClusterID) bool {
	return slices.ContainsFunc(pl.Candidates, func(x model.Cluster) bool { return x.ID == c })
}

// Placement is where an environment lands: one cluster and a namespace on
// it, or the reason it lands nowhere.
type Placement struct {
	Cluster    *model.Cluster
	Namespace  string
	Candidates []model.Cluster
	Reason     string
}

// Place applies an environment's selectors. Exactly one cluster must match;
// on it, an empty namespace selector means the namespace <project-env>…
// named by the caller; otherwise exactly one namespace target must match.
// Anything else is explained, never guessed.
func Place(env model.Environment, clusters []model.Cluster, targets []model.NamespaceTarget) Placement {
	var pl Placement
	for _, c := range clusters {
		if c.Labels.Matches(env.ClusterSelector) {
			pl.Candidates = append(pl.Candidates, c)
		}
	}
	slices.SortFunc(pl.Candidates, func(a, b model.Cluster) int { return cmp.Compare(a.Name, b.Name) })
	switch len(pl.Candidates) {
	case 0:
		pl.Reason = fmt.Sprintf("no cluster carries every label of the cluster selector %s", labelString(env.ClusterSelector))
		return pl
	case 1:
	default:
		names := make([]string, len(pl.Candidates))
		for i, c := range pl.Candidates {
			names[i] = c.Name
		}
		pl.Reason = fmt.Sprintf("the cluster selector %s picks %d clusters (%s); it must pick exactly one",
			labelString(env.ClusterSelector), len(names), strings.Join(names, ", "))
		return pl
	}
	c := pl.Candidates[0]
	if len(env.NamespaceSelector) == 0 {
		pl.Cluster = &c
		return pl
	}
	var matches []string
	for _, t := range targets {
		if t.ClusterID == c.ID && t.Labels.Matches(env.NamespaceSelector) {
			matches = append(matches, t.Namespace)
		}
	}
	slices.Sort(matches)
	switch len(matches) {
	case 1:
		pl.Cluster, pl.Namespace = &c, matches[0]
	case 0:
		pl.Reason = fmt.Sprintf("no namespace target on cluster %s carries every label of the namespace selector %s",
			c.Name, labelString(env.NamespaceSelector))
	default:
		pl.Reason = fmt.Sprintf("the namespace selector %s picks %d namespaces on cluster %s (%s); it must pick exactly one",
			labelString(env.NamespaceSelector), len(matches), c.Name, strings.Join(matches, ", "))
	}
	return pl
}

// DefaultNamespace is the namespace of an environment without a namespace
// selector.
func DefaultNamespace(project, env string) string {
	ns := project + "-" + env
	if len(ns) > 63 {
		sum := sha256.Sum256([]byte(ns))
		ns = strings.TrimRight(ns[:54], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	return ns
}

// projectIndex is what every environment of a project compiles from:
// its services by name and in name order, its variables by scope sorted
// by name. Made once per compile of a project, not per environment.
type projectIndex struct {
	p           Project
	services    []model.Service // by name
	byName      map[string]*model.Service
	byID        map[model.ServiceID]*model.Service
	projectVars []Variable
	envVars     map[model.EnvironmentID][]Variable
	serviceVars map[model.ServiceID][]Variable
}

func indexProject(p Project) *projectIndex {
	ix := &projectIndex{p: p, services: slices.Clone(p.Services), byName: make(map[string]*model.Service, len(p.Services)),
		byID:    make(map[model.ServiceID]*model.Service, len(p.Services)),
		envVars: map[model.EnvironmentID][]Variable{}, serviceVars: map[model.ServiceID][]Variable{}}
	slices.SortFunc(ix.services, func(a, b model.Service) int { return cmp.Compare(a.Name, b.Name) })
	for i := range ix.services {
		ix.byName[ix.services[i].Name] = &ix.services[i]
		ix.byID[ix.services[i].ID] = &ix.services[i]
	}
	for _, v := range p.Variables {
		switch v.Scope {
		case ScopeProject:
			ix.projectVars = append(ix.projectVars, v)
		case ScopeEnvironment:
			ix.envVars[v.Environment] = append(ix.envVars[v.Environment], v)
		case ScopeService:
			ix.serviceVars[v.Service] = append(ix.serviceVars[v.Service], v)
		}
	}
	byName := func(a, b Variable) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortStableFunc(ix.projectVars, byName)
	for _, vs := range ix.envVars {
		slices.SortStableFunc(vs, byName)
	}
	for _, vs := range ix.serviceVars {
		slices.SortStableFunc(vs, byName)
	}
	return ix
}

// compileNamespace compiles one environment into its namespace ns;
// given old, what compiled there before (incremental.go), it reuses every
// service whose inputs did not change and records what it compiled in
// next. old and next are nil when nothing is kept.
func compileNamespace(ix *projectIndex, env model.Environment, ns string, old, next *space) Namespace {
	p := ix.p
	out := Namespace{Name: ns, Project: p.Project.Name, Environment: env.Name, EnvID: env.ID, Services: make([]Service, 0, len(p.Current[env.ID])), Held: []Held{}}
	current := p.Current[env.ID]
	r := &resolver{ix: ix, env: env, ns: ns, current: current, done: make(map[model.ServiceID][]EnvVar, len(ix.services)), old: old, next: next}
	for _, svc := range ix.services {
		rel := current[svc.ID]
		if rel == nil {
			continue // never released here: nothing to run
		}
		vars, err := r.variables(svc.ID, nil)
		if err != nil {
			out.Held = append(out.Held, Held{Name: svc.Name, ID: svc.ID, Reason: err.Error()})
			continue
		}
		if e := next.entry(svc.ID); e != nil && e.out != nil {
			out.Services = append(out.Services, *e.out) // reused
			continue
		}
		cs := compileService(svc, rel, vars)
		cs.Deployment = p.Deployments[env.ID][svc.ID]
		r.keep(svc.ID, &cs)
		out.Services = append(out.Services, cs)
	}
	return out
}

func compileService(svc model.Service, rel *model.Release, vars []EnvVar) Service {
	out := Service{Name: svc.Name, ID: svc.ID, Release: rel.Number, ReleaseID: rel.ID,
		Image: rel.Image + "@" + rel.ImageDigest, Processes: make([]Process, 0, len(rel.Processes)), Env: vars, Domains: []Domain{}}
	for _, pr := range rel.Processes {
		out.Processes = append(out.Processes, Process{Name: pr.Name, Command: orEmpty(pr.Command), Replicas: pr.Replicas, Port: pr.Port, Probe: pr.ReadinessProbe})
	}
	// The port of a process by name (the last process of the name that
	// has one).
	port := func(process string) (int, bool) {
		p, ok := 0, false
		for _, pr := range rel.Processes {
			if pr.Name == process && pr.Port != nil {
				p, ok = *pr.Port, true
			}
		}
		return p, ok
	}
	slices.SortFunc(out.Processes, func(a, b Process) int { return cmp.Compare(a.Name, b.Name) })
	for _, d := range domainsOf(&svc, rel) {
		if port, ok := port(d.Process); ok {
			out.Domains = append(out.Domains, Domain{Host: d.Host, Process: d.Process, Port: port})
		}
	}
	slices.SortFunc(out.Domains, func(a, b Domain) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

type resolver struct {
	ix      *projectIndex
	env     model.Environment
	ns      string
	current map[model.ServiceID]*model.Release
	// done caches the variables of services that compiled: a service that
	// compiles from one reference path compiles from every path.
	done map[model.ServiceID][]EnvVar
	// old is what compiled in this namespace before, next what compiles
	// now (incremental.go); unchanged says, per service looked at, whether
	// its entry in old still holds.
	old, next *space
	unchanged map[model.ServiceID]bool
}

// merged walks a service's variables, one per name in name order, the
// narrowest scope's where several set a name: the three sorted lists
// merged as they are read, so nothing is copied. Of a name set twice in
// one scope, the last row counts, as it did when a map was filled in row
// order.
type merged struct {
	lists [3][]Variable // project, environment, service: narrower later
	idx   [3]int
}

// merged walks the variables svc compiles with: those its release in
// force froze, or the rows in force for a release that froze none.
func (r *resolver) merged(svc model.ServiceID) merged {
	if rel := r.current[svc]; rel != nil && rel.Frozen() {
		return merged{lists: [3][]Variable{nil, nil, r.ix.p.Frozen[rel.ID]}}
	}
	return merged{lists: [3][]Variable{r.ix.projectVars, r.ix.envVars[r.env.ID], r.ix.serviceVars[svc]}}
}

// size is how many variables the walk can yield at most.
func (m *merged) size() int { return len(m.lists[0]) + len(m.lists[1]) + len(m.lists[2]) }

// next is the next variable, or nil at the end.
func (m *merged) next() *Variable {
	// The smallest name at the heads of the lists.
	name, found := "", false
	for l := range m.lists {
		if m.idx[l] < len(m.lists[l]) && (!found || m.lists[l][m.idx[l]].Name < name) {
			name, found = m.lists[l][m.idx[l]].Name, true
		}
	}
	if !found {
		return nil
	}
	var pick *Variable
	for l := range m.lists {
		for m.idx[l] < len(m.lists[l]) && m.lists[l][m.idx[l]].Name == name {
			pick = &m.lists[l][m.idx[l]]
			m.idx[l]++
		}
	}
	return pick
}

func (r *resolver) variables(svc model.ServiceID, seen []model.ServiceID) ([]EnvVar, error) {
	if slices.Contains(seen, svc) {
		return nil, fmt.Errorf("variable references form a cycle through %s", r.nameOf(svc))
	}
	if vars, ok := r.done[svc]; ok {
		return vars, nil
	}
	if e := r.reusable(svc); e != nil {
		return e.vars, nil
	}
	seen = append(seen, svc)
	var deps []dep // what the values referred to, when the result is kept
	m := r.merged(svc)
	out := make([]EnvVar, 0, m.size())
	for v := m.next(); v != nil; v = m.next() {
		n := v.Name
		if v.Unreadable != "" {
			return nil, fmt.Errorf("secret %s cannot be opened: %s", n, v.Unreadable)
		}
		val, secrets, err := r.expand(v.Value, seen, &deps)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", n, err)
		}
		ev := EnvVar{Name: n, Value: val, Secret: v.Secret, Version: v.Version}
		if len(secrets) > 0 {
			// A value that takes in a secret is as secret as it: redacted
			// when shown, and versioned by what it took in (and, for a plain
			// template, by the template itself), so that the hash follows
			// every change without covering the secret.
			ev.Secret = true
			parts := append([]string{v.Version}, secrets...)
			if !v.Secret {
				parts[0] = fingerprint(v.Value)
			}
			ev.Version = strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), "+")
		}
		out = append(out, ev)
	}
	r.done[svc] = out
	r.record(svc, out, deps)
	return out, nil
}

func (r *resolver) nameOf(id model.ServiceID) string {
	if s := r.ix.byID[id]; s != nil {
		return s.Name
	}
	return string(id)
}

// expand replaces the references in val (references.go). It also returns
// the versions of the secrets the value took in.
func (r *resolver) expand(val string, seen []model.ServiceID, deps *[]dep) (string, []string, error) {
	ref, ok := nextReference(val, 0)
	if !ok {
		return val, nil, nil
	}
	var firstErr error
	var secrets []string
	var b strings.Builder
	b.Grow(len(val) + 32)
	last := 0
	for ok {
		b.WriteString(val[last:ref.start])
		b.WriteString(r.resolve(ref, seen, &secrets, &firstErr, deps))
		last = ref.end
		ref, ok = nextReference(val, ref.end)
	}
	b.WriteString(val[last:])
	return b.String(), secrets, firstErr
}

// resolve is what one reference stands for; a reference that cannot be
// resolved is "" and its error the first one kept.
func (r *resolver) resolve(ref reference, seen []model.ServiceID, secrets *[]string, firstErr *error, deps *[]dep) string {
	target, ok := r.ix.byName[ref.service]
	if !ok {
		*firstErr = cmp.Or(*firstErr, fmt.Errorf("references service %s, which does not exist in project %s", ref.service, r.ix.p.Project.Name))
		return ""
	}
	if r.next != nil {
		*deps = append(*deps, dep{name: ref.service, id: target.ID})
	}
	if ref.variable != "" {
		vars, err := r.variables(target.ID, seen)
		if err != nil {
			*firstErr = cmp.Or(*firstErr, fmt.Errorf("references service %s, which cannot compile: %w", ref.service, err))
			return ""
		}
		for _, v := range vars {
			if v.Name == ref.variable {
				if v.Secret {
					*secrets = append(*secrets, v.Version)
				}
				return v.Value
			}
		}
		*firstErr = cmp.Or(*firstErr, fmt.Errorf("references variable %s of service %s, which it does not have", ref.variable, ref.service))
		return ""
	}
	rel := r.current[target.ID]
	if rel == nil {
		*firstErr = cmp.Or(*firstErr, fmt.Errorf("references service %s, which has no release in environment %s", ref.service, r.env.Name))
		return ""
	}
	port, proc, ok := servingPort(rel)
	if !ok {
		*firstErr = cmp.Or(*firstErr, fmt.Errorf("references the address of service %s, none of whose processes has a port", ref.service))
		return ""
	}
	host := ServiceName(ref.service, proc) + "." + r.ns + ".svc.cluster.local"
	switch ref.what {
	case "port":
		return strconv.Itoa(port)
	case "host":
		return host
	default:
		return "http://" + host + ":" + strconv.Itoa(port)
	}
}

// servingPort picks the port a service is reached on: its "web" process,
// else the first process (by name) that has one.
func servingPort(rel *model.Release) (int, string, bool) {
	var pick *model.Process
	for i := range rel.Processes {
		p := &rel.Processes[i]
		if p.Port == nil {
			continue
		}
		if p.Name == "web" {
			return *p.Port, p.Name, true
		}
		if pick == nil || p.Name < pick.Name {
			pick = p
		}
	}
	if pick == nil {
		return 0, "", false
	}
	return *pick.Port, pick.Name, true
}

// Redact returns a copy with every secret value replaced, for showing.
func (s State) Redact() State {
	out := s
	out.Namespaces = make([]Namespace, len(s.Namespaces))
	for i, ns := range s.Namespaces {
		ns.Services = slices.Clone(ns.Services)
		for j, svc := range ns.Services {
			env := slices.Clone(svc.Env)
			for k := range env {
				if env[k].Secret {
					env[k].Value = Redacted
				}
			}
			ns.Services[j].Env = env
		}
		out.Namespaces[i] = ns
	}
	return out
}

func labelString(ls model.Labels) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Key + "=" + l.Value
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
