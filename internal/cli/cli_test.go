package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/seal"
)

// run executes the command in a fresh working directory whose .env is the
// only source of keys.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, &out, &errb)
	return out.String(), err
}

func isolate(t *testing.T) {
	t.Helper()
	t.Chdir(t.TempDir())
	for _, k := range []string{"NEBULA_MASTER_KEY", "NEBULA_MASTER_KEYS_OLD", "NEBULA_DATABASE_URL", "NEBULA_DATA_DIR"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func dotEnv(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(".env")
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(".env")
	if fi.Mode().Perm() != 0o600 {
		t.Errorf(".env mode %v, want 0600", fi.Mode().Perm())
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		out[k] = v
	}
	return out
}

func TestGenMasterKeyAndRotate(t *testing.T) {
	isolate(t)
	if err := config.WriteDotEnv(".env", map[string]string{"OTHER": "kept"}); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "admin", "gen-master-key")
	if err != nil {
		t.Fatal(err)
	}
	first := dotEnv(t)["NEBULA_MASTER_KEY"]
	k1, err := seal.ParseKey(first)
	if err != nil {
		t.Fatalf("written key: %v", err)
	}
	if strings.Contains(out, first) || !strings.Contains(out, k1.ID()) {
		t.Errorf("output %q: want the key id, never the key", out)
	}
	// The process now has the key (loaded from .env): a second key needs --rotate.
	if _, err := run(t, "admin", "gen-master-key"); err == nil || !strings.Contains(err.Error(), "--rotate") {
		t.Errorf("second gen-master-key: %v, want a refusal naming --rotate", err)
	}
	if _, err := run(t, "admin", "gen-master-key", "--rotate"); err != nil {
		t.Fatal(err)
	}
	env := dotEnv(t)
	if env["NEBULA_MASTER_KEY"] == first || env["NEBULA_MASTER_KEYS_OLD"] != first || env["OTHER"] != "kept" {
		t.Errorf(".env after rotation: %v; want a new primary, the old one kept for opening, other lines kept", env)
	}
}

func TestBadMasterKeyRefusesToStart(t *testing.T) {
	isolate(t)
	t.Setenv("NEBULA_MASTER_KEY", "not-a-key")
	t.Setenv("NEBULA_DATA_DIR", t.TempDir())
	_, err := run(t, "admin", "reseal")
	if err == nil || !strings.Contains(err.Error(), "NEBULA_MASTER_KEY") || strings.Contains(err.Error(), "not-a-key") {
		t.Errorf("got %v, want an error naming the variable but not its value", err)
	}
}

func TestResealOnEmptyStore(t *testing.T) {
	isolate(t)
	t.Setenv("NEBULA_DATA_DIR", t.TempDir())
	if _, err := run(t, "admin", "gen-master-key"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "admin", "reseal")
	if err != nil || !strings.Contains(out, "resealed 0 secrets") {
		t.Errorf("reseal: %q, %v", out, err)
	}
}
