package apitest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// The background jobs, one run at a time, on both stores.
func TestJobs(t *testing.T) {
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		ctx := context.Background()
		rawCluster, _ := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
		// The cluster's agent reports, so it is connected.
		if err := env.AgentSide(t, rawCluster).Report(ctx, []byte(`{}`), 0, ""); err != nil {
			t.Fatal(err)
		}
		dep := f.deployAsOwner(t, f.EnvironmentID)
		rawDep, _ := gid.Decode[model.DeploymentID](gid.Deployment, dep)
		if err := env.AgentSide(t, rawCluster).Stage(ctx, hub.StageOf(&protocol.Stage{Deployment: string(rawDep), Stage: "PROBING", Message: "probing"})); err != nil {
			t.Fatal(err)
		}
		read := func() map[string]any {
			return f.Node(t, dep, `... on Deployment { stage blocker message events { nodes { stage blocker } } }`)
		}
		if d := read(); d["stage"] != "PROBING" || d["blocker"] != nil {
			t.Fatalf("before the jobs: %v", d)
		}
		// Nothing is due yet: a run changes nothing.
		rep, err := env.Plane.RunJobsOnce(ctx)
		if err != nil || rep.Expired+rep.Stalled+rep.Disconnected != 0 {
			t.Fatalf("a run with nothing due: %+v, %v", rep, err)
		}

		// Eleven minutes without progress: stalled, once.
		env.Clock.Advance(11 * time.Minute)
		if err := env.AgentSide(t, rawCluster).Report(ctx, []byte(`{}`), 0, ""); err != nil { // still heartbeating
			t.Fatal(err)
		}
		if rep, err = env.Plane.RunJobsOnce(ctx); err != nil || rep.Stalled != 1 || rep.Disconnected != 0 {
			t.Fatalf("after 11 min: %+v, %v", rep, err)
		}
		d := read()
		if d["blocker"] != "STALLED" || !strings.Contains(d["message"].(string), "no progress in PROBING") {
			t.Errorf("a stalled deployment: %v", d)
		}
		if rep, _ = env.Plane.RunJobsOnce(ctx); rep.Stalled != 0 {
			t.Errorf("flagged twice: %+v", rep)
		}
		// Progress clears the flag.
		if err := env.AgentSide(t, rawCluster).Stage(ctx, hub.StageOf(&protocol.Stage{Deployment: string(rawDep), Stage: "PROBING", Message: "still probing"})); err != nil {
			t.Fatal(err)
		}
		if d := read(); d["blocker"] != nil || d["stage"] != "PROBING" {
			t.Errorf("a report at the same stage did not clear the blocker: %v", d)
		}

		// The agent goes silent past the threshold: the cluster is
		// marked disconnected once and its rollout is blocked on
		// delivery.
		env.Clock.Advance(2 * time.Minute)
		if rep, err = env.Plane.RunJobsOnce(ctx); err != nil || rep.Disconnected != 1 {
			t.Fatalf("after 2 silent minutes: %+v, %v", rep, err)
		}
		if s := f.Node(t, f.ClusterID, `... on Cluster { status }`)["status"]; s != "DISCONNECTED" {
			t.Errorf("cluster status %v", s)
		}
		d = read()
		if d["blocker"] != "DELIVERY" || !strings.Contains(d["message"].(string), "went silent") {
			t.Errorf("the rollout of a silent cluster: %v", d)
		}
		if rep, _ = env.Plane.RunJobsOnce(ctx); rep.Disconnected != 0 {
			t.Errorf("marked disconnected twice: %+v", rep)
		}
		// The agent comes back and reports: the blocker clears.
		if err := env.AgentSide(t, rawCluster).Report(ctx, []byte(`{}`), 0, ""); err != nil {
			t.Fatal(err)
		}
		if err := env.AgentSide(t, rawCluster).Stage(ctx, hub.StageOf(&protocol.Stage{Deployment: string(rawDep), Stage: "SWITCHING_TRAFFIC", Message: "switching"})); err != nil {
			t.Fatal(err)
		}
		if d := read(); d["blocker"] != nil || d["stage"] != "SWITCHING_TRAFFIC" {
			t.Errorf("after the agent came back: %v", d)
		}
	})
}
