package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/nebulactrl/nebula/internal/client"
)

// target is a service and an environment of one project, found by name.
type target struct {
	Project, Service, Environment string // names
	ServiceID, EnvironmentID      string
	Branch                        string // the tracked branch of a service built from Git; "" for an image service
	Protected                     bool
}

// findTarget finds a service and an environment by name (or global id)
// in the projects the token can read; project (a name or id) narrows the
// search, and is needed when several projects have such a service.
func findTarget(ctx context.Context, c *client.Client, project, service, env string) (target, error) {
	ps, err := client.Projects(ctx, c.GQL)
	if err != nil {
		return target{}, explained(err)
	}
	type candidate struct{ id, name, tenant string }
	var cands []candidate
	for _, t := range ps.Viewer.Tenants.Nodes {
		for _, p := range t.Projects.Nodes {
			if project == "" || p.Name == project || p.Id == project {
				cands = append(cands, candidate{p.Id, p.Name, t.Name})
			}
		}
	}
	if len(cands) == 0 {
		if project != "" {
			return target{}, fmt.Errorf("no project %q that this token can read", project)
		}
		return target{}, fmt.Errorf("this token can read no project")
	}
	if len(cands) > 25 {
		return target{}, fmt.Errorf("this token reads %d projects: say which with --project", len(cands))
	}
	var found []target
	var noEnv []string
	for _, p := range cands {
		res, err := client.ProjectTargets(ctx, c.GQL, p.id)
		if err != nil {
			return target{}, explained(err)
		}
		pr, ok := nodeAs[*client.ProjectTargetsNodeProject](res.Node)
		if !ok {
			continue
		}
		for _, s := range pr.Services.Nodes {
			if s.Name != service && s.Id != service {
				continue
			}
			tg := target{Project: pr.Name, Service: s.Name, ServiceID: s.Id}
			if s.Git != nil {
				tg.Branch = s.Git.Branch
			}
			var envs []string
			for _, e := range pr.Environments.Nodes {
				envs = append(envs, e.Name)
				if e.Name == env || e.Id == env {
					tg.Environment, tg.EnvironmentID, tg.Protected = e.Name, e.Id, e.Protected
				}
			}
			if tg.EnvironmentID == "" {
				noEnv = append(noEnv, fmt.Sprintf("project %s has no environment %q (it has %s)", pr.Name, env, strings.Join(envs, ", ")))
				continue
			}
			found = append(found, tg)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		var in []string
		for _, f := range found {
			in = append(in, f.Project)
		}
		return target{}, fmt.Errorf("service %q with environment %q is in several projects (%s): say which with --project",
			service, env, strings.Join(in, ", "))
	case len(noEnv) > 0:
		return target{}, fmt.Errorf("service %q found, but %s", service, strings.Join(noEnv, "; "))
	}
	var names []string
	for _, p := range cands {
		names = append(names, p.name)
	}
	return target{}, fmt.Errorf("no service %q in the projects this token reads (%s)", service, strings.Join(names, ", "))
}
