package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A change set through `nebula changeset`, against `nebula dev` (the
// embedded store, the simulated cluster and its agent): web runs release
// 1 in dev, which is then protected; the admin opens a set, adds a plain
// variable and a secret, shows and previews it, submits it; their own
// approval is refused; a project manager (an integration with its own
// token) approves it; the admin applies it: release 2 of web. The secret's
// value is never printed.
func TestChangeSetCommands(t *testing.T) {
	isolate(t)
	tokenRE := regexp.MustCompile(`nbt_[A-Za-z0-9]+`)
	stdout, _, _ := start(t, regexp.MustCompile(`subscription \{ buildLog`), "dev")
	ctx := t.Context()
	base := "http://" + os.Getenv("NEBULA_ADDR")
	admin := tokenRE.FindString(stdout.String())
	t.Setenv("NEBULA_CONFIG", filepath.Join(t.TempDir(), "config.json"))
	t.Setenv("NEBULA_CONTEXT", "")
	t.Setenv("NEBULA_URL", base)
	as := func(token string) { t.Setenv("NEBULA_TOKEN", token) }
	as(admin)

	c := &devClient{base: base, token: admin}
	gql := func(query string, vars map[string]any) map[string]any {
		t.Helper()
		res, err := c.do(ctx, query, vars)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	tenant := dig(gql(`{ viewer { tenants { nodes { id } } } }`, nil), "viewer.tenants.nodes.0.id").(string)
	project, err := c.find(ctx, `query($t: ID!) { node(id: $t) { ... on Tenant { projects(first: 100) { nodes { id name } } } } }`,
		map[string]any{"t": tenant}, "node.projects.nodes", "demo")
	if err != nil || project == "" {
		t.Fatalf("the demo project: %q, %v", project, err)
	}
	env, err := c.find(ctx, `query($p: ID!) { node(id: $p) { ... on Project { environments(first: 100) { nodes { id name } } } } }`,
		map[string]any{"p": project}, "node.environments.nodes", "dev")
	if err != nil || env == "" {
		t.Fatalf("the dev environment: %q, %v", env, err)
	}

	// web runs release 1 in dev.
	if out, err := run(t, "deploy", "web", "--env", "dev", "--image", "sha256:"+strings.Repeat("ab", 32), "--wait", "--timeout", "90s"); err != nil {
		t.Fatalf("nebula deploy: %v\n%s", err, out)
	}

	// The reviewer: a project manager of demo, an integration with its own token.
	user := dig(gql(`mutation($t: ID!) { addMember(input: {tenantId: $t, email: "reviewer@example.com", name: "Reviewer", role: MEMBER, kind: INTEGRATION}) {
		member { user { id } } userErrors { message } } }`, map[string]any{"t": tenant}), "addMember.member.user.id").(string)
	gql(`mutation($p: ID!, $u: ID!) { addProjectMember(input: {projectId: $p, userId: $u, role: PROJECT_MANAGER}) { projectMember { id } userErrors { message } } }`,
		map[string]any{"p": project, "u": user})
	reviewer := dig(gql(`mutation($t: ID!, $u: ID!) { createApiToken(input: {name: "reviewer", tenantId: $t, userId: $u}) { secret userErrors { message } } }`,
		map[string]any{"t": tenant, "u": user}), "createApiToken.secret").(string)

	const secretValue = "s3cr3t-never-printed-7f2a"
	var printed strings.Builder // everything the commands print, checked for the secret at the end
	cmd := func(args ...string) (string, error) {
		t.Helper()
		out, err := run(t, args...)
		printed.WriteString(out)
		if err != nil {
			printed.WriteString(err.Error())
		}
		return out, err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := cmd(args...)
		if err != nil {
			t.Fatalf("nebula %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	// open
	var opened struct {
		ID, State string
		Number    int
	}
	if err := json.Unmarshal([]byte(must("changeset", "open", "demo", "--title", "flag on, with a key", "-o", "json")), &opened); err != nil {
		t.Fatal(err)
	}
	if opened.ID == "" || opened.Number != 1 || opened.State != "OPEN" {
		t.Fatalf("open: %+v, want set #1 OPEN with an id", opened)
	}
	set := opened.ID

	// add: a plain variable and a secret, at web's scope
	if out := must("changeset", "add", set, "--set", "FEATURE_FLAG=on", "--service", "web"); !strings.Contains(out, "Change 1: ") ||
		!strings.Contains(out, "FEATURE_FLAG") || !strings.Contains(out, "1 change") {
		t.Errorf("add --set:\n%s", out)
	}
	if out := must("changeset", "add", set, "--set", "API_KEY="+secretValue, "--secret", "--service", "web"); !strings.Contains(out, "Change 2: ") ||
		!strings.Contains(out, "API_KEY") || !strings.Contains(out, "2 changes") {
		t.Errorf("add --set --secret:\n%s", out)
	}

	// Bad input is refused before anything is asked, and changes nothing.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "NOEQUALS", "--service", "web"}, `--set "NOEQUALS": want NAME=VALUE`},
		{[]string{"--set", "NOEQUALS" + secretValue, "--secret"}, "--set takes NAME=VALUE"},
		{[]string{"--set", "A=1", "--delete", "B"}, "one per call"},
		{[]string{"--set", "A=1", "--service", "web", "--environment", "dev"}, "a variable's scope is one service"},
		{[]string{"--deploy", "sha256:" + strings.Repeat("cd", 32), "--service", "web"}, "needs --service and --environment"},
		{[]string{"--domains", "pay.example.com", "--service", "web"}, "want host=process"},
		{[]string{"--secret", "--delete", "A"}, "--secret goes with --set"},
		{[]string{"--set", "A=1", "--service", "nosuch"}, `project demo has no service "nosuch" (it has `},
		{[]string{"--delete", "NOT_SET", "--service", "web"}, "no variable NOT_SET is set at the scope of service web"},
	} {
		out, err := cmd(append([]string{"changeset", "add", set}, bad.args...)...)
		if err == nil || !strings.Contains(err.Error(), bad.want) || ExitCode(err) != exitError {
			t.Errorf("add %v: %q, exit %d, %v; want an error saying %q", bad.args, out, ExitCode(err), err, bad.want)
		}
	}

	// show: the changes, the plain value, never the secret's
	out := must("changeset", "show", set)
	for _, want := range []string{`Change set #1 "flag on, with a key" (project demo): OPEN`, "  1. ", "FEATURE_FLAG", `= "on"`,
		"  2. ", "API_KEY", "secret: its value is never shown"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "  3. ") {
		t.Errorf("show: the refused inputs added a change:\n%s", out)
	}
	var shown struct {
		State   string
		Changes []struct {
			Sequence     int
			Summary      string
			VariableName *string
			Value        *string
			Secret       bool
		}
	}
	if err := json.Unmarshal([]byte(must("changeset", "show", set, "-o", "json")), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Changes) != 2 || shown.Changes[1].Value != nil || !shown.Changes[1].Secret || shown.Changes[0].Value == nil || *shown.Changes[0].Value != "on" {
		t.Errorf("show -o json: %+v", shown)
	}

	// preview: release 2 of web in dev with both variables added.
	out = must("changeset", "preview", set)
	for _, want := range []string{"Cluster dev, revision", "Release 2 of web in dev", "variable FEATURE_FLAG: ADDED", "variable API_KEY (secret): ADDED", "+ Deployment demo-dev/web-web-r2", "1 changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("preview lacks %q:\n%s", want, out)
		}
	}

	// dev is protected from now on: the set must be approved before it is applied.
	protect := func(on bool) {
		t.Helper()
		gql(`mutation($e: ID!, $on: Boolean!) { updateEnvironment(input: {environmentId: $e, protected: $on}) { environment { id } userErrors { message } } }`,
			map[string]any{"e": env, "on": on})
	}
	protect(true)

	// submit; the author's own approval is refused
	if out := must("changeset", "submit", set); !strings.Contains(out, "SUBMITTED") || !strings.Contains(out, "lapses at") {
		t.Errorf("submit:\n%s", out)
	}
	_, err = cmd("changeset", "approve", set)
	if err == nil || !strings.Contains(err.Error(), "another project manager") || !strings.Contains(err.Error(), "FORBIDDEN") || ExitCode(err) == 0 {
		t.Fatalf("the author's approval: %v (exit %d); want a refusal saying another project manager must decide", err, ExitCode(err))
	}
	if _, err := cmd("changeset", "apply", set); err == nil || !strings.Contains(err.Error(), "CONFLICT") {
		t.Errorf("applying a submitted set before its approval: %v; want a refusal (CONFLICT)", err)
	}

	// The project manager approves it; the admin applies it.
	as(reviewer)
	if out := must("changeset", "approve", set, "--comment", "ship it"); !strings.Contains(out, "Approved change set #1") || !strings.Contains(out, "APPROVED") {
		t.Errorf("the project manager's approval:\n%s", out)
	}
	as(admin)
	if out := must("changeset", "apply", set); !strings.Contains(out, "APPLIED") || !strings.Contains(out, "web release 2 → dev") {
		t.Errorf("apply:\n%s", out)
	}
	out = must("changeset", "show", set)
	for _, want := range []string{"(project demo): APPLIED", "reviewer@example.com APPROVED: ship it", "applied:", "Deployments:", "web release 2 → dev"} {
		if !strings.Contains(out, want) {
			t.Errorf("show after apply lacks %q:\n%s", want, out)
		}
	}

	// A second set, dev unprotected again: a deletion, domains, a deploy,
	// a comment. FEATURE_FLAG then changes under it: previewing it names
	// the conflict and fails; it is closed.
	protect(false)
	var second struct{ ID string }
	if err := json.Unmarshal([]byte(must("changeset", "open", "demo", "--title", "tidy up", "-o", "json")), &second); err != nil {
		t.Fatal(err)
	}
	must("changeset", "add", second.ID, "--delete", "FEATURE_FLAG", "--service", "web")
	must("changeset", "add", second.ID, "--domains", "pay.example.com=web", "--service", "web")
	must("changeset", "add", second.ID, "--deploy", "sha256:"+strings.Repeat("cd", 32), "--service", "web", "--environment", "dev")
	must("changeset", "comment", second.ID, "--body", "not today")
	out = must("changeset", "show", second.ID)
	for _, want := range []string{"  1. ", "FEATURE_FLAG", "[pay.example.com=web]", "sha256:" + strings.Repeat("cd", 32), "not today"} {
		if !strings.Contains(out, want) {
			t.Errorf("show of the second set lacks %q:\n%s", want, out)
		}
	}
	gql(`mutation($p: ID!, $s: ID!) { setVariable(input: {projectId: $p, serviceId: $s, name: "FEATURE_FLAG", value: "off"}) { variable { id } userErrors { message } } }`,
		map[string]any{"p": project, "s": webID(t, c, project)})
	if out, err := cmd("changeset", "preview", second.ID); err == nil || !strings.Contains(err.Error(), "would be refused") ||
		!strings.Contains(err.Error(), "CONFLICT") || ExitCode(err) != exitError {
		t.Errorf("preview of a set the project changed under: %v (exit %d)\n%s; want a refusal (CONFLICT)", err, ExitCode(err), out)
	}
	if out := must("changeset", "close", second.ID); !strings.Contains(out, "CLOSED") {
		t.Errorf("close:\n%s", out)
	}

	if strings.Contains(printed.String(), secretValue) {
		t.Errorf("a command printed the secret's value:\n%s", printed.String())
	}
}

func webID(t *testing.T, c *devClient, project string) string {
	t.Helper()
	id, err := c.find(t.Context(), `query($p: ID!) { node(id: $p) { ... on Project { services(first: 100) { nodes { id name } } } } }`,
		map[string]any{"p": project}, "node.services.nodes", "web")
	if err != nil || id == "" {
		t.Fatalf("service web: %q, %v", id, err)
	}
	return id
}
