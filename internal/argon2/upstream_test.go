package argon2

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	upstream "golang.org/x/crypto/argon2"
)

// The copies cannot drift: every file of the upstream package but its
// tests is here, byte for byte as in the module go.mod requires, and
// nothing else is here but this package's own files.
func TestCopiesMatchUpstream(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/crypto").Output()
	if err != nil {
		t.Fatalf("finding golang.org/x/crypto in the module cache: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "argon2")
	theirs, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var copied []string
	for _, e := range theirs {
		name := e.Name()
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		copied = append(copied, name)
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%s of golang.org/x/crypto/argon2 is not copied here: %v", name, err)
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s differs from golang.org/x/crypto's: copy it again (doc.go says how)", name)
		}
	}
	ours, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	own := []string{"LICENSE", "doc.go", "into.go", "upstream_test.go"}
	for _, e := range ours {
		if !slices.Contains(copied, e.Name()) && !slices.Contains(own, e.Name()) {
			t.Errorf("%s is neither a copy of an upstream file nor one of this package's own %v", e.Name(), own)
		}
	}
}

// IDKeyInto derives the key IDKey derives, with one Memory used again
// across derivations of other sizes, lanes and passes.
func TestIDKeyIntoIsIDKey(t *testing.T) {
	var m Memory
	for _, c := range []struct {
		time, memory uint32
		threads      uint8
		keyLen       uint32
	}{
		{2, 19 * 1024, 1, 32}, {1, 64, 1, 16}, {3, 4096, 4, 64}, {2, 19 * 1024, 1, 32}, {1, 8, 2, 32}, {2, 1000, 3, 24},
	} {
		pass, salt := []byte(rand.Text()), []byte(rand.Text()[:16])
		got := IDKeyInto(&m, pass, salt, c.time, c.memory, c.threads, c.keyLen)
		if want := upstream.IDKey(pass, salt, c.time, c.memory, c.threads, c.keyLen); !bytes.Equal(got, want) {
			t.Errorf("%+v: IDKeyInto %x, IDKey %x", c, got, want)
		}
		for i, b := range m.b {
			if b != (block{}) {
				t.Fatalf("%+v: block %d holds data after the derivation", c, i)
			}
		}
	}
}
