package apitest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// utf16le is s as a program writing UTF-16 (little endian) prints it.
func utf16le(s string) string {
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(s)) {
		b.WriteByte(byte(u))
		b.WriteByte(byte(u >> 8))
	}
	return b.String()
}

// A secret is redacted in every form and place the cluster reports it
// (issue 30, rows 11–14): printed as-is, split by a NUL, in UTF-16, by a
// service that takes it in by reference (inside a template), in an event
// the agent tied to no service, in a drift report, and in a build's log
// (the Git credential too). Every text column of every table is scanned:
// the canary is stored nowhere.
func TestRedactionForms(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		canary, credential := newCanary(), newCanary()+"-credential"
		f.MustDo(t, `mutation($s: ID!, $v: String!) { updateService(input: {serviceId: $s, variables: [{name: "API_KEY", value: $v, secret: true}]}) {
			service { id } userErrors { message } } }`, map[string]any{"s": f.ServiceID, "v": canary})
		web := f.MustDo(t, `mutation($p: ID!) { createService(input: {projectId: $p, name: "web", image: "registry.example.com/shop/web",
			processes: [{name: "web", port: 8080}], variables: [{name: "UPSTREAM", value: "https://key:${{ services.api.variables.API_KEY }}@api"}]}) {
			service { id } userErrors { message } } }`, map[string]any{"p": f.ProjectID}).Str("createService.service.id")
		git := f.NewGitService(t, "builder", GitHubRepository)
		f.MustDo(t, `mutation($s: ID!, $c: String!) { updateService(input: {serviceId: $s, git: {repository: "`+GitHubRepository+`", branch: "main", credential: $c}}) {
			service { id } userErrors { message } } }`, map[string]any{"s": git, "c": credential})
		for _, svc := range []string{f.ServiceID, web} {
			f.MustDo(t, `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
				deployment { id } userErrors { message } } }`, map[string]any{"s": svc, "e": f.EnvironmentID, "d": Digest(7)})
		}
		build := f.MustDo(t, `mutation($s: ID!, $e: ID!) { deploy(input: {serviceId: $s, environmentId: $e, commit: "`+SampleCommit+`"}) {
			build { id } userErrors { message } } }`, map[string]any{"s": git, "e": f.EnvironmentID}).Str("deploy.build.id")

		agent, _ := connectStageAgent(t, f, "prod-eu")
		envID, webID := rawID(t, gid.Environment, f.EnvironmentID), rawID(t, gid.Service, web)
		half := len(canary) / 2
		stream := newLogStream(t, f, web, f.EnvironmentID, "web-web-1")
		at := time.Now().Add(-time.Minute)
		agent.logs(sent{s: stream, lines: printed(at,
			"as-is "+canary,
			"split "+canary[:half]+"\x00"+canary[half:],
			utf16le("wide "+canary),
			"upstream https://key:"+canary+"@api")})
		lines, _ := readLogs(t, f, f.Owner.Token, web, f.EnvironmentID, map[string]any{"first": 100})
		for _, l := range lines {
			if !strings.Contains(l.Text, "[redacted]") {
				t.Errorf("a line of web shows no redaction: %q", l.Text)
			}
		}
		if len(lines) != 4 {
			t.Errorf("web's log holds %d lines, want 4", len(lines))
		}

		ev := protocol.Event{UID: "u-canary", Count: 1, Type: "Warning", Reason: "Failed", Message: "pulling with " + canary,
			Namespace: "shop-prod", ObjectKind: "Namespace", ObjectName: "shop-prod", Source: "kubelet", FirstAt: at, LastAt: at,
			Environment: envID} // tied to no service
		withService := ev
		withService.UID, withService.Service, withService.Message = "u-canary-2", webID, "probe sent "+utf16le(canary)
		agent.events(ev, withService)
		agent.send(protocol.TypeDrift, protocol.Drift{Kind: "Deployment", Namespace: "shop-prod", Name: "web-web-r1",
			Fields: []string{"spec.template.metadata.annotations.token-" + canary}, Managers: []string{"kubectl-" + canary},
			Environment: envID, Service: webID, At: at})
		agent.handled()

		if _, err := env.Plane.RunJobsOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		agent.waitBuilds(rawID(t, gid.Build, build))
		agent.buildReport(rawID(t, gid.Build, build), 0, protocol.BuildRunning, "", "",
			"#1 git clone https://x-access-token:"+credential+"@github.com/nebula-samples/shop-api.git",
			"#2 echo "+canary, "#3 echo "+canary[:half]+"\x00"+canary[half:])

		for _, needle := range []string{canary, credential} {
			for _, where := range columnsCarrying(t, env, needle) {
				t.Errorf("%s carry a secret", where)
			}
		}
	})
}
