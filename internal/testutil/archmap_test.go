package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The architecture's package map (docs/architecture.md) names every Go
// package of the module, and nothing that is not one: a newcomer finds a
// package's purpose and its rules there.
func TestArchitectureMapsEveryPackage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## Package map")
	if start < 0 {
		t.Fatal("docs/architecture.md has no \"## Package map\"")
	}
	// The section runs to the next heading of any level (a subsection
	// such as the control layer's target is not the map).
	section := text[start:]
	if end := strings.Index(section[3:], "\n#"); end >= 0 {
		section = section[:end+3]
	}
	// The first column of each row: `a`, `b/`, `…/c` (… repeats the
	// previous name's folder).
	named := map[string]bool{}
	cell := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], "|", 2)[0]
		prev := ""
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			name := strings.TrimSuffix(m[1], "/")
			if rest, ok := strings.CutPrefix(name, "…/"); ok && prev != "" {
				name = filepath.Dir(prev) + "/" + rest
			}
			named[name] = true
			prev = name
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/nebulactrl/nebula/"
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		p = strings.TrimPrefix(p, module)
		pkgs[p] = true
		if !named[p] {
			t.Errorf("package %s is not in docs/architecture.md's package map", p)
		}
	}
	for n := range named {
		if strings.Contains(n, ".") { // files: schema.graphqls, gqlgen.yml
			continue
		}
		if !pkgs[n] {
			t.Errorf("the package map names %s, which is not a package of the module", n)
		}
	}
}
