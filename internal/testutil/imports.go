package testutil

import (
	"os/exec"
	"strings"
	"testing"
)

// ImportsNone fails the test when pkg links any of forbidden (a package
// or one under it): a boundary checked with `go list -deps`.
func ImportsNone(t testing.TB, pkg string, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list printed no packages")
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("%s imports %s", pkg, d)
			}
		}
	}
}
