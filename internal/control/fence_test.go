package control_test

import (
	"go/types"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// outsideUses are the core's names that code outside internal/control may
// use: the whole list, so that reaching past a domain into the core (a
// transaction, a change, the door's queriers, a state-machine step) is a
// decision made here. The domain-facing rest (Change, InTx, Querier,
// Advance, RecordEvent, Note, AddJob, …) stays inside the control layer.
var outsideUses = []string{
	// Making the plane: its options and its wiring.
	"Option", "WithApprovals", "WithBox", "WithBuildSettings", "WithBus", "WithClock", "WithConnectGrace",
	"WithDisconnectedAfter", "WithInvitationTTL", "WithLogRetention", "WithMaxTokensPerUser", "WithOIDC",
	"WithOutbound", "WithSessionTTL", "WithStallAfter", "Plane.SetPublisher", "Publisher", "Publisher.Published",
	// Running the jobs, and the server's health.
	"Plane.RunJobs", "Plane.RunJobsOnce", "Plane.JobPasses", "Plane.Ping", "JobReport",
	"JobReport.Disconnected", "JobReport.Expired", "JobReport.Keys", "JobReport.LogPartitions",
	"JobReport.LogsExpired", "JobReport.Stalled",
	// Reads the API answers with, through the door.
	"Plane.AuditEvent", "Plane.AuditEvents", "Plane.DesiredState",
	// What the hub sends agents.
	"Snapshot", "Snapshot.Revision", "Snapshot.State", "Snapshot.Cluster", "Bumped", "Bumped.Cluster",
	"Bumped.Revision", "Bumped.State",
	// Previews' results, and errors as the API reports them.
	"ClusterChange", "ClusterChange.Cluster", "ClusterChange.FromRevision", "Problem", "Problem.Code",
	"Problem.Field", "Problem.Message", "CodeConflict", "AsProblems", "Invalid", "IsNotFound",
	// A direct change refused because it reaches a protected environment
	// is made a change set of one by the API, which knows both domains.
	"AsNeedsApproval",
	// The releases a preview would make, per cluster.
	"ClusterChange.Releases", "PreviewedRelease", "PreviewedRelease.Release", "PreviewedRelease.Previous",
}

// Code outside internal/control uses only the core's names listed above:
// the domains are the way in.
func TestCoreStaysInside(t *testing.T) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &packages.Config{Dir: strings.TrimSpace(string(root)), Tests: true,
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	const core = "github.com/nebulactrl/nebula/internal/control/core"
	seen := 0
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("loading %s: %v", p.PkgPath, p.Errors)
		}
		if strings.HasPrefix(p.PkgPath, "github.com/nebulactrl/nebula/internal/control") {
			continue
		}
		for id, obj := range p.TypesInfo.Uses {
			if obj.Pkg() == nil || obj.Pkg().Path() != core {
				continue
			}
			seen++
			if name := coreName(obj); !slices.Contains(outsideUses, name) {
				t.Errorf("%s: %s uses core's %s: reach it through a domain, or list it in outsideUses with why",
					p.Fset.Position(id.Pos()), p.PkgPath, name)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no use of the core outside internal/control was seen: the scan reads nothing")
	}
}

// coreName is a name of the core as outsideUses lists it: T, F, T.Method
// or T.Field.
func coreName(obj types.Object) string {
	var recv types.Type
	switch o := obj.(type) {
	case *types.Func:
		if r := o.Signature().Recv(); r != nil {
			recv = r.Type()
		}
	case *types.Var:
		if o.IsField() {
			// A field's struct: find it among the core's named types.
			for _, n := range o.Pkg().Scope().Names() {
				tn, ok := o.Pkg().Scope().Lookup(n).(*types.TypeName)
				if !ok {
					continue
				}
				if s, ok := tn.Type().Underlying().(*types.Struct); ok {
					for f := range s.Fields() {
						if f == o {
							return tn.Name() + "." + o.Name()
						}
					}
				}
			}
		}
	}
	if recv != nil {
		if p, ok := recv.(*types.Pointer); ok {
			recv = p.Elem()
		}
		if n, ok := recv.(*types.Named); ok {
			return n.Obj().Name() + "." + obj.Name()
		}
	}
	return obj.Name()
}
