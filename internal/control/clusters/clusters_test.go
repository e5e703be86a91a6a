package clusters_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/clusters"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The rules of clusters, tested on the embedded store without the API.

func clusterNames(t *testing.T, s *controltest.Shop) []string {
	t.Helper()
	page, err := s.P.Clusters.Clusters(s.Admin, s.Boot.Tenant.ID, store.PageArgs{First: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range page.Items {
		out = append(out, c.Name)
	}
	return out
}

func TestRegisterRefusesBadInput(t *testing.T) {
	s := controltest.New(t)
	for _, c := range []struct {
		name   string
		labels []model.Label
	}{
		{"", nil},
		{"Not A DNS Name", nil},
		{strings.Repeat("a", 300), nil},
		{"eu-1", nil}, // taken
		{"eu-2", []model.Label{{Key: "bad key!", Value: "x"}}},
	} {
		_, secret, err := s.P.Clusters.RegisterCluster(s.Admin, s.Boot.Tenant.ID, c.name, c.labels)
		if _, ok := core.AsProblems(err); !ok {
			t.Errorf("registering %.40q %v: %v, want a problem with the input", c.name, c.labels, err)
		}
		if secret != "" {
			t.Errorf("a refused registration of %.40q handed out a connect token", c.name)
		}
	}
	if got := clusterNames(t, s); len(got) != 1 || got[0] != "eu-1" {
		t.Fatalf("clusters after refused registrations: %q, want only eu-1", got)
	}
	if _, _, err := s.P.Clusters.RegisterCluster(s.Person(t, "dev@acme.test", model.TenantMember, ""), s.Boot.Tenant.ID, "eu-3", nil); !errors.Is(err, authz.ErrForbidden) {
		t.Fatalf("a member registered a cluster: %v, want forbidden", err)
	}
}

func TestConnectTokensReplacedAndRevoked(t *testing.T) {
	s := controltest.New(t)
	cl, first, err := s.P.Clusters.RegisterCluster(s.Admin, s.Boot.Tenant.ID, "eu-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Replacing it takes the cluster's name typed again.
	if _, _, err := s.P.Clusters.RegenerateConnectToken(s.Admin, cl.ID, "eu-1"); err == nil {
		t.Fatal("a connect token was replaced with another cluster's name as confirmation")
	}
	tok, second, err := s.P.Clusters.RegenerateConnectToken(s.Admin, cl.ID, "eu-2")
	if err != nil {
		t.Fatal(err)
	}
	if second == "" || second == first {
		t.Fatalf("the new connect token %q is not new", second)
	}
	toks, err := s.P.Clusters.ConnectTokens(s.Admin, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != 2 {
		t.Fatalf("%d connect tokens after one replacement, want the old (in its grace period) and the new", len(toks))
	}
	for _, tk := range toks {
		if strings.Contains(tk.Prefix, second[len(core.ConnectTokenPrefix)+8:]) {
			t.Fatalf("a listed token shows more than its prefix: %q", tk.Prefix)
		}
	}
	revoked, err := s.P.Clusters.RevokeConnectToken(s.Admin, tok.ID)
	if err != nil {
		t.Fatal(err)
	}
	if revoked.RevokedAt == nil {
		t.Fatal("the revoked token has no revocation time")
	}
	// Another tenant does not see the cluster at all.
	if _, err := s.P.Clusters.Cluster(s.OtherAdmin(t), cl.ID); !core.IsNotFound(err) {
		t.Fatalf("another tenant's admin read the cluster: %v, want not found", err)
	}
}

func TestLabelsCheckedAndCommandsForManagers(t *testing.T) {
	s := controltest.New(t)
	if _, err := s.P.Clusters.SetClusterLabels(s.Admin, s.Cluster.ID, []model.Label{{Key: "", Value: "x"}}); err == nil {
		t.Fatal("a label without a key was set")
	}
	cl, err := s.P.Clusters.SetClusterLabels(s.Admin, s.Cluster.ID, []model.Label{{Key: "region", Value: "eu"}})
	if err != nil {
		t.Fatal(err)
	}
	if !hasLabel(cl, "region", "eu") {
		t.Fatalf("labels after setting them: %v", cl.Labels)
	}
	m := s.Person(t, "dev@acme.test", model.TenantMember, "")
	if _, err := s.P.Clusters.SetClusterLabels(m, s.Cluster.ID, nil); err == nil {
		t.Fatal("a member changed a cluster's labels")
	}
	if _, err := s.P.Clusters.QueueCommand(m, clusters.CommandInput{Cluster: s.Cluster.ID, Kind: model.CommandResync}); err == nil {
		t.Fatal("a member queued a command for a cluster")
	}
	if cl, err := s.P.Clusters.Cluster(s.Admin, s.Cluster.ID); err != nil || !hasLabel(cl, "region", "eu") {
		t.Fatalf("a refused change altered the cluster: %+v, %v", cl, err)
	}
}

func hasLabel(c *model.Cluster, key, value string) bool {
	for _, l := range c.Labels {
		if l.Key == key && l.Value == value {
			return true
		}
	}
	return false
}
