package desired

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nebulactrl/nebula/internal/model"
)

// marshalled is the state's canonical JSON as encoding/json writes it:
// what encode.go must match byte for byte.
func marshalled(t *testing.T, s State, redact bool) []byte {
	t.Helper()
	if redact {
		s = s.Redact()
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The hand-written encoding is encoding/json's, byte for byte: on the
// benchmark's 50 × 20 state, on states with every optional field set and
// unset, nil and empty lists, and on strings of every kind (HTML
// characters, control characters, invalid UTF-8, U+2028/2029, multi-byte
// runes), redacted and not.
func TestEncodingMatchesMarshal(t *testing.T) {
	check := func(name string, s State) {
		t.Helper()
		for _, redact := range []bool{true, false} {
			want := marshalled(t, s, redact)
			got := appendState(nil, &s, redact, nil)
			if !bytes.Equal(got, want) {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				t.Fatalf("%s (redact %v): differs at byte %d:\n got %q\nwant %q", name, redact, i,
					got[max(0, i-40):min(len(got), i+40)], want[max(0, i-40):min(len(want), i+40)])
			}
		}
		if s.Hash() != hashOf(marshalled(t, s, true)) {
			t.Errorf("%s: Hash differs from the SHA-256 of encoding/json's bytes", name)
		}
		if b, h := s.Shown(); b != string(marshalled(t, s, true)) || h != s.Hash() {
			t.Errorf("%s: Shown differs from encoding/json's bytes, or from Hash", name)
		}
	}
	check("bench", Compile(benchInput()))
	check("empty", State{})
	check("empty lists", State{Cluster: "c", Namespaces: []Namespace{}, Unplaced: []Unplaced{}})

	path, port := "/healthz", 8080
	weird := []string{"", "plain", `quote " back\slash`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
		"\x00\x01\x1f\x7f", "bad \xff utf8 \xc3", "line\u2028para\u2029", "日本語 ✓ é", strings.Repeat("x", 5000)}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		weird = append(weird, string(b))
	}
	for i, w := range weird {
		s := State{Cluster: model.ClusterID(w), Namespaces: []Namespace{{
			Name: w, Project: w, Environment: w, EnvID: model.EnvironmentID(w),
			Services: []Service{{Name: w, ID: model.ServiceID(w), Release: i, ReleaseID: model.ReleaseID(w),
				Deployment: model.DeploymentID(w), Image: w,
				Processes: []Process{{Name: w, Command: []string{w, w}, Replicas: -i, Port: &port, Probe: &model.Probe{Path: &path, Port: i}},
					{Name: w, Command: nil}, {Name: w, Command: []string{}, Probe: &model.Probe{}}},
				Env:     []EnvVar{{Name: w, Value: w, Secret: true, Version: w}, {Name: w, Value: w}, {Name: "v", Value: w, Secret: i%2 == 0}},
				Domains: []Domain{{Host: w, Process: w, Port: i}}},
				{Name: w, Processes: nil, Env: nil, Domains: nil}},
			Held: []Held{{Name: w, ID: model.ServiceID(w), Reason: w}}}, {Name: w, Services: nil, Held: nil}},
			Unplaced: []Unplaced{{Project: w, Environment: w, Reason: w}}}
		check("strings "+strings.ToValidUTF8(w[:min(len(w), 12)], "?"), s)
	}
	if !utf8.ValidString(string(appendState(nil, &State{Cluster: "\xff"}, true, nil))) {
		t.Error("invalid UTF-8 came through")
	}
}
