package config

import (
	"strings"
	"testing"
)

func TestPprofAddrIsLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"":               true, // off
		"127.0.0.1:6060": true,
		"[::1]:6060":     true,
		"localhost:6060": true,
		"127.0.0.1:0":    true,
		"0.0.0.0:6060":   false,
		":6060":          false,
		"10.0.0.5:6060":  false,
		"example.com:1":  false,
		"127.0.0.1":      false, // no port
	} {
		env := map[string]string{"NEBULA_PPROF_ADDR": addr}
		c, err := FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		switch {
		case ok && err != nil:
			t.Errorf("NEBULA_PPROF_ADDR=%q: %v, want it accepted", addr, err)
		case ok && c.PprofAddr != addr:
			t.Errorf("NEBULA_PPROF_ADDR=%q: PprofAddr %q", addr, c.PprofAddr)
		case !ok && (err == nil || !strings.Contains(err.Error(), "NEBULA_PPROF_ADDR") || !strings.Contains(err.Error(), "loopback")):
			t.Errorf("NEBULA_PPROF_ADDR=%q: error %v, want one naming the setting and loopback", addr, err)
		}
	}
}
