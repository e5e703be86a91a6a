package desired

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
)

// Object names one Kubernetes object a state asks the agent for.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Objects lists the Kubernetes objects of a state with a fingerprint of
// each one's content: a Namespace per environment, per service a
// Deployment per process per release, a Service per process with a port,
// a Secret with its variables, an Ingress for its domains. Held services
// contribute nothing: the agent leaves what runs for them as it is.
func (s State) Objects() map[Object]string {
	out := map[Object]string{}
	for o, e := range s.objects() {
		out[o] = e.hash
	}
	return out
}

type entry struct {
	hash    string
	service string // "namespace/service" that owns the object; "" for a namespace
}

func (s State) objects() map[Object]entry {
	out := map[Object]entry{}
	for _, ns := range s.Namespaces {
		out[Object{Kind: "Namespace", Name: ns.Name}] = entry{hash: fingerprint(ns.Name)}
		for _, svc := range ns.Services {
			owner := ns.Name + "/" + svc.Name
			for _, pr := range svc.Processes {
				out[Object{"Deployment", ns.Name, DeploymentName(svc.Name, pr.Name, svc.Release)}] =
					entry{fingerprint(pr, svc.Image, svc.Env), owner}
				if pr.Port != nil {
					out[Object{"Service", ns.Name, ServiceName(svc.Name, pr.Name)}] = entry{fingerprint(*pr.Port, svc.Release), owner}
				}
			}
			if len(svc.Env) > 0 {
				// Secret values count through their versions only.
				out[Object{"Secret", ns.Name, SecretName(svc.Name, svc.Release)}] = entry{fingerprint(redactEnv(svc.Env)), owner}
			}
			if len(svc.Domains) > 0 {
				out[Object{"Ingress", ns.Name, IngressName(svc.Name)}] = entry{fingerprint(svc.Domains), owner}
			}
		}
	}
	return out
}

func redactEnv(env []EnvVar) []EnvVar {
	out := slices.Clone(env)
	for i := range out {
		if out[i].Secret {
			out[i].Value = Redacted
		}
	}
	return out
}

func fingerprint(parts ...any) string {
	b, err := json.Marshal(parts)
	if err != nil {
		panic(fmt.Sprintf("fingerprinting: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// HeldService is a held service and where.
type HeldService struct {
	Namespace string `json:"namespace"`
	Service   string `json:"service"`
	Reason    string `json:"reason"`
}

// Diff is what going from one state to another changes.
type Diff struct {
	Added, Changed, Removed []Object
	// NowHeld are services the new state holds and the old did not;
	// Released the reverse.
	NowHeld, Released []HeldService
}

// Empty reports whether nothing changes.
func (d Diff) Empty() bool {
	return len(d.Added)+len(d.Changed)+len(d.Removed)+len(d.NowHeld)+len(d.Released) == 0
}

// Compare diffs two states of one cluster. The objects of a service the new
// state holds are neither changed nor removed: the agent leaves them as
// they run.
func Compare(from, to State) Diff {
	var d Diff
	a, b := from.objects(), to.objects()
	ha, hb := held(from), held(to)
	for o, e := range b {
		switch old, ok := a[o]; {
		case !ok:
			d.Added = append(d.Added, o)
		case old.hash != e.hash:
			d.Changed = append(d.Changed, o)
		}
	}
	for o, e := range a {
		if _, ok := b[o]; !ok {
			if _, frozen := hb[e.service]; !frozen || e.service == "" {
				d.Removed = append(d.Removed, o)
			}
		}
	}
	for k, h := range hb {
		if _, ok := ha[k]; !ok {
			d.NowHeld = append(d.NowHeld, h)
		}
	}
	for k, h := range ha {
		if _, ok := hb[k]; !ok {
			d.Released = append(d.Released, h)
		}
	}
	for _, l := range [][]Object{d.Added, d.Changed, d.Removed} {
		slices.SortFunc(l, func(x, y Object) int {
			return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Name, y.Name))
		})
	}
	for _, l := range [][]HeldService{d.NowHeld, d.Released} {
		slices.SortFunc(l, func(x, y HeldService) int {
			return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Service, y.Service))
		})
	}
	return d
}

func held(s State) map[string]HeldService {
	out := map[string]HeldService{}
	for _, ns := range s.Namespaces {
		for _, h := range ns.Held {
			out[ns.Name+"/"+h.Name] = HeldService{Namespace: ns.Name, Service: h.Name, Reason: h.Reason}
		}
	}
	return out
}
