package apitest

import (
	"strings"
	"testing"
)

// Previews show per cluster what a change would do, are checked exactly as
// the mutation is, and store nothing.
func TestChangePreviews(t *testing.T) {
	t.Parallel()
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		rev := f.revision(t)
		audit := f.AuditCount(t)
		releases := func() int {
			return len(f.Values(t, f.ServiceID, "... on Service { releases(first: 100) { nodes { id } } }", "releases.nodes", "id"))
		}
		nReleases := releases()

		t.Run("deploy", func(t *testing.T) {
			r := f.MustDo(t, `query($s: ID!, $e: ID!, $d: String!) { previewDeploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
				clusters { cluster { id } fromRevision added { kind namespace name } removed { kind name } } userErrors { message } } }`,
				map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(5150)})
			cs := r.List("previewDeploy.clusters")
			if len(cs) != 1 {
				t.Fatalf("clusters %s, want one", r.Body)
			}
			body := string(r.Body)
			// The fixture's first deploy is release 1: the preview replaces
			// its deployment with release 2's.
			for _, want := range []string{`{"kind":"Deployment","namespace":"shop","name":"api-web-r2"}`, `{"kind":"Deployment","name":"api-web-r1"}`} {
				if !strings.Contains(body, want) {
					t.Errorf("preview lacks %s: %s", want, body)
				}
			}
			if cs[0].(map[string]any)["cluster"].(map[string]any)["id"] != f.ClusterID {
				t.Errorf("preview names another cluster: %s", body)
			}
		})
		t.Run("a reference to a missing service holds", func(t *testing.T) {
			r := f.MustDo(t, `query($p: ID!, $s: ID!) { previewSetVariable(input: {projectId: $p, serviceId: $s, name: "CART", value: "${{ services.cart.url }}"}) {
				clusters { nowHeld { namespace service reason } released { service } } userErrors { message } } }`,
				map[string]any{"p": f.ProjectID, "s": f.ServiceID})
			body := string(r.Body)
			if !strings.Contains(body, `"service":"api"`) || !strings.Contains(body, "references service cart, which does not exist") {
				t.Errorf("preview does not hold api with the reason: %s", body)
			}
		})
		t.Run("refused as the mutation would be", func(t *testing.T) {
			r := env.Do(t, f.Owner.Token, `query($s: ID!, $e: ID!) { previewDeploy(input: {serviceId: $s, environmentId: $e, imageDigest: "sha256:nope"}) {
				clusters { fromRevision } userErrors { field message code } } }`,
				map[string]any{"s": f.ServiceID, "e": f.EnvironmentID})
			ue := r.UserErrors("previewDeploy")
			if len(ue) != 1 || ue[0].Code != "BAD_USER_INPUT" || len(r.List("previewDeploy.clusters")) != 0 {
				t.Errorf("got %s, want one BAD_USER_INPUT userError and no clusters", r.Body)
			}
			r = env.Do(t, f.Users[Viewer].Token, `query($s: ID!, $e: ID!) { previewDeploy(input: {serviceId: $s, environmentId: $e, imageDigest: "sha256:`+strings.Repeat("a", 64)+`"}) {
				clusters { fromRevision } } }`, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID})
			if codes := r.ErrorCodes(); len(codes) != 1 || codes[0] != "FORBIDDEN" {
				t.Errorf("viewer previewing a deploy: %v, want FORBIDDEN", codes)
			}
		})
		if got := f.revision(t); got != rev {
			t.Errorf("previews moved the revision from %d to %d", rev, got)
		}
		if got := f.AuditCount(t); got != audit {
			t.Errorf("previews wrote %d audit events", got-audit)
		}
		if got := releases(); got != nReleases {
			t.Errorf("previews created %d releases", got-nReleases)
		}
	})
}
