package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves Go's profiles on addr (NEBULA_PPROF_ADDR, a loopback
// address the configuration checked) until stop is called. It is a
// listener of its own, so that nothing of it is reachable through the API's
// address.
func servePprof(addr string, log *slog.Logger) (at net.Addr, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("NEBULA_PPROF_ADDR: listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the profiling listener stopped", "err", err)
		}
	}()
	log.Info("serving Go's profiles", "addr", ln.Addr().String())
	return ln.Addr(), func() { _ = srv.Close() }, nil
}
