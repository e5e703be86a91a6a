//go:build linux

package loadrun

import (
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// tracker joins what the mutations made with what agents and subscribers
// received. An arrival can come before the mutation's response that names
// it (a replica tells its own subscribers at commit), so arrivals are
// noted on their own and joined with the mutations once the load is over.
type tracker struct {
	mu      sync.Mutex
	deploys map[model.DeploymentID]deployMark
	values  map[string]valueMark
	// stages holds when an agent reported each deployment SUCCEEDED.
	stages map[model.DeploymentID]time.Time

	agentDeps map[model.DeploymentID]time.Time // first agent state naming it
	agentVals map[string]time.Time             // first agent state holding it
	subs      map[subKey]*subSeen
}

type deployMark struct {
	env        int
	sent, resp time.Time
}

type valueMark struct {
	env  int
	sent time.Time
}

type subKey struct {
	sub int
	dep model.DeploymentID
}

// subSeen is what one subscriber saw of one deployment.
type subSeen struct {
	first, succeeded time.Time
	last             model.DeploymentStage
}

func newTracker() *tracker {
	return &tracker{deploys: map[model.DeploymentID]deployMark{}, values: map[string]valueMark{},
		stages: map[model.DeploymentID]time.Time{}, agentDeps: map[model.DeploymentID]time.Time{},
		agentVals: map[string]time.Time{}, subs: map[subKey]*subSeen{}}
}

func (t *tracker) deployed(dep model.DeploymentID, env int, sent, resp time.Time) {
	t.mu.Lock()
	t.deploys[dep] = deployMark{env: env, sent: sent, resp: resp}
	t.mu.Unlock()
}

func (t *tracker) setValue(value string, env int, sent time.Time) {
	t.mu.Lock()
	t.values[value] = valueMark{env: env, sent: sent}
	t.mu.Unlock()
}

func (t *tracker) stageSent(dep model.DeploymentID, at time.Time) {
	t.mu.Lock()
	t.stages[dep] = at
	t.mu.Unlock()
}

func (t *tracker) agentGot(deps []model.DeploymentID, value string, newValue bool, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range deps {
		if _, ok := t.agentDeps[d]; !ok {
			t.agentDeps[d] = at
		}
	}
	if _, ok := t.agentVals[value]; newValue && !ok {
		t.agentVals[value] = at
	}
}

func (t *tracker) subscriberGot(sub int, dep model.DeploymentID, stage model.DeploymentStage, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := subKey{sub, dep}
	s := t.subs[k]
	if s == nil {
		s = &subSeen{first: at}
		t.subs[k] = s
	}
	if stage == model.StageSucceeded && s.succeeded.IsZero() {
		s.succeeded = at
	}
	s.last = stage
}

// joined is what join found besides the latencies it recorded.
type joined struct {
	// beforeResponse counts subscriber events that arrived before the
	// deploy's response did.
	beforeResponse, subscriberEvents int
	// coalesced counts mutations whose state no agent saw on its own: a
	// newer one to the same cluster came first and its state held both.
	coalesced int
	// superseded counts SUCCEEDED reports whose deployment a subscriber
	// saw end SUPERSEDED instead: a newer deploy won the race.
	superseded int
}

// join records, for the mutations sent inside the window, how long their
// effects took to reach the agents and subscribers, and counts the effects
// that never arrived as missed.
func (t *tracker) join(rec *recorder, w *window, subsOf func(env int) []int) joined {
	t.mu.Lock()
	defer t.mu.Unlock()
	var j joined
	missed := map[string]int{}
	for dep, m := range t.deploys {
		if !w.in(m.sent) {
			continue
		}
		if at, ok := t.agentDeps[dep]; ok {
			rec.latency(kindAgentDeploy, at.Sub(m.sent))
		} else {
			j.coalesced++
		}
		stageAt, reported := t.stages[dep]
		for _, s := range subsOf(m.env) {
			seen := t.subs[subKey{s, dep}]
			if seen == nil {
				missed[kindSubscriberDeploy]++
				continue
			}
			rec.latency(kindSubscriberDeploy, seen.first.Sub(m.sent))
			j.subscriberEvents++
			if seen.first.Before(m.resp) {
				j.beforeResponse++
			}
			switch {
			case !reported:
			case !seen.succeeded.IsZero():
				rec.latency(kindSubscriberStage, seen.succeeded.Sub(stageAt))
			case seen.last == model.StageSuperseded:
				j.superseded++
			default:
				missed[kindSubscriberStage]++
			}
		}
	}
	for v, m := range t.values {
		if !w.in(m.sent) {
			continue
		}
		if at, ok := t.agentVals[v]; ok {
			rec.latency(kindAgentVariable, at.Sub(m.sent))
		} else {
			j.coalesced++
		}
	}
	rec.mu.Lock()
	rec.missed = map[string]int{}
	for k, n := range missed {
		if n > 0 {
			rec.missed[k] = n
		}
	}
	rec.mu.Unlock()
	return j
}
