package server

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/testutil"
)

// The served certificate follows its files: a renewed pair is presented
// on the next handshake; a pair that does not load leaves the last good
// one in use; a pair that never loaded stops the start.
func TestCertReloader(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := testutil.NewCA(t, "test CA")
	write := func(serial int64) {
		t.Helper()
		c, k := ca.Issue(t, serial)
		// The key first, then the certificate: the order cert-manager
		// does not promise; a moment with a mismatched pair must not
		// break serving.
		if err := os.WriteFile(keyFile, k, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Fatal("a reloader without files")
	}
	write(1)
	r, err := NewCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := TLSListener(inner, r)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	serial := func() int64 {
		c, err := tls.Dial("tcp", inner.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("a handshake: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if s := serial(); s != 1 {
		t.Fatalf("serial %d, want 1", s)
	}
	write(2)
	testutil.Eventually(t, 10*time.Second, "the renewed certificate is served", func() (bool, string) { return serial() == 2, "" })
	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Broken files keep the last good pair: the reloader looks again
	// (its once-a-second check made due) and still hands out serial 2.
	r.mu.Lock()
	r.checked = time.Time{}
	r.mu.Unlock()
	c, err := r.GetCertificate(nil)
	if err != nil || c.Leaf == nil && serial() != 2 {
		t.Fatalf("with broken files: %v", err)
	}
	if s := serial(); s != 2 {
		t.Errorf("with broken files serial %d is served, want the last good one, 2", s)
	}
	write(3)
	testutil.Eventually(t, 10*time.Second, "the next renewal is served", func() (bool, string) { return serial() == 3, "" })
}
