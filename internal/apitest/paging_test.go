package apitest

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// Every connection walks page by page, with first/after, through exactly
// the items one big page shows, in the same order.
func TestConnectionPaging(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		for i := range 3 {
			f.MustDo(t, deployMutation, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(int64(1000 + i))})
		}
		web := f.NewService(t, f.ProjectID, "web")
		// A second deployment under way (each service's newest is).
		f.MustDo(t, deployMutation, map[string]any{"s": web, "e": f.EnvironmentID, "d": Digest(2000)})
		// A deployment's events (QUEUED, DELIVERING); the cluster's agent
		// sends the service's log lines, two drifts and a build's log.
		dep, _ := wsDeploy(t, f)
		git := f.NewGitService(t, "paged-builder", GitHubRepository)
		build := f.MustDo(t, `mutation($s: ID!, $e: ID!) { deploy(input: {serviceId: $s, environmentId: $e, commit: "`+SampleCommit+`"}) {
			build { id } `+ue+` } }`, map[string]any{"s": git, "e": f.EnvironmentID}).Str("deploy.build.id")
		agent, _ := connectStageAgent(t, f, "prod-eu")
		agent.logs(sent{s: newLogStream(t, f, f.ServiceID, f.EnvironmentID, "api-web-1"),
			lines: printed(time.Now().Add(-time.Minute), "one", "two", "three")})
		envID, svcID := rawID(t, gid.Environment, f.EnvironmentID), rawID(t, gid.Service, f.ServiceID)
		for _, name := range []string{"api-web-r1", "api-web-r2"} {
			agent.send(protocol.TypeDrift, protocol.Drift{Kind: "Deployment", Namespace: "shop-prod", Name: name,
				Fields: []string{"spec.replicas"}, Managers: []string{"kubectl-edit"}, Environment: envID, Service: svcID, At: time.Now()})
			agent.handled()
		}
		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		// The agent reports three nodes and three workloads, neither in
		// the order they are listed in.
		agent.send(protocol.TypeHeartbeat, protocol.Heartbeat{SentAt: time.Now().UTC(), Inventory: protocol.Inventory{
			AgentVersion: "paged", Nodes: []protocol.Node{{Name: "node-c", Ready: true}, {Name: "node-a", Ready: true}, {Name: "node-b"}},
			Workloads: []protocol.Workload{{Namespace: "shop-prod", Name: "api", Replicas: 2}, {Namespace: "shop", Name: "web", Replicas: 1},
				{Namespace: "shop", Name: "cart", Replicas: 3}}}})
		agent.handled()
		rawBuild := rawID(t, gid.Build, build)
		agent.waitBuilds(rawBuild)
		agent.buildReport(rawBuild, 0, protocol.BuildRunning, "", "", "#1 load", "#2 build", "#3 push")
		onEnv := `environmentId: "` + f.EnvironmentID + `", `
		f.NewProject(t)
		for i := range 2 {
			f.MustDo(t, `mutation($t: ID!, $n: String!) { registerCluster(input: {tenantId: $t, name: $n,
				labels: [{key: "env", value: "prod"}, {key: "region", value: "eu"}]}) { `+ue+` } }`,
				map[string]any{"t": f.TenantID, "n": fmt.Sprintf("twin-%d", i)})
		}
		for range 2 {
			f.NewNamespaceTarget(t)
		}
		// An environment picking the three clusters, every target on them.
		wide := f.MustDo(t, `mutation($p: ID!) { createEnvironment(input: {projectId: $p, name: "wide", clusterSelector: [{key: "region", value: "eu"}]}) {
			environment { id } `+ue+` } }`, map[string]any{"p": f.ProjectID}).Str("createEnvironment.environment.id")
		f.Env.MustDo(t, f.Users[Editor].Token, `mutation { a: createApiToken(input: {name: "a"}) { `+ue+` } b: createApiToken(input: {name: "b"}) { `+ue+` } }`, nil)
		// Two invitations, and a second connect token of the cluster.
		for _, who := range []string{"paged-a@example.com", "paged-b@example.com"} {
			f.MustDo(t, `mutation($t: ID!, $e: String!) { inviteMember(input: {tenantId: $t, email: $e, name: "Paged", role: MEMBER}) { `+ue+` } }`,
				map[string]any{"t": f.TenantID, "e": who})
		}
		f.MustDo(t, `mutation($c: ID!, $n: String!) { regenerateConnectToken(input: {clusterId: $c, confirmName: $n}) { `+ue+` } }`,
			map[string]any{"c": f.ClusterID, "n": "prod-eu"})
		// A change set with three comments.
		set := f.MustDo(t, `mutation($p: ID!) { openChangeSet(input: {projectId: $p, title: "paged comments"}) { changeSet { id } `+ue+` } }`,
			map[string]any{"p": f.ProjectID}).Str("openChangeSet.changeSet.id")
		for _, body := range []string{"first word", "second word", "third word"} {
			f.MustDo(t, `mutation($c: ID!, $b: String!) { commentOnChangeSet(input: {changeSetId: $c, body: $b}) { `+ue+` } }`,
				map[string]any{"c": set, "b": body})
		}
		// A person signed in three times: by their invitation, then twice
		// more; the first browser pages its viewer's sessions.
		email, pass := f.Unique("paged-person")+"@people.example", "the paged person's passphrase"
		person, _ := invitedBrowser(t, f, email, pass)
		for range 2 {
			if r := (&browser{t: t, env: env}).post("/auth/signin", map[string]string{"email": email, "passphrase": pass}); r.status != 200 {
				t.Fatalf("signing in again: %d %s", r.status, r.raw)
			}
		}

		cases := []struct {
			name, token, node, field string
			key                      string       // what tells the nodes apart, when they have no id
			session                  *http.Cookie // the caller's, instead of token
		}{
			{"tenant.members", f.Owner.Token, f.TenantID, `... on Tenant { conn: members(first: $first, after: $after) { %s } }`, "", nil},
			{"tenant.projects", f.Owner.Token, f.TenantID, `... on Tenant { conn: projects(first: $first, after: $after) { %s } }`, "", nil},
			{"tenant.clusters", f.Owner.Token, f.TenantID, `... on Tenant { conn: clusters(first: $first, after: $after) { %s } }`, "", nil},
			{"cluster.namespaceTargets", f.Owner.Token, f.ClusterID, `... on Cluster { conn: namespaceTargets(first: $first, after: $after) { %s } }`, "", nil},
			{"project.members", f.Owner.Token, f.ProjectID, `... on Project { conn: members(first: $first, after: $after) { %s } }`, "", nil},
			{"project.environments", f.Owner.Token, f.ProjectID, `... on Project { conn: environments(first: $first, after: $after) { %s } }`, "", nil},
			{"project.services", f.Owner.Token, f.ProjectID, `... on Project { conn: services(first: $first, after: $after) { %s } }`, "", nil},
			{"service.releases", f.Owner.Token, f.ServiceID, `... on Service { conn: releases(first: $first, after: $after) { %s } }`, "", nil},
			{"environment.deployments", f.Owner.Token, f.EnvironmentID, `... on Environment { conn: deployments(first: $first, after: $after) { %s } }`, "", nil},
			{"environment.eligibleClusters", f.Owner.Token, f.EnvironmentID, `... on Environment { conn: eligibleClusters(first: $first, after: $after) { %s } }`, "", nil},
			{"environment.eligibleNamespaceTargets", f.Owner.Token, wide, `... on Environment { conn: eligibleNamespaceTargets(first: $first, after: $after) { %s } }`, "", nil},
			{"tenant.deploymentsUnderWay", f.Owner.Token, f.TenantID, `... on Tenant { conn: deploymentsUnderWay(first: $first, after: $after) { %s } }`, "", nil},
			{"tenant.deploymentsUnderWay, a viewer of one project", f.Users[Viewer].Token, f.TenantID, `... on Tenant { conn: deploymentsUnderWay(first: $first, after: $after) { %s } }`, "", nil},
			{"tenant.invitations", f.Owner.Token, f.TenantID, `... on Tenant { conn: invitations(first: $first, after: $after) { %s } }`, "", nil},
			{"cluster.connectTokens", f.Owner.Token, f.ClusterID, `... on Cluster { conn: connectTokens(first: $first, after: $after) { %s } }`, "", nil},
			{"viewer.apiTokens", f.Users[Editor].Token, "", `conn: apiTokens(first: $first, after: $after) { %s }`, "", nil},
			{"viewer.sessions", "", "", `conn: sessions(first: $first, after: $after) { %s }`, "", person.cookie},
			{"deployment.events", f.Users[Viewer].Token, dep, `... on Deployment { conn: events(first: $first, after: $after) { %s } }`, "sequence", nil},
			{"service.logs", f.Users[Viewer].Token, f.ServiceID, `... on Service { conn: logs(` + onEnv + `first: $first, after: $after) { %s } }`, "number", nil},
			{"service.logs, filtered", f.Owner.Token, f.ServiceID, `... on Service { conn: logs(` + onEnv + `filter: {text: "t"}, first: $first, after: $after) { %s } }`, "number", nil},
			{"build.log", f.Users[Viewer].Token, build, `... on Build { conn: log(first: $first, after: $after) { %s } }`, "number", nil},
			{"cluster.inventory.nodes", f.Users[Viewer].Token, f.ClusterID, `... on Cluster { inventory { conn: nodes(first: $first, after: $after) { %s } } }`, "name", nil},
			{"cluster.inventory.workloads", f.Users[Viewer].Token, f.ClusterID, `... on Cluster { inventory { conn: workloads(first: $first, after: $after) { %s } } }`, "name", nil},
			{"changeSet.comments", f.Users[Viewer].Token, set, `... on ChangeSet { conn: comments(first: $first, after: $after) { %s } }`, "body", nil},
			{"cluster.drift", f.Owner.Token, f.ClusterID, `... on Cluster { conn: drift(first: $first, after: $after) { %s } }`, "name", nil},
			{"service.drift", f.Users[Viewer].Token, f.ServiceID, `... on Service { conn: drift(` + onEnv + `first: $first, after: $after) { %s } }`, "name", nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				// read reads one page: vars are first/after or last/before.
				read := func(vars map[string]any) (Response, string) {
					t.Helper()
					sel := `edges { cursor node { id } } nodes { id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }`
					if c.key != "" {
						sel = strings.ReplaceAll(sel, "{ id }", "{ "+c.key+" }")
					}
					field := strings.Replace(c.field, "first: $first, after: $after", "first: $first, after: $after, last: $last, before: $before", 1)
					q := `query($id: ID!, $first: Int, $after: String, $last: Int, $before: String) { node(id: $id) { id ` + fmt.Sprintf(field, sel) + ` } }`
					path := "node.conn"
					if strings.Contains(c.field, "inventory { conn:") {
						path = "node.inventory.conn" // a connection of the cluster's inventory
					}
					if c.node == "" {
						q = `query($first: Int, $after: String, $last: Int, $before: String) { viewer { ` + fmt.Sprintf(field, sel) + ` } }`
						path = "viewer.conn"
					} else {
						vars["id"] = c.node
					}
					if c.session != nil {
						r := env.DoSession(t, c.session, q, vars)
						if r.Status != http.StatusOK || len(r.Errors) > 0 {
							t.Fatalf("request failed: HTTP %d, errors %s\nquery: %s\nvars: %v", r.Status, r.errorList(), q, vars)
						}
						return r, path
					}
					return env.MustDo(t, c.token, q, vars), path
				}
				// keys tells a page's nodes apart: by id, or by c.key.
				keys := func(r Response, path string) []string {
					if c.key == "" {
						return r.IDs(path)
					}
					var out []string
					for _, n := range r.List(path) {
						out = append(out, fmt.Sprint(dig(n, c.key)))
					}
					return out
				}
				page := func(first int, after string) (ids []string, edgeCursors []string, end string, more bool) {
					t.Helper()
					vars := map[string]any{"first": first}
					if after != "" {
						vars["after"] = after
					}
					r, path := read(vars)
					ids = keys(r, path+".nodes")
					for _, e := range r.List(path + ".edges") {
						edgeCursors = append(edgeCursors, dig(e, "cursor").(string))
						key := cmp.Or(c.key, "id")
						if id := fmt.Sprint(dig(e, "node."+key)); !slices.Contains(ids, id) {
							t.Errorf("edge node %v is not among nodes %v", id, ids)
						}
					}
					end = r.Str(path + ".pageInfo.endCursor")
					more, _ = r.Get(path + ".pageInfo.hasNextPage").(bool)
					return
				}
				all, _, _, more := page(100, "")
				if more {
					t.Fatalf("one page of 100 says there is more")
				}
				if len(all) < 2 {
					t.Fatalf("got %d items, want at least 2 to page through", len(all))
				}
				var walked []string
				after := ""
				for i := 0; ; i++ {
					if i > len(all) {
						t.Fatalf("paging does not end: %v", walked)
					}
					ids, cursors, end, more := page(1, after)
					if len(ids) > 1 {
						t.Fatalf("page of first: 1 has %d items", len(ids))
					}
					if len(ids) == 1 && (end == "" || cursors[0] != end) {
						t.Errorf("endCursor %q, want the last edge's cursor %v", end, cursors)
					}
					walked = append(walked, ids...)
					if !more {
						break
					}
					after = end
				}
				if !slices.Equal(walked, all) {
					t.Errorf("pages of 1: got %v, want %v", walked, all)
				}
				// Backwards, last: 1 before the start cursor, from the
				// end to the start: the same items.
				var back []string
				before := ""
				for i := 0; ; i++ {
					if i > len(all) {
						t.Fatalf("paging backwards does not end: %v", back)
					}
					vars := map[string]any{"last": 1}
					if before != "" {
						vars["before"] = before
					}
					r, path := read(vars)
					ids := keys(r, path+".nodes")
					if len(ids) > 1 {
						t.Fatalf("page of last: 1 has %d items", len(ids))
					}
					if next, _ := r.Get(path + ".pageInfo.hasNextPage").(bool); next {
						t.Errorf("a page read backwards says hasNextPage")
					}
					back = append(ids, back...)
					prev, _ := r.Get(path + ".pageInfo.hasPreviousPage").(bool)
					if !prev {
						break
					}
					before = r.Str(path + ".pageInfo.startCursor")
				}
				if !slices.Equal(back, all) {
					t.Errorf("pages of last 1: got %v, want %v", back, all)
				}
			})
		}
		// The inventory's nodes by name, its workloads by namespace, then
		// name.
		inv := env.MustDo(t, f.Owner.Token, `query($c: ID!) { node(id: $c) { ... on Cluster { inventory {
			nodes { nodes { name } } workloads { nodes { namespace name } } } } } }`, map[string]any{"c": f.ClusterID})
		var nodeNames, workloadNames []string
		for _, n := range inv.List("node.inventory.nodes.nodes") {
			nodeNames = append(nodeNames, dig(n, "name").(string))
		}
		for _, w := range inv.List("node.inventory.workloads.nodes") {
			workloadNames = append(workloadNames, dig(w, "namespace").(string)+"/"+dig(w, "name").(string))
		}
		if want := []string{"node-a", "node-b", "node-c"}; !slices.Equal(nodeNames, want) {
			t.Errorf("the inventory's nodes: %v, want %v", nodeNames, want)
		}
		if want := []string{"shop/cart", "shop/web", "shop-prod/api"}; !slices.Equal(workloadNames, want) {
			t.Errorf("the inventory's workloads: %v, want %v", workloadNames, want)
		}
		// The set's comments, oldest first; between two cursors, the one
		// between them.
		cm := env.MustDo(t, f.Owner.Token, `query($c: ID!) { node(id: $c) { ... on ChangeSet { comments { edges { cursor node { body } } } } } }`,
			map[string]any{"c": set})
		var bodies, commentCursors []string
		for _, e := range cm.List("node.comments.edges") {
			bodies, commentCursors = append(bodies, dig(e, "node.body").(string)), append(commentCursors, dig(e, "cursor").(string))
		}
		if want := []string{"first word", "second word", "third word"}; !slices.Equal(bodies, want) {
			t.Fatalf("the set's comments: %v, want %v", bodies, want)
		}
		between := env.MustDo(t, f.Owner.Token, `query($c: ID!, $a: String, $b: String) { node(id: $c) { ... on ChangeSet {
			comments(after: $a, before: $b) { nodes { body } pageInfo { hasNextPage hasPreviousPage } } } } }`,
			map[string]any{"c": set, "a": commentCursors[0], "b": commentCursors[2]})
		if got := between.List("node.comments.nodes"); len(got) != 1 || dig(got[0], "body") != "second word" {
			t.Errorf("the comments between the first and the third: %s", between.Body)
		}
		// The person's three sessions, newest first: the browser's own,
		// the oldest, last.
		r := env.DoSession(t, person.cookie, `{ viewer { session { id } sessions(first: 100) { nodes { id createdAt } } } }`, nil)
		nodes := r.List("viewer.sessions.nodes")
		if len(r.Errors) > 0 || len(nodes) != 3 || dig(nodes[2], "id") != r.Str("viewer.session.id") {
			t.Fatalf("the person's sessions: %s, want three, their own last", r.Body)
		}
		if !slices.IsSortedFunc(nodes, func(a, b any) int { return strings.Compare(dig(b, "createdAt").(string), dig(a, "createdAt").(string)) }) {
			t.Errorf("the person's sessions are not newest first: %v", nodes)
		}
	})
}

// The prefetched child connections read one row past the page only when
// hasNextPage is selected. Asked both ways in one request, each alias gets
// its own page: the one that selects hasNextPage learns there is more. (The
// one with hasNextPage comes first: a cache that mixed the two up would
// keep the later, shorter read.)
func TestPrefetchedPagesWithAndWithoutHasNext(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		for i := range 2 {
			f.MustDo(t, deployMutation, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(int64(2000 + i))})
		}
		const deps = `deployments(first: 1) { nodes { id } }`
		const depsNext = `deployments(first: 1) { nodes { id } pageInfo { hasNextPage } }`
		q := `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: 100) { nodes { id
			next: environments(first: 1) { nodes { id ` + depsNext + ` } pageInfo { hasNextPage } }
			plain: environments(first: 1) { nodes { id ` + deps + ` } }
			envs: environments(first: 100) { nodes { id next: ` + depsNext + ` plain: ` + deps + ` } } } } } } }`
		r := env.MustDo(t, f.Owner.Token, q, map[string]any{"t": f.TenantID})
		var project map[string]any
		for _, p := range r.List("node.projects.nodes") {
			if dig(p, "id") == f.ProjectID {
				project = p.(map[string]any)
			}
		}
		if project == nil {
			t.Fatalf("project %s not in %v", f.ProjectID, r.Get("node.projects"))
		}
		envs := dig(project, "envs.nodes").([]any)
		if len(envs) < 2 {
			t.Fatalf("want at least 2 environments in the fixture's project, got %d", len(envs))
		}
		for _, alias := range []string{"plain", "next"} {
			if n := len(dig(project, alias+".nodes").([]any)); n != 1 {
				t.Errorf("%s: environments(first: 1) gave %d nodes", alias, n)
			}
		}
		if more, _ := dig(project, "next.pageInfo.hasNextPage").(bool); !more {
			t.Errorf("environments(first: 1) of %d says there is no next page", len(envs))
		}
		for _, e := range envs {
			if dig(e, "id") != f.EnvironmentID {
				continue
			}
			plain, next := dig(e, "plain.nodes").([]any), dig(e, "next.nodes").([]any)
			if len(plain) != 1 || len(next) != 1 || dig(plain[0], "id") != dig(next[0], "id") {
				t.Errorf("the latest deployment asked both ways: %v and %v", plain, next)
			}
			if more, _ := dig(e, "next.pageInfo.hasNextPage").(bool); !more {
				t.Errorf("deployments(first: 1) of an environment deployed 3 times says there is no next page")
			}
		}
	})
}

// The deployments prefetch reads the columns the selection shows (planned
// in resolvers/plan.go): of deployments and of their releases. Three
// aliases of one environment's latest deployment, two read in part with
// different columns, one whole (resolver fields: cluster, requestedBy,
// service) and first (a cache that mixed them up would keep the last read),
// must each get every field it asks for as the whole read has
// it: a page or release read in part and served to another selection would
// show empty strings, zero numbers or a missing row.
func TestPrefetchReadsTheColumnsItShows(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		f.MustDo(t, deployMutation, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(3000)})
		q := `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: 20) { nodes { environments(first: 20) { nodes { id
			whole: deployments(first: 1) { nodes { id stage createdAt message updatedAt cluster { id } requestedBy { id }
				release { number image imageDigest createdAt service { id } processes { name } } } }
			other: deployments(first: 1) { nodes { id createdAt message release { imageDigest image createdAt } } }
			few: deployments(first: 1) { nodes { id stage release { number } } } } } } } } } }`
		r := env.MustDo(t, f.Owner.Token, q, map[string]any{"t": f.TenantID})
		var found bool
		for _, p := range r.List("node.projects.nodes") {
			for _, e := range dig(p, "environments.nodes").([]any) {
				if dig(e, "id") != f.EnvironmentID {
					continue
				}
				found = true
				whole := dig(e, "whole.nodes").([]any)
				if len(whole) != 1 {
					t.Fatalf("whole: got %d deployments, want 1", len(whole))
				}
				w := whole[0]
				for _, path := range []string{"id", "stage", "createdAt", "message", "updatedAt", "cluster.id",
					"release.number", "release.image", "release.imageDigest", "release.createdAt", "release.service.id"} {
					if v := dig(w, path); v == nil || v == "" || v == float64(0) {
						t.Errorf("whole: %s is %v", path, v)
					}
				}
				if got := dig(w, "release.imageDigest"); got != Digest(3000) {
					t.Errorf("whole: the latest deployment's digest is %v, want %s", got, Digest(3000))
				}
				for alias, paths := range map[string][]string{
					"few":   {"id", "stage", "release.number"},
					"other": {"id", "createdAt", "message", "release.imageDigest", "release.image", "release.createdAt"},
				} {
					nodes := dig(e, alias+".nodes").([]any)
					if len(nodes) != 1 {
						t.Errorf("%s: got %d deployments, want 1", alias, len(nodes))
						continue
					}
					for _, path := range paths {
						if got, want := dig(nodes[0], path), dig(w, path); got != want {
							t.Errorf("%s: %s is %v, want %v as read whole", alias, path, got, want)
						}
					}
				}
			}
		}
		if !found {
			t.Fatalf("environment %s not in the answer", f.EnvironmentID)
		}
	})
}
