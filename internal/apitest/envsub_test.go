package apitest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/hub"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// An environment's subscriber re-reads only the newest deployments, back
// to the oldest it saw still under way: a rollout that started before a
// dozen deploys of another service is still followed when it moves, and
// each new deployment shows.
func TestEnvironmentSubscriberFollowsAnOlderRollout(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		res := f.MustDo(t, `mutation($p: ID!) { createService(input: {projectId: $p, name: "worker", image: "registry.example.com/shop/worker",
			processes: [{name: "worker"}]}) { service { id } } }`, map[string]any{"p": f.ProjectID})
		worker := res.Str("createService.service.id")
		deploy := func(svc string) string {
			t.Helper()
			res := f.MustDo(t, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } } }`,
				map[string]any{"s": svc, "e": f.EnvironmentID, "d": Digest(f.Env.Next())})
			return res.Str("deploy.deployment.id")
		}
		old := deploy(f.ServiceID) // under way while the worker is deployed again and again
		sub := subscribeOn(t, env, f.Owner.Token, `subscription($e: ID!) { environmentDeployments(environmentId: $e) { id stage } }`,
			map[string]any{"e": f.EnvironmentID})
		waitFor := func(what, id, stage string) {
			t.Helper()
			testutil.Eventually(t, 15*time.Second, what, func() (bool, string) {
				ids, stages := sub.values("environmentDeployments.id"), sub.values("environmentDeployments.stage")
				for i := range ids {
					if ids[i] == id && i < len(stages) && stages[i] == stage {
						return true, ""
					}
				}
				return false, fmt.Sprint(ids, stages)
			})
		}
		waitFor("the rollout under way at the start", old, "DELIVERING")
		var last string
		for range 3 * 10 / 2 { // more than one re-read page of newer deployments
			last = deploy(worker)
			waitFor("each new deployment", last, "DELIVERING")
		}
		raw, _ := gid.Decode[model.DeploymentID](gid.Deployment, old)
		cluster, _ := gid.Decode[model.ClusterID](gid.Cluster, f.ClusterID)
		if err := env.AgentSide(t, cluster).Stage(context.Background(), hub.StageOf(&protocol.Stage{Deployment: string(raw), Stage: "STARTING"})); err != nil {
			t.Fatal(err)
		}
		waitFor("the older rollout moving on", old, "STARTING")
	})
}
