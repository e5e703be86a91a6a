package server

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/web"
)

func sum(doc string) string {
	s := sha256.Sum256([]byte(doc))
	return hex.EncodeToString(s[:])
}

// Both manifest formats are read; an id that is not its document's
// SHA-256, or something that is no manifest, is refused with why.
func TestParseTrustedDocuments(t *testing.T) {
	const q = `query Me { viewer { user { email } } }`
	for name, manifest := range map[string]string{
		"codegen, prefixed": `{"sha256:` + sum(q) + `": "query Me { viewer { user { email } } }"}`,
		"codegen, bare":     `{"` + sum(q) + `": "query Me { viewer { user { email } } }"}`,
		"apollo": `{"format": "apollo-persisted-query-manifest", "version": 1, "operations": [
			{"id": "` + sum(q) + `", "name": "Me", "type": "query", "body": "query Me { viewer { user { email } } }"}]}`,
	} {
		docs, err := ParseTrustedDocuments([]byte(manifest))
		if err != nil || len(docs) != 1 || docs[sum(q)] != q {
			t.Errorf("%s: %v %v", name, docs, err)
		}
	}
	for name, c := range map[string]struct{ manifest, says string }{
		"a wrong hash":     {`{"sha256:` + sum("other") + `": "query Me { viewer { user { email } } }"}`, "not that SHA-256"},
		"another format":   {`{"format": "relay", "operations": []}`, "apollo-persisted-query-manifest"},
		"not JSON":         {`query Me { viewer { id } }`, "not a manifest"},
		"a list":           {`["query Me { viewer { id } }"]`, "not a manifest"},
		"apollo, bad hash": {`{"format": "apollo-persisted-query-manifest", "operations": [{"id": "abc", "body": "{ x }"}]}`, "not that SHA-256"},
	} {
		if _, err := ParseTrustedDocuments([]byte(c.manifest)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.says)
		}
	}
}

// The console's build lists its operations: the manifest embedded with it
// parses, and holds the overview the console opens on.
func TestConsoleManifest(t *testing.T) {
	docs, err := ParseTrustedDocuments(web.TrustedDocuments())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range docs {
		found = found || strings.Contains(doc, "query ConsoleOverview")
	}
	if len(docs) < 20 || !found {
		t.Errorf("the console's manifest has %d documents (ConsoleOverview among them: %v)", len(docs), found)
	}
}
