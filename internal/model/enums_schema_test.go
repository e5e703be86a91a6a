package model

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// Each enum the API binds to a model type accepts exactly the schema's
// values, in the schema's order: the lists in enums.go cannot drift from
// schema.graphqls, and an enum bound in gqlgen.yml has its list checked.
func TestEnumsAreTheSchemas(t *testing.T) {
	src, err := os.ReadFile("../../schema.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	schema, gerr := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(src)})
	if gerr != nil {
		t.Fatal(gerr)
	}
	lists := map[string][]string{
		"TenantRole": strs(tenantRoles), "ProjectRole": strs(projectRoles), "UserKind": strs(userKinds),
		"ClusterStatus": strs(clusterStatuses), "DeploymentStage": strs(deploymentStages), "PlanName": strs(planNames),
		"VariableScope": strs(variableScopes), "CommandKind": strs(commandKinds), "CommandStatus": strs(commandStatuses),
		"ApprovalDecision": strs(approvalDecisions), "LimitedResource": strs(limitedResources),
		"BuildStatus": strs(buildStatuses), "DeliveryOutcome": strs(deliveryOutcomes),
		"ChangeSetState": strs(changeSetStates), "ChangeKind": strs(changeKinds),
		"ConfigChangeKind": strs(configChangeKinds),
		// The schema lists the markers last.
		"LogStream": {LogStdout.String(), LogStderr.String(), LogMarker.String()},
	}
	for name, values := range lists {
		def := schema.Types[name]
		if def == nil || def.Kind != ast.Enum {
			t.Errorf("%s is no enum of the schema", name)
			continue
		}
		var want []string
		for _, v := range def.EnumValues {
			want = append(want, v.Name)
		}
		if !slices.Equal(values, want) {
			t.Errorf("model's %s values %v, the schema's %v", name, values, want)
		}
	}
	conf, err := os.ReadFile("../../gqlgen.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`internal/model\.(\w+)`).FindAllStringSubmatch(string(conf), -1) {
		if def := schema.Types[m[1]]; def != nil && def.Kind == ast.Enum {
			if _, ok := lists[m[1]]; !ok {
				t.Errorf("gqlgen.yml binds the enum %s to model.%s, whose values this test does not check", m[1], m[1])
			}
		}
	}
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
