package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// CertReloader serves the certificate of a pair of PEM files and reads
// them again when they change (a renewed certificate, written by
// cert-manager or certbot, takes effect on the next handshake without a
// restart). A pair that does not load keeps the one before in use, said
// in the log.
type CertReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string // what the files' sizes and times were when read
	checked time.Time
}

// NewCertReloader loads the pair once: a pair that does not load stops
// the start.
func NewCertReloader(certFile, keyFile string, log *slog.Logger) (*CertReloader, error) {
	r := &CertReloader{certFile: certFile, keyFile: keyFile, log: log}
	stamp, err := r.stampNow()
	if err != nil {
		return nil, err
	}
	if err := r.load(stamp); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *CertReloader) stampNow() (string, error) {
	var s string
	for _, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("reading the TLS certificate: %w", err)
		}
		s += fmt.Sprintf("%d:%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return s, nil
}

func (r *CertReloader) load(stamp string) error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("loading the TLS certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.stamp = &c, stamp
	return nil
}

// GetCertificate is tls.Config's: the pair as it is now, looked at no
// more than once a second.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= time.Second {
		r.checked = time.Now()
		stamp, err := r.stampNow()
		if err == nil && stamp != r.stamp {
			err = r.load(stamp)
			if err == nil {
				r.log.Info("loaded the renewed TLS certificate", "cert", r.certFile)
			}
		}
		if err != nil {
			r.log.Warn("the TLS certificate files do not load; serving the one loaded before", "error", err)
		}
	}
	return r.cert, nil
}

// TLSListener serves TLS on ln with the reloader's certificate. HTTP/1.1
// only: websockets (GraphQL subscriptions, agents) upgrade an HTTP/1.1
// connection.
func TLSListener(ln net.Listener, r *CertReloader) net.Listener {
	return tls.NewListener(ln, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate,
		NextProtos: []string{"http/1.1"}})
}
