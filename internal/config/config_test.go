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

// NEBULA_CORS_ORIGINS takes exact origins only: a path, a wildcard, a
// scheme other than http(s) or credentials in the URL are refused at
// start, naming the setting.
func TestCORSOriginsAreOrigins(t *testing.T) {
	for value, want := range map[string][]string{
		"":                         nil,
		"https://dash.example.com": {"https://dash.example.com"},
		" https://A.example.com:8443 , http://localhost:5173": {"https://a.example.com:8443", "http://localhost:5173"},
		"*":                             nil,
		"https://*.example.com":         nil,
		"https://dash.example.com/":     nil,
		"https://dash.example.com/x":    nil,
		"dash.example.com":              nil,
		"ftp://dash.example.com":        nil,
		"https://user@dash.example.com": nil,
		"https://dash.example.com?a=b":  nil,
	} {
		env := map[string]string{"NEBULA_CORS_ORIGINS": value}
		c, err := FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		ok := want != nil || value == ""
		switch {
		case ok && err != nil:
			t.Errorf("NEBULA_CORS_ORIGINS=%q: %v, want it accepted", value, err)
		case ok && strings.Join(c.CORSOrigins, ",") != strings.Join(want, ","):
			t.Errorf("NEBULA_CORS_ORIGINS=%q: %v, want %v", value, c.CORSOrigins, want)
		case !ok && (err == nil || !strings.Contains(err.Error(), "NEBULA_CORS_ORIGINS")):
			t.Errorf("NEBULA_CORS_ORIGINS=%q: error %v, want one naming the setting", value, err)
		}
	}
}
