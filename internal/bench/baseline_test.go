package bench

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
)

// baselineHandler answers nestedQuery's request the way a hand-written
// endpoint would: the token compared in memory (no lookup, no grants, no
// authorization), three SQL queries, encoding/json. It is the floor the
// GraphQL stack is measured against, not an endpoint anyone should ship.
func baselineHandler(pool *pgxpool.Pool, secret string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(secret)) != 1 {
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		var req struct {
			Variables struct {
				T string `json:"t"`
			} `json:"variables"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request body", http.StatusBadRequest)
			return
		}
		tenant, err := gid.Decode[model.TenantID](gid.Tenant, req.Variables.T)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		node, err := readNested(r.Context(), pool, tenant)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(nestedResponse{Data: nestedData{Node: node}})
	})
}

// The baseline's SQL, with the same page sizes and orders as the GraphQL
// query: projects and environments oldest first (ids are UUIDv7), and the
// newest deployment of each environment.
const (
	baselineProjects = `SELECT id, name FROM projects WHERE tenant_id = $1 ORDER BY id LIMIT 100`

	baselineEnvironments = `SELECT id, project_id, name, protected FROM (
		SELECT id, project_id, name, protected,
			ROW_NUMBER() OVER (PARTITION BY project_id ORDER BY id) AS rn
		FROM environments WHERE project_id = ANY($1)
	) ranked WHERE rn <= 10 ORDER BY project_id, id`

	baselineLatestDeployments = `SELECT DISTINCT ON (d.environment_id)
		d.environment_id, d.id, d.stage, d.created_at, r.number, r.image_digest
		FROM deployments d JOIN releases r ON r.id = d.release_id
		WHERE d.environment_id = ANY($1)
		ORDER BY d.environment_id, d.id DESC`
)

func readNested(ctx context.Context, pool *pgxpool.Pool, tenant model.TenantID) (*tenantNode, error) {
	out := &tenantNode{Projects: connection[projectNode]{Nodes: []projectNode{}}}

	rows, err := pool.Query(ctx, baselineProjects, string(tenant))
	if err != nil {
		return nil, fmt.Errorf("querying projects: %w", err)
	}
	var projectIDs []string
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scanning projects: %w", err)
		}
		projectIDs = append(projectIDs, id)
		out.Projects.Nodes = append(out.Projects.Nodes, projectNode{ID: gid.Encode(gid.Project, id), Name: name,
			Environments: connection[environmentNode]{Nodes: []environmentNode{}}})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading projects: %w", err)
	}
	if len(projectIDs) == 0 {
		return out, nil
	}
	projectAt := make(map[string]int, len(projectIDs))
	for i, id := range projectIDs {
		projectAt[id] = i
	}

	// Environments are appended in place, so they are addressed by
	// (project, index) until every slice has stopped growing.
	type at struct{ project, env int }
	rows, err = pool.Query(ctx, baselineEnvironments, projectIDs)
	if err != nil {
		return nil, fmt.Errorf("querying environments: %w", err)
	}
	var envIDs []string
	envAt := map[string]at{}
	for rows.Next() {
		var id, project, name string
		var protected bool
		if err := rows.Scan(&id, &project, &name, &protected); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scanning environments: %w", err)
		}
		p := &out.Projects.Nodes[projectAt[project]]
		envAt[id] = at{projectAt[project], len(p.Environments.Nodes)}
		envIDs = append(envIDs, id)
		p.Environments.Nodes = append(p.Environments.Nodes, environmentNode{ID: gid.Encode(gid.Environment, id),
			Name: name, Protected: protected, Deployments: connection[deploymentNode]{Nodes: []deploymentNode{}}})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading environments: %w", err)
	}
	if len(envIDs) == 0 {
		return out, nil
	}

	rows, err = pool.Query(ctx, baselineLatestDeployments, envIDs)
	if err != nil {
		return nil, fmt.Errorf("querying deployments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var env, id, stage string
		var d deploymentNode
		if err := rows.Scan(&env, &id, &stage, &d.CreatedAt, &d.Release.Number, &d.Release.ImageDigest); err != nil {
			return nil, fmt.Errorf("scanning deployments: %w", err)
		}
		d.ID, d.Stage = gid.Encode(gid.Deployment, id), stage
		a := envAt[env]
		e := &out.Projects.Nodes[a.project].Environments.Nodes[a.env]
		e.Deployments.Nodes = append(e.Deployments.Nodes, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading deployments: %w", err)
	}
	return out, nil
}
