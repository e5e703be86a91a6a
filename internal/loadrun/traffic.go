//go:build linux

package loadrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/bench"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
)

// The documents of the mix: what a dashboard and a deploy pipeline send.
const (
	nestedQuery = `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: 10) { nodes { id name
  environments(first: 10) { nodes { id name protected
    deployments(first: 1) { nodes { id stage createdAt release { number imageDigest } } } } } } } } } }`
	deploymentQuery = `query($id: ID!) { node(id: $id) { ... on Deployment { id stage blocker message createdAt
  release { number imageDigest } environment { id name } cluster { id name status } } } }`
	clustersQuery = `query($t: ID!, $after: String) { node(id: $t) { ... on Tenant { clusters(first: 50, after: $after) {
  nodes { id name status lastHeartbeatAt desiredRevision appliedRevision } pageInfo { hasNextPage endCursor } } } } }`
	deployMutation = `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
  deployment { id stage } userErrors { message code } } }`
	setVariableMutation = `mutation($p: ID!, $e: ID!, $n: String!, $v: String!) { setVariable(input: {projectId: $p, environmentId: $e, name: $n, value: $v}) {
  variable { id } userErrors { message code } } }`
)

// weighted is one operation of a mix and its share.
type weighted struct {
	weight int
	op     func(d *driver, rng *rand.Rand, seq int) func(ctx context.Context, base string)
}

// The mixes. Queries: the dashboard's overview (the nested query), a
// deployment page, the cluster list. Mutations: deploys and variable
// changes, each landing on one environment and so on one cluster.
var (
	queryMix    = []weighted{{20, (*driver).nestedOp}, {40, (*driver).deploymentOp}, {40, (*driver).clustersOp}}
	mutationMix = []weighted{{60, (*driver).deployOp}, {40, (*driver).setVariableOp}}
)

func pick(mix []weighted, rng *rand.Rand) weighted {
	total := 0
	for _, w := range mix {
		total += w.weight
	}
	n := rng.IntN(total)
	for _, w := range mix {
		if n < w.weight {
			return w
		}
		n -= w.weight
	}
	return mix[len(mix)-1]
}

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

// graphQL posts one operation to base and decodes its data into out. A
// status other than 200, or any entry in errors, is an error.
func (d *driver) graphQL(ctx context.Context, base, token, query string, vars map[string]any, out any) error {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %.300s", resp.Status, bytes.TrimSpace(b))
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decoding the response: %w", err)
	}
	if len(r.Errors) > 0 {
		code, _ := r.Errors[0].Extensions["code"].(string)
		return fmt.Errorf("%d GraphQL errors, the first %q (code %s)", len(r.Errors), r.Errors[0].Message, code)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return fmt.Errorf("decoding the data: %w", err)
	}
	return nil
}

type userErrors []struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

func (u userErrors) err() error {
	if len(u) == 0 {
		return nil
	}
	return fmt.Errorf("user error %s: %s", u[0].Code, u[0].Message)
}

// timed runs a request and records its latency, or its error, under kind.
func (d *driver) timed(kind string, call func() error) {
	sent := time.Now()
	err := call()
	took := time.Since(sent)
	if d.win.in(sent) {
		d.timeline.add(point{at: sent.Sub(time.Unix(0, d.win.start.Load())), took: took,
			mutation: kind == kindDeploy || kind == kindSetVariable, failed: err != nil})
	}
	if err != nil {
		d.rec.fail(kind, err)
		return
	}
	if d.win.in(sent) {
		d.rec.latency(kind, took)
	}
}

type nodeResult struct {
	Node json.RawMessage `json:"node"`
}

func (n nodeResult) err() error {
	if len(n.Node) == 0 || string(n.Node) == "null" {
		return errors.New("node is null")
	}
	return nil
}

// queryOp is a query of kind, made with token, whose node must exist.
func (d *driver) queryOp(kind, token, query string, vars map[string]any) func(context.Context, string) {
	return func(ctx context.Context, base string) {
		d.timed(kind, func() error {
			var out nodeResult
			if err := d.graphQL(ctx, base, token, query, vars, &out); err != nil {
				return err
			}
			return out.err()
		})
	}
}

func (d *driver) nestedOp(rng *rand.Rand, _ int) func(context.Context, string) {
	t := d.seed.Tenants[rng.IntN(len(d.seed.Tenants))]
	return d.queryOp(kindNested, t.Token, nestedQuery, map[string]any{"t": t.ID})
}

func (d *driver) deploymentOp(rng *rand.Rand, _ int) func(context.Context, string) {
	dep := d.recent.pick(rng)
	return d.queryOp(kindDeployment, d.seed.Tenants[dep.Tenant].Token, deploymentQuery, map[string]any{"id": dep.ID})
}

func (d *driver) clustersOp(rng *rand.Rand, _ int) func(context.Context, string) {
	t := d.seed.Tenants[rng.IntN(len(d.seed.Tenants))]
	return d.queryOp(kindClusters, t.Token, clustersQuery, map[string]any{"t": t.ID})
}

func (d *driver) deployOp(rng *rand.Rand, seq int) func(context.Context, string) {
	env := rng.IntN(len(d.seed.Envs))
	svc := d.seed.Projects[d.seed.Envs[env].Project].Services[rng.IntN(len(serviceNames))]
	tenant := d.seed.tenantOf(env)
	digest := bench.Digest(fmt.Sprintf("load/%d", seq))
	return func(ctx context.Context, base string) {
		sent := time.Now()
		d.timed(kindDeploy, func() error {
			var out struct {
				Deploy struct {
					Deployment *struct {
						ID string `json:"id"`
					} `json:"deployment"`
					UserErrors userErrors `json:"userErrors"`
				} `json:"deploy"`
			}
			if err := d.graphQL(ctx, base, d.seed.Tenants[tenant].Token, deployMutation, map[string]any{"s": svc, "e": d.seed.Envs[env].ID, "d": digest}, &out); err != nil {
				return err
			}
			if err := out.Deploy.UserErrors.err(); err != nil {
				return err
			}
			if out.Deploy.Deployment == nil {
				return errors.New("deploy returned no deployment")
			}
			kind, raw, err := gid.Parse(out.Deploy.Deployment.ID)
			if err != nil || kind != gid.Deployment {
				return fmt.Errorf("deploy returned %q, not a deployment id", out.Deploy.Deployment.ID)
			}
			d.track.deployed(model.DeploymentID(raw), env, sent, time.Now())
			d.recent.add(Owned{ID: out.Deploy.Deployment.ID, Tenant: tenant})
			return nil
		})
	}
}

func (d *driver) setVariableOp(rng *rand.Rand, seq int) func(context.Context, string) {
	env := rng.IntN(len(d.seed.Envs))
	e := d.seed.Envs[env]
	value := fmt.Sprintf("v%d", seq)
	return func(ctx context.Context, base string) {
		sent := time.Now()
		d.timed(kindSetVariable, func() error {
			var out struct {
				SetVariable struct {
					Variable *struct {
						ID string `json:"id"`
					} `json:"variable"`
					UserErrors userErrors `json:"userErrors"`
				} `json:"setVariable"`
			}
			vars := map[string]any{"p": d.seed.Projects[e.Project].ID, "e": e.ID, "n": loadVariable, "v": value}
			if err := d.graphQL(ctx, base, d.seed.Tenants[d.seed.tenantOf(env)].Token, setVariableMutation, vars, &out); err != nil {
				return err
			}
			if err := out.SetVariable.UserErrors.err(); err != nil {
				return err
			}
			if out.SetVariable.Variable == nil {
				return errors.New("setVariable returned no variable")
			}
			d.track.setValue(value, env, sent)
			return nil
		})
	}
}

// ring holds the newest deployments, for the by-id query.
type ring struct {
	mu  sync.Mutex
	ids []Owned
	at  int
}

func newRing(seed []Owned, size int) *ring {
	r := &ring{ids: make([]Owned, 0, size)}
	for _, id := range seed {
		r.add(id)
	}
	return r
}

func (r *ring) add(id Owned) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ids) < cap(r.ids) {
		r.ids = append(r.ids, id)
		return
	}
	r.ids[r.at] = id
	r.at = (r.at + 1) % len(r.ids)
}

func (r *ring) pick(rng *rand.Rand) Owned {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[rng.IntN(len(r.ids))]
}

// lateness is how far behind its schedule an open loop started requests.
type lateness struct {
	Scheduled, Late int
	Max             time.Duration
}

// Open-loop bounds: a request that starts more than lateAfter after its
// slot counts as late; more than maxInFlight requests of one loop at once
// means the server no longer keeps up, and further ones fail rather than
// pile up without bound.
const (
	lateAfter      = 10 * time.Millisecond
	maxInFlight    = 2000
	requestTimeout = 30 * time.Second
)

// openLoop starts mix's operations at rate per second on a fixed schedule,
// whatever the earlier ones are doing, alternating between the replicas,
// until ctx ends; then it waits for the requests in flight. A rate of 0
// sends nothing. The rate ramps up from a tenth over ramp (the first half
// of the warm-up), so that the start alone (caches cold, pools opening)
// does not leave a backlog that a nearly busy system never works off. The choice of
// each operation is drawn from a seeded generator, so runs repeat it.
func (d *driver) openLoop(ctx context.Context, name string, rate float64, ramp time.Duration, mix []weighted, seed uint64) lateness {
	var l lateness
	if rate <= 0 {
		return l // this loop is switched off
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	start := time.Now()
	at := start
	timer := time.NewTimer(0)
	defer timer.Stop()
	var running int
	var mu sync.Mutex
	for i := 0; ; i++ {
		r := rate
		if since := at.Sub(start); since < ramp {
			r = rate * (0.1 + 0.9*float64(since)/float64(ramp))
		}
		at = at.Add(time.Duration(float64(time.Second) / r))
		timer.Reset(time.Until(at))
		select {
		case <-ctx.Done():
			return l
		case <-timer.C:
		}
		op := pick(mix, rng).op(d, rng, i)
		inWindow := d.win.in(at)
		if inWindow {
			l.Scheduled++
			if late := time.Since(at); late > lateAfter {
				l.Late++
				l.Max = max(l.Max, late)
			}
		}
		mu.Lock()
		full := running >= maxInFlight
		if !full {
			running++
		}
		mu.Unlock()
		if full {
			d.rec.fail(name, fmt.Errorf("over %d requests in flight: the replicas do not keep up", maxInFlight))
			continue
		}
		base := d.replicas[i%len(d.replicas)].URL
		wg.Go(func() {
			defer func() {
				mu.Lock()
				running--
				mu.Unlock()
			}()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
			defer cancel()
			op(rctx, base)
		})
	}
}

// clusterRow is one cluster as the cluster list shows it.
type clusterRow struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	Status          string `json:"status"`
	DesiredRevision int64  `json:"desiredRevision"`
	AppliedRevision int64  `json:"appliedRevision"`
}

// clusters reads every cluster of every tenant through the API, page by
// page.
func (d *driver) clusters(ctx context.Context, base string) ([]clusterRow, error) {
	var all []clusterRow
	for _, t := range d.seed.Tenants {
		rows, err := d.tenantClusters(ctx, base, t)
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	return all, nil
}

func (d *driver) tenantClusters(ctx context.Context, base string, t Tenant) ([]clusterRow, error) {
	var all []clusterRow
	var after any
	for {
		var out struct {
			Node struct {
				Clusters struct {
					Nodes    []clusterRow `json:"nodes"`
					PageInfo struct {
						HasNextPage bool   `json:"hasNextPage"`
						EndCursor   string `json:"endCursor"`
					} `json:"pageInfo"`
				} `json:"clusters"`
			} `json:"node"`
		}
		if err := d.graphQL(ctx, base, t.Token, clustersQuery, map[string]any{"t": t.ID, "after": after}, &out); err != nil {
			return nil, err
		}
		all = append(all, out.Node.Clusters.Nodes...)
		if !out.Node.Clusters.PageInfo.HasNextPage {
			return all, nil
		}
		after = out.Node.Clusters.PageInfo.EndCursor
	}
}

// describe lists names, for messages.
func describe(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}
