package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/people"

	"k8s.io/klog/v2"

	"github.com/nebulactrl/nebula/agent"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/devcluster"
)

// `nebula dev`: the control plane on the embedded store, with a simulated
// cluster and the real agent in the same process, and a demo project whose
// environment lands on that cluster. A newcomer can deploy and watch every
// stage live in GraphiQL without any Kubernetes. Local use only: it keeps
// its admin token and the cluster's connect token in files of its data
// directory (mode 0600) so that every start can show them.

const (
	devAdminTokenFile = "dev-admin-token"
	devAgentTokenFile = "dev-agent-token"
	// devRepository and devCommit are what the demo's Git service builds:
	// names only, nothing is fetched.
	devRepository = "https://github.com/nebula-samples/shop-api.git"
	devCommit     = "9f2c4b7e1a3d5c8e0b6f4a2d9c7e5b3a1f8d6c4e"
)

func dev(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	if cfg.DatabaseURL != "" {
		return errors.New("nebula dev runs on the embedded store: unset NEBULA_DATABASE_URL")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return err
	}
	return serveWith(ctx, cfg, log, stdout, func(ctx context.Context, base string, boot *people.Bootstrapped) error {
		return devSetup(ctx, cfg, log, stdout, base, boot)
	})
}

func devSetup(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer, base string, boot *people.Bootstrapped) error {
	adminFile := filepath.Join(cfg.DataDir, devAdminTokenFile)
	var token string
	if boot != nil {
		token = boot.Secret
		if err := os.WriteFile(adminFile, []byte(token), 0o600); err != nil {
			return err
		}
	} else {
		b, err := os.ReadFile(adminFile)
		if err != nil {
			return fmt.Errorf("this data directory was not made by nebula dev (%s is missing); use another NEBULA_DATA_DIR", adminFile)
		}
		token = strings.TrimSpace(string(b))
	}
	c := &devClient{base: base, token: token}
	tenant, err := c.str(ctx, `{ viewer { tenants { nodes { id } } } }`, nil, "viewer.tenants.nodes.0.id")
	if err != nil {
		return err
	}
	if boot == nil {
		// Every start shows a way into the console, as the first did: a
		// new invitation of the dev admin (local use only, like the
		// admin token it shows each time).
		res, err := c.do(ctx, `mutation($t: ID!) { inviteMember(input: {tenantId: $t, email: "`+cfg.BootstrapEmail+`", name: "Administrator"}) {
			link invitation { expiresAt } userErrors { message } } }`, map[string]any{"t": tenant})
		if err != nil {
			return err
		}
		link, _ := dig(res, "inviteMember.link").(string)
		at, _ := time.Parse(time.RFC3339, fmt.Sprint(dig(res, "inviteMember.invitation.expiresAt")))
		_, secret, ok := strings.Cut(link, "/invitation#")
		if !ok {
			return errors.New("inviting the dev admin: the answer has no invitation link")
		}
		printConsoleLink(stdout, base, cfg.BootstrapEmail, secret, at)
	}
	agentFile := filepath.Join(cfg.DataDir, devAgentTokenFile)
	clusterID, err := c.find(ctx, `query($t: ID!) { node(id: $t) { ... on Tenant { clusters(first: 100) { nodes { id name } } } } }`,
		map[string]any{"t": tenant}, "node.clusters.nodes", "dev")
	if err != nil {
		return err
	}
	if clusterID == "" {
		res, err := c.do(ctx, `mutation($t: ID!) { registerCluster(input: {tenantId: $t, name: "dev", labels: [{key: "env", value: "dev"}]}) {
			cluster { id } connectToken userErrors { message } } }`, map[string]any{"t": tenant})
		if err != nil {
			return err
		}
		clusterID, _ = dig(res, "registerCluster.cluster.id").(string)
		ct, _ := dig(res, "registerCluster.connectToken").(string)
		if err := os.WriteFile(agentFile, []byte(ct), 0o600); err != nil {
			return err
		}
	}
	project, err := c.find(ctx, `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: 100) { nodes { id name } } } } }`,
		map[string]any{"t": tenant}, "node.projects.nodes", "demo")
	if err != nil {
		return err
	}
	if project == "" {
		if project, err = c.str(ctx, `mutation($t: ID!) { createProject(input: {tenantId: $t, name: "demo", description: "made by nebula dev"}) {
			project { id } userErrors { message } } }`, map[string]any{"t": tenant}, "createProject.project.id"); err != nil {
			return err
		}
	}
	env, err := c.find(ctx, `query($p: ID!) { node(id: $p) { ... on Project { environments(first: 100) { nodes { id name } } } } }`,
		map[string]any{"p": project}, "node.environments.nodes", "dev")
	if err != nil {
		return err
	}
	if env == "" {
		if env, err = c.str(ctx, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "dev", clusterSelector: [{key: "env", value: "dev"}]}) {
			environment { id } userErrors { message } } }`, map[string]any{"p": project}, "createEnvironment.environment.id"); err != nil {
			return err
		}
	}
	svc, err := c.find(ctx, `query($p: ID!) { node(id: $p) { ... on Project { services(first: 100) { nodes { id name } } } } }`,
		map[string]any{"p": project}, "node.services.nodes", "web")
	if err != nil {
		return err
	}
	if svc == "" {
		if svc, err = c.str(ctx, `mutation($p: ID!) { createService(input: {projectId: $p, name: "web", image: "registry.example.com/demo/web",
			processes: [{name: "web", command: ["./web"], replicas: 2, port: 8080, readinessProbe: {path: "/healthz", port: 8080}}]}) {
			service { id } userErrors { message } } }`, map[string]any{"p": project}, "createService.service.id"); err != nil {
			return err
		}
	}
	// A service built from Git: its builds are simulated by the dev cluster.
	api, err := c.find(ctx, `query($p: ID!) { node(id: $p) { ... on Project { services(first: 100) { nodes { id name } } } } }`,
		map[string]any{"p": project}, "node.services.nodes", "api")
	if err != nil {
		return err
	}
	if api == "" {
		if api, err = c.str(ctx, `mutation($p: ID!, $e: ID!) { createService(input: {projectId: $p, name: "api", image: "registry.example.com/demo/api",
			processes: [{name: "web", command: ["./api"], replicas: 1, port: 8080}],
			git: {repository: "`+devRepository+`", branch: "main", deployOnPush: [$e]}}) {
			service { id } userErrors { message } } }`, map[string]any{"p": project, "e": env}, "createService.service.id"); err != nil {
			return err
		}
	}

	klog.SetSlogLogger(log.With("component", "client-go"))
	sim, err := devcluster.New(log.With("component", "simulated-cluster"))
	if err != nil {
		return err
	}
	go sim.Run(ctx)
	a := agent.New(agent.Config{Server: base, TokenFile: agentFile, Identity: "dev-agent", Version: Version,
		Image: "in-process", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second,
		BackoffMax: 5 * time.Second, RolloutTimeout: 20 * time.Second}, agent.Same(sim.Client), log.With("component", "agent"))
	go func() {
		if err := a.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("the dev agent stopped", "error", err)
		}
	}()
	fmt.Fprintf(stdout, `
nebula dev: a simulated cluster "dev" with its agent runs in this process. In GraphiQL (%s/graphiql),
set the headers to {"Authorization": "Bearer %s"} and try:

    mutation { deploy(input: {serviceId: "%s", environmentId: "%s",
      imageDigest: "sha256:%s"}) { deployment { id stage } userErrors { message } } }

    subscription { environmentDeployments(environmentId: "%s") { id stage blocker message } }

    subscription { deploymentEvents(deploymentId: "<the deployment id>") { sequence stage message at } }

A process whose command ends in "%s" never becomes Ready: deploy after updateService with
such a command to watch a rollback.

The service "api" is built from Git (%s); its builds are simulated
(no BuildKit runs: the build's pod prints a build's output for a few seconds and ends with a
digest). Deploy a commit, then follow the build's log and the deployment from BUILDING on:

    mutation { deploy(input: {serviceId: "%s", environmentId: "%s",
      commit: "%s"}) { deployment { id stage } build { id } userErrors { message } } }

    subscription { buildLog(buildId: "<the build id>") { number at text } }
`, base, token, svc, env, strings.Repeat("ab", 32), env, devcluster.UnreadyArg, devRepository, api, env, devCommit)
	return nil
}

// devClient calls the control plane's GraphQL API as the dev admin.
type devClient struct{ base, token string }

func (c *devClient) do(ctx context.Context, query string, vars map[string]any) (map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+"/graphql", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Data   map[string]any   `json:"data"`
		Errors []map[string]any `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("setting up nebula dev: %s: %w", resp.Status, err)
	}
	if len(out.Errors) > 0 {
		return nil, fmt.Errorf("setting up nebula dev: %v", out.Errors[0]["message"])
	}
	for _, v := range out.Data {
		if ue, _ := dig(v, "userErrors").([]any); len(ue) > 0 {
			return nil, fmt.Errorf("setting up nebula dev: %v", ue[0])
		}
	}
	return out.Data, nil
}

func (c *devClient) str(ctx context.Context, query string, vars map[string]any, path string) (string, error) {
	res, err := c.do(ctx, query, vars)
	if err != nil {
		return "", err
	}
	s, _ := dig(res, path).(string)
	if s == "" {
		return "", fmt.Errorf("setting up nebula dev: no %s in the answer", path)
	}
	return s, nil
}

// find returns the id of the node named name in the list at path.
func (c *devClient) find(ctx context.Context, query string, vars map[string]any, path, name string) (string, error) {
	res, err := c.do(ctx, query, vars)
	if err != nil {
		return "", err
	}
	list, _ := dig(res, path).([]any)
	for _, n := range list {
		if dig(n, "name") == name {
			s, _ := dig(n, "id").(string)
			return s, nil
		}
	}
	return "", nil
}

func dig(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i := 0
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}
