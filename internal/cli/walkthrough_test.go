package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docBlock is a fenced block of a Markdown document.
type docBlock struct {
	lang, text string
	line       int
}

// fencedBlocks lists the fenced blocks of a Markdown text from the heading
// from on.
func fencedBlocks(t *testing.T, md, from string) []docBlock {
	t.Helper()
	i := strings.Index(md, from)
	if i < 0 {
		t.Fatalf("no %q in the document", from)
	}
	line := strings.Count(md[:i], "\n") + 1
	var out []docBlock
	var cur *docBlock
	for l := range strings.Lines(md[i:]) {
		switch trimmed := strings.TrimSpace(l); {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &docBlock{lang: strings.TrimPrefix(trimmed, "```"), line: line}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l
		}
		line++
	}
	return out
}

// matchDoc compares a response with the one a document shows, where the
// document abbreviates: a string holding "…" stands for any string (ids,
// digests), and a time for any time; everything else must be equal,
// object keys and list lengths included.
func matchDoc(path string, doc, got any) []string {
	switch d := doc.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %v, the document shows an object", path, got)}
		}
		var out []string
		for k, v := range d {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: missing from the response", path, k))
				continue
			}
			out = append(out, matchDoc(path+"."+k, v, gv)...)
		}
		for k := range g {
			if _, ok := d[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: in the response (%v), not in the document", path, k, g[k]))
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(d) {
			return []string{fmt.Sprintf("%s: got %v, the document shows %d items", path, got, len(d))}
		}
		var out []string
		for i := range d {
			out = append(out, matchDoc(fmt.Sprintf("%s[%d]", path, i), d[i], g[i])...)
		}
		return out
	case string:
		g, ok := got.(string)
		switch {
		case ok && strings.Contains(d, "…"):
			return nil
		case ok && isTime(d) && isTime(g):
			return nil
		case ok && g == d:
			return nil
		}
	default:
		if fmt.Sprint(doc) == fmt.Sprint(got) {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: got %v, the document shows %v", path, got, doc)}
}

// jsonValues decodes the JSON values of a block, one after another; ok is
// false when the block is not only JSON.
func jsonValues(text string) (vals []any, ok bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return vals, len(vals) > 0
		}
		if err != nil {
			return nil, false
		}
		vals = append(vals, v)
	}
}

func isTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// docs/graphql.md's "Walkthrough with curl", run as written against `nebula
// serve` on its defaults (a fresh embedded store): every shell block runs
// in one bash session, and each response the document shows must be the
// one the server gives (ids, digests and times abbreviated). A document
// that drifted from the API fails here.
func TestGraphQLWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the walkthrough needs %s: %v", tool, err)
		}
	}
	md, err := os.ReadFile("../../docs/graphql.md")
	if err != nil {
		t.Fatal(err)
	}
	isolate(t)
	tokenRE := regexp.MustCompile(`nbt_[A-Za-z0-9_-]+`)
	stdout, _, _ := start(t, tokenRE, "serve")
	addr := os.Getenv("NEBULA_ADDR")
	ctx := t.Context()
	token := tokenRE.FindString(stdout.String())

	// One script: the shell blocks in order, each after a marker line.
	blocks := fencedBlocks(t, string(md), "## Walkthrough with curl")
	var script strings.Builder
	script.WriteString("exec 2>&1\nexport TOKEN=" + token + "\n")
	var shells []int // indexes into blocks
	for i, b := range blocks {
		if b.lang != "sh" || strings.Contains(b.text, "make run") {
			continue
		}
		fmt.Fprintf(&script, "printf '\\n@@block %d@@\\n'\n%s\n", len(shells), strings.ReplaceAll(b.text, "http://127.0.0.1:8080", "http://"+addr))
		shells = append(shells, i)
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the walkthrough's commands failed: %v\n%s", err, out)
	}
	if strings.Contains(string(out), token) {
		t.Error("a response shows the admin token")
	}
	outputs := regexp.MustCompile(`\n@@block \d+@@\n`).Split(string(out), -1)[1:]
	if len(outputs) != len(shells) {
		t.Fatalf("%d outputs for %d shell blocks:\n%s", len(outputs), len(shells), out)
	}
	compared := 0
	for n, i := range shells {
		// The JSON blocks after a shell block, up to the next one, show
		// its responses, in order.
		var docs []docBlock
		for _, b := range blocks[i+1:] {
			if b.lang == "sh" {
				break
			}
			if b.lang == "json" {
				docs = append(docs, b)
			}
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(outputs[n])))
		for _, d := range docs {
			wants, ok := jsonValues(d.text)
			if !ok {
				continue // an excerpt ("…" outside strings), not whole responses
			}
			for _, want := range wants {
				var got any
				if err := dec.Decode(&got); err != nil {
					t.Errorf("docs/graphql.md:%d: the command printed no JSON response for this block (%v):\n%s", d.line, err, outputs[n])
					break
				}
				for _, diff := range matchDoc("", want, got) {
					t.Errorf("docs/graphql.md:%d: %s", d.line, diff)
				}
				compared++
			}
		}
	}
	if compared < 10 {
		t.Errorf("compared %d responses with the document, want the walkthrough's (10 or more)", compared)
	}
}
