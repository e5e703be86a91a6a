//go:build linux

package loadrun

import (
	"context"
	"fmt"

	"github.com/nebulactrl/nebula/internal/control/delivery"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bench"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
)

// envsPerProject is how many environments one seeded project has; the
// nested query reads every environment of up to 10 projects.
const envsPerProject = 10

// services are the services of every seeded project.
var serviceNames = []string{"api", "worker"}

// Seeded is what the load runs against. Ids are the API's global ids
// unless named raw.
type Seeded struct {
	Tenants  []Tenant
	Projects []Project
	// Envs holds one environment per cluster: Envs[i] selects Clusters[i].
	Envs     []Env
	Clusters []Cluster
	// Deployments are the seeded deployments, for the by-id query until
	// the load has made its own.
	Deployments []Owned
}

type Tenant struct {
	ID string
	// Token is the tenant admin's API token. It is never printed.
	Token string
}

// Owned is an object's id and the index of its tenant.
type Owned struct {
	ID     string
	Tenant int
}

type Project struct {
	ID       string
	Tenant   int // index into Seeded.Tenants
	Services []string
}

type Env struct {
	ID      string
	Raw     model.EnvironmentID
	Project int // index into Seeded.Projects
}

type Cluster struct {
	Raw model.ClusterID
	// Token is the connect token the cluster's agent presents. It is
	// never printed.
	Token string
}

// tenantOf is the index of the tenant of environment env.
func (sd *Seeded) tenantOf(env int) int { return sd.Projects[sd.Envs[env].Project].Tenant }

// Seed fills an empty, migrated store through the domain layer, as API
// clients would: tenants ENTERPRISE tenants (the first bootstrapped, the
// others created by its admin) sharing n clusters named load-0000… in
// contiguous blocks; in each tenant, projects of envsPerProject
// environments each selecting one cluster by its name label (so that a
// deploy changes one cluster's state), the services of serviceNames in
// every project, and one deployment of each service to each environment.
func Seed(ctx context.Context, plane *control.Plane, n, tenants int) (*Seeded, error) {
	if n < 1 || tenants < 1 || tenants > n {
		return nil, fmt.Errorf("seeding: want at least one cluster and from 1 to %d tenants, got %d clusters and %d tenants", n, n, tenants)
	}
	boot, err := plane.People.Bootstrap(ctx, "load-0", "admin@load.example.com")
	if err != nil {
		return nil, fmt.Errorf("bootstrapping: %w", err)
	}
	founder, err := plane.People.Authenticate(ctx, boot.Secret, "127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("authenticating the bootstrap token: %w", err)
	}
	sd := &Seeded{}
	for t := range tenants {
		id, secret := boot.Tenant.ID, boot.Secret
		if t > 0 {
			tn, _, s, err := plane.People.CreateTenant(authz.WithActor(ctx, founder), fmt.Sprintf("load-%d", t))
			if err != nil {
				return nil, fmt.Errorf("creating tenant %d: %w", t, err)
			}
			id, secret = tn.ID, s
		}
		sd.Tenants = append(sd.Tenants, Tenant{ID: gid.Encode(gid.Tenant, id), Token: secret})
		if err := sd.seedTenant(ctx, plane, t, id, secret, t*n/tenants, (t+1)*n/tenants); err != nil {
			return nil, fmt.Errorf("seeding tenant %d: %w", t, err)
		}
	}
	return sd, nil
}

// seedTenant fills tenant t with clusters from…to-1 and their
// environments.
func (sd *Seeded) seedTenant(ctx context.Context, plane *control.Plane, t int, tenant model.TenantID, secret string, from, to int) error {
	actor, err := plane.People.Authenticate(ctx, secret, "127.0.0.1")
	if err != nil {
		return fmt.Errorf("authenticating the tenant's token: %w", err)
	}
	ctx = authz.WithActor(ctx, actor)
	if _, err := plane.People.SetTenantPlan(ctx, tenant, model.PlanEnterprise); err != nil {
		return fmt.Errorf("setting the plan: %w", err)
	}
	for i := from; i < to; i++ {
		name := fmt.Sprintf("load-%04d", i)
		c, token, err := plane.Clusters.RegisterCluster(ctx, tenant, name, []model.Label{{Key: "name", Value: name}, {Key: "fleet", Value: "load"}})
		if err != nil {
			return fmt.Errorf("registering cluster %s: %w", name, err)
		}
		sd.Clusters = append(sd.Clusters, Cluster{Raw: c.ID, Token: token})
	}

	image, port := "registry.example.com/load/app", 8080
	var proj *model.Project      // the project being filled
	var svcRaw []model.ServiceID // and its services
	for i := from; i < to; i++ {
		if (i-from)%envsPerProject == 0 {
			if proj, err = plane.Delivery.CreateProject(ctx, tenant, fmt.Sprintf("project-%03d", (i-from)/envsPerProject), "seeded for the load run"); err != nil {
				return fmt.Errorf("creating a project: %w", err)
			}
			p := Project{ID: gid.Encode(gid.Project, proj.ID), Tenant: t}
			svcRaw = nil
			for _, s := range serviceNames {
				svc, err := plane.Delivery.CreateService(ctx, proj.ID, delivery.ServiceInput{Name: s, Image: &image,
					Processes: []model.Process{{Name: "web", Command: []string{"/app/" + s}, Replicas: 2, Port: &port}}})
				if err != nil {
					return fmt.Errorf("creating service %s: %w", s, err)
				}
				p.Services, svcRaw = append(p.Services, gid.Encode(gid.Service, svc.ID)), append(svcRaw, svc.ID)
			}
			sd.Projects = append(sd.Projects, p)
		}
		name := fmt.Sprintf("env-%04d", i)
		env, err := plane.Delivery.CreateEnvironment(ctx, proj.ID, delivery.EnvironmentInput{Name: &name,
			ClusterSelector: []model.Label{{Key: "name", Value: fmt.Sprintf("load-%04d", i)}}})
		if err != nil {
			return fmt.Errorf("creating environment %s: %w", name, err)
		}
		sd.Envs = append(sd.Envs, Env{ID: gid.Encode(gid.Environment, env.ID), Raw: env.ID, Project: len(sd.Projects) - 1})
		for _, s := range svcRaw {
			_, dep, err := plane.Delivery.Deploy(ctx, s, env.ID, bench.Digest(fmt.Sprintf("seed/%s/%s", env.ID, s)))
			if err != nil {
				return fmt.Errorf("deploying to environment %s: %w", name, err)
			}
			sd.Deployments = append(sd.Deployments, Owned{ID: gid.Encode(gid.Deployment, dep.ID), Tenant: t})
		}
	}
	return nil
}
