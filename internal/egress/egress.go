// Package egress is how the control plane makes requests to addresses its
// users give it (a Git repository to read a branch of, a webhook endpoint
// to deliver to): such a request leaves from inside the operator's
// network, so by default it may not reach loopback, private or link-local
// addresses (server-side request forgery). The check runs when dialling,
// on the address actually dialled, so a name that resolves there — or
// is made to, after it was checked (DNS rebinding) — is refused too. No
// proxy is used (the check must see the real address) and no redirect is
// followed.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"
)

// ErrPrivateAddress is an address a guarded request may not reach.
var ErrPrivateAddress = errors.New("the address is loopback, private or link-local")

// Blocked tells whether ip is one a guarded request may not reach.
func Blocked(ip net.IP) bool {
	return ip == nil || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast()
}

// Client is an HTTP client whose requests end after timeout, follow no
// redirect, use no proxy and, unless allowPrivate, reach no loopback,
// private or link-local address.
func Client(timeout time.Duration, allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if Blocked(net.ParseIP(host)) {
				return fmt.Errorf("%s: %w", host, ErrPrivateAddress)
			}
			return nil
		}
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{DialContext: d.DialContext, TLSHandshakeTimeout: timeout,
			ResponseHeaderTimeout: timeout, MaxIdleConns: 16, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL says why a URL given for outbound requests cannot be used: not
// http(s), credentials in it, no host, or (unless allowPrivate) a host
// that is or resolves to a blocked address. nil when it can.
func CheckURL(ctx context.Context, raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %w", err)
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("must be an http:// or https:// URL")
	case u.User != nil:
		return errors.New("must not carry credentials (user:password@)")
	case u.Hostname() == "":
		return errors.New("has no host")
	case u.Fragment != "":
		return errors.New("must not have a #fragment")
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		if Blocked(ip) {
			return fmt.Errorf("%s: %w", host, ErrPrivateAddress)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return fmt.Errorf("its host %s does not resolve: %w", host, err)
	}
	for _, a := range addrs {
		if Blocked(a.IP) {
			return fmt.Errorf("%s resolves to %s: %w", host, a.IP, ErrPrivateAddress)
		}
	}
	return nil
}
