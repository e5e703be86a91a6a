package desired

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nebulactrl/nebula/internal/model"
)

// Incremental compiling. A mutation changes a few rows of a tenant, and
// every cluster of the tenant is compiled again to see whether its state
// changed. A Compiler keeps, per namespace, what each service compiled to
// together with the inputs it was compiled from, and the next compile
// reuses a service whose inputs are equal to those, value for value:
//
//   - its own: name, domains, the release current in the environment (its
//     id, number, image, digest and processes), the deployment that made it
//     current, and its variables (those its release froze, or, for a
//     release that froze none, the three scopes merged: names, values,
//     secret versions);
//   - those of every service its values referred to, by the same rule (a
//     reference reads the other service's variables or its release's port),
//     found again under the same name with the same id.
//
// What a change feeds is therefore what compiles again: a new release of
// one service recompiles that service and the services that refer to it,
// in its environment only; a project variable recompiles the project.
// A reused service brings its canonical bytes along, so that Shown and
// Hash copy them rather than encode them again. Nothing is reused on
// trust: equal inputs give equal output, and TestCompilerMatchesCompile
// holds the Compiler to Compile's hashes and bytes over random changes.
//
// Services that did not compile (held) are never kept: they are compiled
// again each time, like everything the first time.

// Compiler compiles like Compile, reusing what it compiled before from the
// same inputs. It is safe for concurrent use. The states it returns share
// their services' slices with what it keeps: they are read, never written
// (Redact copies).
type Compiler struct {
	mu     sync.Mutex
	spaces map[spaceKey]*space
	kept   int // services kept in all spaces
	// fresh counts the services compiled afresh, for the tests.
	fresh atomic.Int64
}

// maxKept bounds what a Compiler keeps; past it, it starts afresh.
const maxKept = 1 << 17

// NewCompiler returns a Compiler that keeps nothing yet.
func NewCompiler() *Compiler { return &Compiler{spaces: map[spaceKey]*space{}} }

// spaceKey names what is kept of one environment. Its namespace name is
// checked too: an environment compiled into another namespace (placed
// elsewhere, or previewed) compiles afresh.
type spaceKey struct {
	project model.ProjectID
	env     model.EnvironmentID
}

// space is what compiled in one namespace: each service's inputs and
// output. A space is never changed once a compile stored it.
type space struct {
	ns, project, env string
	entries          map[model.ServiceID]*compiled
	fresh            int64 // of the entries, how many compiled afresh
}

type compiled struct {
	in   inputs
	vars []EnvVar
	deps []dep // the services its values referred to
	out  *Service
}

// dep is a service referred to, by the name the reference used.
type dep struct {
	name string
	id   model.ServiceID
}

// inputs are what a service compiles from, apart from the services it
// refers to.
type inputs struct {
	name       string
	domains    []model.Domain
	released   bool
	release    model.Release // a copy: the one read may be changed later
	deployment model.DeploymentID
	vars       []varInput
}

type varInput struct {
	name, value, version, unreadable string
	secret                           bool
}

func (v *varInput) is(w *Variable) bool {
	return v.name == w.Name && v.value == w.Value && v.version == w.Version && v.unreadable == w.Unreadable && v.secret == w.Secret
}

// namespace compiles one environment into the namespace ns ("" for its
// default), from and into what c keeps.
func (c *Compiler) namespace(ix *projectIndex, env model.Environment, ns string) Namespace {
	if ns == "" {
		ns = DefaultNamespace(ix.p.Project.Name, env.Name)
	}
	if c == nil {
		return compileNamespace(ix, env, ns, nil, nil)
	}
	key := spaceKey{ix.p.Project.ID, env.ID}
	c.mu.Lock()
	old := c.spaces[key]
	c.mu.Unlock()
	if old != nil && (old.ns != ns || old.project != ix.p.Project.Name || old.env != env.Name) {
		old = nil
	}
	next := &space{ns: ns, project: ix.p.Project.Name, env: env.Name, entries: make(map[model.ServiceID]*compiled, len(ix.services))}
	out := compileNamespace(ix, env, ns, old, next)
	c.fresh.Add(next.fresh)
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.spaces[key]; prev != nil {
		c.kept -= len(prev.entries)
	}
	if c.kept+len(next.entries) > maxKept {
		clear(c.spaces)
		c.kept = 0
	}
	c.spaces[key] = next
	c.kept += len(next.entries)
	return out
}

// entry is what compiles now for svc, if anything yet.
func (s *space) entry(svc model.ServiceID) *compiled {
	if s == nil {
		return nil
	}
	return s.entries[svc]
}

// keep stores a service compiled now, with its canonical bytes, in the
// entry its variables made now (an entry carried over from the last
// compile is never changed).
func (r *resolver) keep(svc model.ServiceID, out *Service) {
	e := r.next.entry(svc)
	if e == nil || e == r.old.entry(svc) {
		return
	}
	out.shown = appendService(nil, out, true)
	e.out = out
}

// record keeps the variables a service compiled to now, with what they
// came from.
func (r *resolver) record(svc model.ServiceID, vars []EnvVar, deps []dep) {
	if r.next == nil {
		return
	}
	r.next.fresh++
	r.next.entries[svc] = &compiled{in: r.inputsOf(svc), vars: vars, deps: deps}
}

func (r *resolver) inputsOf(svc model.ServiceID) inputs {
	in := inputs{deployment: r.ix.p.Deployments[r.env.ID][svc]}
	if rel := r.current[svc]; rel != nil {
		in.released, in.release = true, *rel
		in.release.Processes = slices.Clone(rel.Processes)
	}
	if s := r.ix.byID[svc]; s != nil {
		in.name, in.domains = s.Name, slices.Clone(domainsOf(s, r.current[svc]))
	}
	m := r.merged(svc)
	in.vars = make([]varInput, 0, m.size())
	for v := m.next(); v != nil; v = m.next() {
		in.vars = append(in.vars, varInput{name: v.Name, value: v.Value, version: v.Version, unreadable: v.Unreadable, secret: v.Secret})
	}
	return in
}

// reusable is svc's entry from the last compile if it still holds: its
// inputs unchanged and every service it referred to reusable too. An
// entry that holds is carried over into this compile, with those of the
// services it referred to, so that it can be reused again next time.
func (r *resolver) reusable(svc model.ServiceID) *compiled {
	e := r.old.entry(svc)
	if e == nil {
		return nil
	}
	if ok, seen := r.unchanged[svc]; seen {
		if !ok {
			return nil
		}
		return e
	}
	if r.unchanged == nil {
		r.unchanged = map[model.ServiceID]bool{}
	}
	r.unchanged[svc] = false // until shown otherwise; a cycle never holds
	if !r.sameInputs(svc, &e.in) {
		return nil
	}
	for _, d := range e.deps {
		if t := r.ix.byName[d.name]; t == nil || t.ID != d.id || r.reusable(d.id) == nil {
			return nil
		}
	}
	r.unchanged[svc] = true
	r.done[svc] = e.vars
	r.next.entries[svc] = e
	return e
}

func (r *resolver) sameInputs(svc model.ServiceID, in *inputs) bool {
	s := r.ix.byID[svc]
	if s == nil || s.Name != in.name || !slices.Equal(domainsOf(s, r.current[svc]), in.domains) {
		return false
	}
	if r.ix.p.Deployments[r.env.ID][svc] != in.deployment || !sameRelease(r.current[svc], in) {
		return false
	}
	m := r.merged(svc)
	i := 0
	for v := m.next(); v != nil; v = m.next() {
		if i == len(in.vars) || !in.vars[i].is(v) {
			return false
		}
		i++
	}
	return i == len(in.vars)
}

// sameRelease compares releases by what compiling reads of them. Releases
// are immutable once stored but for a digest resolved later; the rest is
// compared anyway, so that reuse never rests on that.
func sameRelease(a *model.Release, in *inputs) bool {
	if a == nil || !in.released {
		return a == nil && !in.released
	}
	b := &in.release
	return a.ID == b.ID && a.Number == b.Number && a.Image == b.Image && a.ImageDigest == b.ImageDigest &&
		slices.EqualFunc(a.Processes, b.Processes, model.Process.Equal)
}
