// Package bench holds the benchmarks of docs/benchmarks.md and the seed they
// share: a tenant filled through the domain layer, exactly as an API client
// would fill it, so that the rows a benchmark reads are the rows production
// writes.
//
// It is for tests and benchmarks only and must never be imported by
// production code; it never writes SQL of its own.
package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nebulactrl/nebula/internal/control/delivery"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/model"
)

// Size is the shape of a seeded tenant.
type Size struct {
	Projects     int // projects in the tenant, one service each
	Environments int // environments per project
	Deployments  int // deployments per environment
}

// Items is the number of environments a query over every project returns.
func (s Size) Items() int { return s.Projects * s.Environments }

// Deployed is one deployment with the release it deployed.
type Deployed struct {
	Deployment *model.Deployment
	Release    *model.Release
}

// Seeded is what Seed made.
type Seeded struct {
	Size   Size
	Tenant model.TenantID
	// Secret is the tenant admin's API token, for an Authorization header.
	Secret string
	// Latest is the newest deployment of each environment.
	Latest map[model.EnvironmentID]Deployed
}

// ProdLabel is the label of the seeded cluster that every environment selects.
var ProdLabel = model.Label{Key: "env", Value: "prod"}

// Seed bootstraps an empty store into one ENTERPRISE tenant (FREE allows
// three projects) with one cluster labelled env=prod, size.Projects projects
// each with one service and size.Environments environments selecting that
// cluster, the last of them protected, and size.Deployments deployments per
// environment, each of a distinct image digest.
//
// Deployments go round by round over every environment, so an environment's
// deployments are not adjacent in id order and "latest" has to be found by
// ordering, not by position.
func Seed(ctx context.Context, plane *control.Plane, size Size) (*Seeded, error) {
	if size.Projects < 1 || size.Environments < 1 || size.Deployments < 1 {
		return nil, fmt.Errorf("seeding: every dimension of %+v must be at least 1", size)
	}
	boot, err := plane.People.Bootstrap(ctx, "bench", "admin@bench.example.com")
	if err != nil {
		return nil, fmt.Errorf("bootstrapping: %w", err)
	}
	actor, err := plane.People.Authenticate(ctx, boot.Secret, "127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("authenticating the bootstrap token: %w", err)
	}
	ctx = authz.WithActor(ctx, actor)
	tenant := boot.Tenant.ID
	if _, err := plane.People.SetTenantPlan(ctx, tenant, model.PlanEnterprise); err != nil {
		return nil, fmt.Errorf("setting the plan: %w", err)
	}
	if _, _, err := plane.Clusters.RegisterCluster(ctx, tenant, "prod-eu-1",
		[]model.Label{ProdLabel, {Key: "region", Value: "eu"}}); err != nil {
		return nil, fmt.Errorf("registering the cluster: %w", err)
	}

	type target struct {
		svc model.ServiceID
		env model.EnvironmentID
	}
	var targets []target
	image := "registry.example.com/bench/api"
	port := 8080
	for p := range size.Projects {
		proj, err := plane.Delivery.CreateProject(ctx, tenant, fmt.Sprintf("project-%03d", p), "seeded for benchmarks")
		if err != nil {
			return nil, fmt.Errorf("creating project %d: %w", p, err)
		}
		svc, err := plane.Delivery.CreateService(ctx, proj.ID, delivery.ServiceInput{Name: "api", Image: &image,
			Processes: []model.Process{{Name: "web", Command: []string{"/app/web"}, Replicas: 2, Port: &port}}})
		if err != nil {
			return nil, fmt.Errorf("creating the service of project %d: %w", p, err)
		}
		for e := range size.Environments {
			name, protected := fmt.Sprintf("env-%d", e), e == size.Environments-1
			env, err := plane.Delivery.CreateEnvironment(ctx, proj.ID, delivery.EnvironmentInput{Name: &name, Protected: &protected,
				ClusterSelector: []model.Label{ProdLabel}})
			if err != nil {
				return nil, fmt.Errorf("creating environment %d of project %d: %w", e, p, err)
			}
			targets = append(targets, target{svc.ID, env.ID})
		}
	}

	latest := make(map[model.EnvironmentID]Deployed, len(targets))
	for d := range size.Deployments {
		for _, t := range targets {
			rel, dep, err := plane.Delivery.Deploy(ctx, t.svc, t.env, Digest(fmt.Sprintf("%s/%d", t.env, d)))
			if err != nil {
				return nil, fmt.Errorf("deploying round %d to environment %s: %w", d, t.env, err)
			}
			latest[t.env] = Deployed{Deployment: dep, Release: rel}
		}
	}
	return &Seeded{Size: size, Tenant: tenant, Secret: boot.Secret, Latest: latest}, nil
}

// Digest is a valid image digest derived from s: distinct strings give
// distinct digests.
func Digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}
