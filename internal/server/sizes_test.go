package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Responses written into pooled buffers (gqlgen patch 12) arrive whole and
// each as its own, however requests of different sizes interleave: one
// response's bytes are never another's, nor overwritten by the next, and a
// response past the pool's bound is written as well as any other.
func TestResponsesFromPooledBuffers(t *testing.T) {
	e := setup(t, nil)
	query := func(n int) (body []byte, want string) {
		var q, w strings.Builder
		q.WriteString("{")
		w.WriteString(`{`)
		for i := range n {
			fmt.Fprintf(&q, " a%d: __typename", i)
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(&w, `"a%d":"Query"`, i)
		}
		q.WriteString(" }")
		w.WriteString("}")
		body, _ = json.Marshal(map[string]any{"query": q.String()})
		return body, w.String()
	}
	sizes := []int{1, 7, 300, 2000}
	var wg sync.WaitGroup
	for g, n := range sizes {
		body, want := query(n)
		wg.Go(func() {
			for range 30 {
				req, _ := http.NewRequest("POST", e.srv.URL+"/graphql", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+e.token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var got struct {
					Data   json.RawMessage
					Errors []any
				}
				if err := json.Unmarshal(raw, &got); err != nil || string(got.Data) != want || got.Errors != nil {
					t.Errorf("client %d: got %d bytes %.80q…, want its own data of %d bytes (%v)", g, len(raw), raw, len(want), err)
					return
				}
			}
		})
	}
	wg.Wait()
}
