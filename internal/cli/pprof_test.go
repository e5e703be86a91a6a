package cli

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestServePprof(t *testing.T) {
	at, stop, err := servePprof("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + at.String()
	res, err := http.Get(base + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Fatalf("GET goroutine profile: %d %.200s", res.StatusCode, body)
	}
	res, err = http.Get(base + "/graphql")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /graphql on the profiling listener: %d, want 404 (it serves profiles only)", res.StatusCode)
	}
	stop()
	if _, err := http.Get(base + "/debug/pprof/"); err == nil {
		t.Error("the profiling listener still answers after stop")
	}
}
