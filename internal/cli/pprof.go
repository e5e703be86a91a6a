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
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serveOn(addr, "NEBULA_PPROF_ADDR", "Go's profiles", mux, log)
}

// serveOn serves h on a listener of its own at addr (setting names the
// setting that gave it, in errors; what names what it serves, in the log)
// until stop is called.
func serveOn(addr, setting, what string, h http.Handler, log *slog.Logger) (at net.Addr, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: listening on %s: %w", setting, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("a listener stopped", "serving", what, "err", err)
		}
	}()
	log.Info("serving "+what, "addr", ln.Addr().String())
	return ln.Addr(), func() { _ = srv.Close() }, nil
}
