package apitest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// cutProxy forwards TCP connections to a server until it is cut: then it
// closes every open connection and refuses new ones until restored — a
// network drop between a browser and the control plane.
type cutProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
	pings  int // graphql-transport-ws pings the server sent through it
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { l.Close(); p.setCut(true) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) URL() string { return "http://" + p.l.Addr().String() }

func (p *cutProxy) serve(c net.Conn) {
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, pingCounter{up, p})
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// pingCounter reads what the server sends, counting its keep-alive
// pings (a websocket text frame from the server is unmasked: the JSON
// shows as it is).
type pingCounter struct {
	r io.Reader
	p *cutProxy
}

func (pc pingCounter) Read(b []byte) (int, error) {
	n, err := pc.r.Read(b)
	if k := bytes.Count(b[:n], []byte(`{"type":"ping"}`)); k > 0 {
		pc.p.mu.Lock()
		pc.p.pings += k
		pc.p.mu.Unlock()
	}
	return n, err
}

// Pings is how many keep-alive pings the server sent through the proxy.
func (p *cutProxy) Pings() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pings
}

// setCut cuts the network (closing what is open) or restores it.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

// The console's deployment page in headless Chromium follows a rollout
// live as the agent reports it; the network between the browser and the
// control plane is cut mid-rollout and restored, and the page ends with
// every stage once, in order (web/test/deployment.mjs).
func TestConsoleDeploymentLive(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	person := projectPerson(t, f, "watcher", "VIEWER")
	agent, _ := connectStageAgent(t, f, "prod-eu")
	depID, raw := wsDeploy(t, f)
	agent.waitDeployment(string(raw))
	proxy := startCutProxy(t, strings.TrimPrefix(env.Server.URL, "http://"))

	said := driveBrowser(t, "deployment.mjs", []string{"NEBULA_URL=" + proxy.URL(), "NEBULA_DEPLOYMENT=" + depID,
		"NEBULA_SESSION=" + person.cookie.Value, screenshotsEnv(t),
		"NEBULA_WANT_STAGES=QUEUED,DELIVERING,STARTING,PROBING,SWITCHING_TRAFFIC,RETIRING,SUCCEEDED"},
		func(line string, _ io.Writer) {
			switch {
			case line == "READY":
				agent.report(string(raw), model.StageStarting)
				agent.report(string(raw), model.StageProbing)
				agent.handled()
			case line == "SEEN PROBING":
				// The network drops: what the agent reports meanwhile must
				// reach the page once it is back, once.
				proxy.setCut(true)
				agent.report(string(raw), model.StageSwitchingTraffic)
				agent.report(string(raw), model.StageRetiring)
				agent.report(string(raw), model.StageSucceeded)
				agent.handled()
			case line == "SEEN RECONNECTING":
				time.Sleep(time.Second) // a moment offline, the page retrying
				proxy.setCut(false)
			case strings.HasPrefix(line, "FIRST_RENDER_MS "):
				t.Logf("deployment page: first render with its stages in %s ms", strings.TrimPrefix(line, "FIRST_RENDER_MS "))
			}
		})
	if said[len(said)-1] != "DONE" {
		t.Fatalf("deployment.mjs ended with %v", said)
	}
}

// The console as each role sees it (web/test/roles.mjs): deploy from the
// console with its preview, the rollout live to SUCCEEDED, an approval
// by a second project manager, no deploy control for a viewer and their
// forged deploy refused.
func TestConsoleRoles(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	sessions := map[string]string{}
	for role, projectRole := range map[string]string{"editor": "EDITOR", "pm": "PROJECT_MANAGER", "pm2": "PROJECT_MANAGER", "viewer": "VIEWER"} {
		sessions[role] = projectPerson(t, f, role, projectRole).cookie.Value
	}
	agent, _ := connectStageAgent(t, f, "prod-eu")
	driveBrowser(t, "roles.mjs", []string{"NEBULA_URL=" + env.Server.URL, "NEBULA_SESSIONS=" + mustJSON(t, sessions),
		"NEBULA_IDS=" + mustJSON(t, map[string]string{"service": f.ServiceID, "environment": f.EnvironmentID}), screenshotsEnv(t)},
		func(line string, reply io.Writer) {
			dep, ok := strings.CutPrefix(line, "DEPLOYED ")
			if !ok {
				return
			}
			raw := rawID(t, "Deployment", dep)
			agent.waitDeployment(raw)
			for _, st := range []model.DeploymentStage{model.StageStarting, model.StageProbing, model.StageSwitchingTraffic,
				model.StageRetiring, model.StageSucceeded} {
				agent.report(raw, st)
			}
			agent.handled()
			_, _ = io.WriteString(reply, "rolled out\n")
		})
	// The approval is on record: the second project manager's.
	r := f.MustDo(t, `query($p: ID!) { node(id: $p) { ... on Project { environments { nodes { name deployments(first: 1) { nodes { stage approvals { decision } } } } } } } }`,
		map[string]any{"p": f.ProjectID})
	for _, e := range r.List("node.environments.nodes") {
		if dig(e, "name") == "production-gated" {
			if d := dig(e, "deployments.nodes.0"); dig(d, "approvals.0.decision") != "APPROVED" || dig(d, "stage") != "DELIVERING" {
				t.Errorf("the gated deployment: %v", d)
			}
		}
	}
}

// The approvals queue lists a tenant's deployments waiting for an
// approval, oldest first, each only to those who may read its project.
func TestApprovalQueue(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		first := deployTo(t, f, f.Owner.Token, f.ServiceID, f.ProtectedEnvironmentID)
		second := deployTo(t, f, f.Owner.Token, f.ServiceID, f.ProtectedEnvironmentID)
		queue := func(r Role) []string {
			t.Helper()
			res := env.MustDo(t, f.Users[r].Token, `query($t: ID!) { node(id: $t) { ... on Tenant { approvalQueue { nodes { id stage } } } } }`,
				map[string]any{"t": f.TenantID})
			return res.IDs("node.approvalQueue.nodes")
		}
		// A newer deploy of the service supersedes the one waiting: only
		// the newer waits in the queue.
		want := []string{second.ID}
		if first.Stage != "AWAITING_APPROVAL" || second.Stage != "AWAITING_APPROVAL" {
			t.Fatalf("deploys to the protected environment: %s, %s", first.Stage, second.Stage)
		}
		if st := f.Node(t, first.ID, `... on Deployment { stage }`)["stage"]; st != "SUPERSEDED" {
			t.Errorf("the first deploy is %v, want SUPERSEDED", st)
		}
		for _, r := range []Role{Admin, ProjectManager, Editor, Viewer} {
			if got := queue(r); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s's queue: %v, want %v", r, got, want)
			}
		}
		if got := queue(Member); len(got) != 0 {
			t.Errorf("a member without a role in the project sees %v in the queue", got)
		}
	})
}

// A tenant's deployments under way are those that have not ended, newest
// first, each listed only to those who may read its project.
func TestDeploymentsUnderWay(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		gated := deployTo(t, f, f.Owner.Token, f.ServiceID, f.ProtectedEnvironmentID)
		delivering := deployTo(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID)
		cancelled := deployTo(t, f, f.Owner.Token, f.ServiceID, f.ProtectedEnvironmentID)
		f.MustDo(t, `mutation($d: ID!) { cancelDeployment(input: {deploymentId: $d}) { `+ue+` } }`, map[string]any{"d": cancelled.ID})
		under := func(r Role) []string {
			t.Helper()
			return env.MustDo(t, f.Users[r].Token, `query($t: ID!) { node(id: $t) { ... on Tenant { deploymentsUnderWay { nodes { id stage } } } } }`,
				map[string]any{"t": f.TenantID}).IDs("node.deploymentsUnderWay.nodes")
		}
		// The cancelled one superseded the first gated one; it is over, the
		// delivering one is not.
		if st := f.Node(t, gated.ID, `... on Deployment { stage }`)["stage"]; st != "SUPERSEDED" {
			t.Fatalf("the first gated deploy is %v, want SUPERSEDED", st)
		}
		want := []string{delivering.ID}
		for _, r := range []Role{Admin, ProjectManager, Editor, Viewer} {
			if got := under(r); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s: deployments under way %v, want %v", r, got, want)
			}
		}
		if got := under(Member); len(got) != 0 {
			t.Errorf("a member without a role in the project sees %v", got)
		}
	})
}

// A cluster's console page for a tenant admin and for a member
// (web/test/cluster.mjs).
func TestConsoleCluster(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	boss, _, _ := signedInAs(t, f, "boss", "ADMIN")
	member, _, _ := signedInPerson(t, f, "member")
	runBrowser(t, "cluster.mjs", "NEBULA_URL="+env.Server.URL, "NEBULA_CLUSTER="+f.ClusterID, "NEBULA_CLUSTER_NAME=prod-eu",
		"NEBULA_SESSIONS="+mustJSON(t, map[string]string{"admin": boss.cookie.Value, "member": member.cookie.Value}), screenshotsEnv(t))
}

// A service's logs in the console (web/test/logs.mjs): the last lines,
// live ones as the agent sends them, a text filter; read by a viewer of
// the project.
func TestConsoleLogs(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	person := projectPerson(t, f, "reader", "VIEWER")
	agent, _ := connectStageAgent(t, f, "prod-eu")
	st := newLogStream(t, f, f.ServiceID, f.EnvironmentID, "api-web-1")
	start := time.Now().UTC().Add(-time.Minute)
	agent.logs(sent{s: st, lines: printed(start, "listening on :8080", "GET /healthz 200", "GET /api/items 200")})

	driveBrowser(t, "logs.mjs", []string{"NEBULA_URL=" + env.Server.URL, "NEBULA_SESSION=" + person.cookie.Value,
		"NEBULA_SERVICE=" + f.ServiceID, "NEBULA_ENV=" + f.EnvironmentID, screenshotsEnv(t)},
		func(line string, _ io.Writer) {
			if line == "READY" {
				agent.logs(sent{s: st, lines: printed(start.Add(time.Second), "GET /api/items 200", "error: the database is away")})
			}
		})
}

// The console's pages, the sign-in and the invitation pages pass axe-core's
// WCAG 2.1 A/AA checks on a desktop and a 360-pixel phone, never scroll
// sideways there, and the navigation works from the keyboard
// (web/test/a11y.mjs).
func TestConsoleAccessible(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	admin, _, _ := signedInAs(t, f, "a11y", "ADMIN")
	agent, _ := connectStageAgent(t, f, "prod-eu")
	_, raw := wsDeploy(t, f)
	agent.waitDeployment(string(raw))
	// Each page: a text it shows when ready, and the name of its
	// screenshot at phone width ("" for none).
	pages := map[string][2]string{
		"/":                                  {"Overview", "console-overview"},
		"/#/deployments/" + rawToGlobal(raw): {"Stage:", "console-deployment"},
		"/#/clusters/" + f.ClusterID:         {"Install the agent", ""},
		"/#/environments/" + f.EnvironmentID: {"Placement", "console-environment"},
		"/#/approvals":                       {"Approvals", ""},
		"/#/audit":                           {"Filter", ""},
		"/#/account":                         {"Your sign-ins", "console-account"},
		"/#/people":                          {"Invite someone", "console-people"},
		"/#/logs/" + f.ServiceID + "/" + f.EnvironmentID: {"Logs of", ""},
		"/#/cli/BCDF-GHJK": {"Sign in the CLI", ""},
		"/signin":          {"Sign in to NebulaCtrl", "signin"},
		"/invitation":      {"Set your passphrase", ""},
	}
	runBrowser(t, "a11y.mjs", "NEBULA_URL="+env.Server.URL, "NEBULA_SESSION="+admin.cookie.Value, "NEBULA_PAGES="+mustJSON(t, pages),
		screenshotsEnv(t))
}

func rawToGlobal(raw model.DeploymentID) string { return gid.Encode(gid.Deployment, raw) }

// An environment's console page as an editor (web/test/environment.mjs):
// placement, variables without the secret's value, releases, a rollback
// that makes a deployment of the earlier release.
func TestConsoleEnvironment(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	canary := "canary-" + f.Unique("secret") + "-value"
	f.MustDo(t, `mutation($p: ID!, $e: ID!, $v: String!) { setVariable(input: {projectId: $p, environmentId: $e, name: "DB_PASSWORD", value: $v, secret: true}) { variable { id } `+ue+` } }`,
		map[string]any{"p": f.ProjectID, "e": f.EnvironmentID, "v": canary})
	wsDeploy(t, f) // release 2: there is an earlier one to go back to
	person := projectPerson(t, f, "editor", "EDITOR")
	runBrowser(t, "environment.mjs", "NEBULA_URL="+env.Server.URL, "NEBULA_SESSION="+person.cookie.Value, "NEBULA_CANARY="+canary, screenshotsEnv(t))
	r := f.MustDo(t, `query($e: ID!) { node(id: $e) { ... on Environment { deployments(first: 1) { nodes { release { number } } } } } }`,
		map[string]any{"e": f.EnvironmentID})
	if n := r.Get("node.deployments.nodes.0.release.number"); n != float64(1) {
		t.Errorf("after the rollback the newest deployment is of release %v, want 1", n)
	}
}

// A deploy of a commit from the console (web/test/build.mjs): an editor
// deploys the Git service's commit, the deployment page waits at BUILDING
// saying why, shows the build's log live as the agent sends it, then the
// image and the rollout's next stage.
func TestConsoleBuild(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	f.NewGitService(t, "shop-api", GitHubRepository)
	person := projectPerson(t, f, "builder", "EDITOR")
	agent, _ := connectStageAgent(t, f, "prod-eu")
	var build string
	driveBrowser(t, "build.mjs", []string{"NEBULA_URL=" + env.Server.URL, "NEBULA_SESSION=" + person.cookie.Value,
		"NEBULA_COMMIT=" + SampleCommit, screenshotsEnv(t)},
		func(line string, reply io.Writer) {
			switch {
			case strings.HasPrefix(line, "DEPLOYED "):
				dep := strings.TrimPrefix(line, "DEPLOYED ")
				build = rawID(t, "Build", f.Node(t, dep, `... on Deployment { build { id } }`)["build"].(map[string]any)["id"].(string))
				if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
					t.Error(err)
				}
				agent.waitBuilds(build)
				agent.buildReport(build, 0, protocol.BuildRunning, "", "", "#1 [internal] load build definition from Dockerfile", "#2 RUN go build ./...")
				_, _ = io.WriteString(reply, "lines\n")
			case line == "SEEN LINES":
				agent.buildReport(build, 2, protocol.BuildSucceeded, Digest(77), "", "#3 pushing the image")
				_, _ = io.WriteString(reply, "built\n")
			}
		})
	if st := buildState(t, f, gid.Encode(gid.Build, build)); st["status"] != "SUCCEEDED" || st["imageDigest"] != Digest(77) {
		t.Errorf("the build after the console's deploy: %v", st)
	}
}

// The overview pages its lists (web/test/overview.mjs): a tenant with 28
// clusters and 12 projects shows 25 and 10 first, the rest after "More".
func TestConsoleOverviewPages(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	f.MustDo(t, `mutation($t: ID!) { setTenantPlan(input: {tenantId: $t, plan: ENTERPRISE}) { userErrors { message } } }`,
		map[string]any{"t": f.TenantID})
	names := func(kind string) []string {
		r := f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { name clusters(first: 100) { nodes { name } } projects(first: 100) { nodes { name } } } } }`,
			map[string]any{"t": f.TenantID})
		var out []string
		for _, n := range r.List("node." + kind + ".nodes") {
			out = append(out, dig(n, "name").(string))
		}
		return out
	}
	for i := len(names("clusters")); i < 28; i++ {
		f.MustDo(t, `mutation($t: ID!, $n: String!) { registerCluster(input: {tenantId: $t, name: $n}) { cluster { id } `+ue+` } }`,
			map[string]any{"t": f.TenantID, "n": fmt.Sprintf("edge-%02d", i)})
	}
	for i := len(names("projects")); i < 12; i++ {
		f.MustDo(t, `mutation($t: ID!, $n: String!) { createProject(input: {tenantId: $t, name: $n}) { project { id } `+ue+` } }`,
			map[string]any{"t": f.TenantID, "n": fmt.Sprintf("app-%02d", i)})
	}
	admin, _, _ := signedInAs(t, f, "pager", "ADMIN")
	tenant := f.Node(t, f.TenantID, `... on Tenant { name }`)["name"].(string)
	runBrowser(t, "overview.mjs", "NEBULA_URL="+env.Server.URL, "NEBULA_SESSION="+admin.cookie.Value, screenshotsEnv(t),
		"NEBULA_WANT="+mustJSON(t, map[string]any{"tenant": tenant, "clusters": names("clusters"), "projects": names("projects")}))
}

// A CLI's sign-in confirmed in the console (web/test/cli.mjs): the link
// the CLI printed leads a signed-out person through the sign-in page back
// to it; they confirm the code and the CLI's poll gets their token.
func TestConsoleConfirmsCLILogin(t *testing.T) {
	t.Parallel()
	browserTests(t)
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	person, _, _ := signedInAs(t, f, "cli-person", "MEMBER") // sets the passphrase "a passphrase for cli-person"
	email := dig(person.gql(`{ viewer { user { email } } }`, nil).body, "data.viewer.user.email").(string)
	code, secret, link := cliStart(t, env)
	// The link names the public URL; the test server listens elsewhere.
	link = env.Server.URL + link[strings.Index(link, "/#/cli/"):]
	runBrowser(t, "cli.mjs", "NEBULA_URL="+env.Server.URL, "NEBULA_LINK="+link, "NEBULA_CODE="+code,
		"NEBULA_EMAIL="+email, "NEBULA_PASSPHRASE=a passphrase for cli-person", screenshotsEnv(t))
	status, token := cliPoll(t, env, secret)
	if status != 200 {
		t.Fatalf("the CLI's poll after the confirmation: %d", status)
	}
	f.addSecret(token)
	if got := env.MustDo(t, token, `{ viewer { user { email } } }`, nil).Str("viewer.user.email"); got != email {
		t.Errorf("the CLI's token is %s's, want %s's", got, email)
	}
}
