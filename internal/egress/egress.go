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
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrPrivateAddress is an address a guarded request may not reach.
var ErrPrivateAddress = errors.New("the address is loopback, private or link-local, or another special-purpose address")

// special are the ranges a guarded request may not reach beyond what
// net.IP's own predicates name (loopback, private, link-local, multicast,
// unspecified): every entry of IANA's IPv4 and IPv6 Special-Purpose
// Address Registries (iana.org/assignments/iana-ipv4-special-registry and
// iana-ipv6-special-registry, as of 2024-12; RFC 6890 and the RFCs each
// entry names), whether or not the registry calls it globally reachable —
// none is a webhook endpoint's or a Git host's — and the IPv6 forms that
// embed an IPv4 address, which could name any of those.
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{
		// IPv4
		"0.0.0.0/8",       // "this network" (RFC 791)
		"10.0.0.0/8",      // private (RFC 1918)
		"100.64.0.0/10",   // shared address space, carrier-grade NAT (RFC 6598); 100.100.100.200 is a cloud's metadata
		"127.0.0.0/8",     // loopback (RFC 1122)
		"169.254.0.0/16",  // link-local (RFC 3927), 169.254.169.254 the usual metadata address
		"172.16.0.0/12",   // private (RFC 1918)
		"192.0.0.0/24",    // IETF protocol assignments (RFC 6890), NAT64 discovery, PCP and TURN anycast
		"192.0.2.0/24",    // documentation, TEST-NET-1 (RFC 5737)
		"192.31.196.0/24", // AS112-v4 (RFC 7535)
		"192.52.193.0/24", // AMT (RFC 7450)
		"192.88.99.0/24",  // deprecated 6to4 relay anycast (RFC 7526)
		"192.168.0.0/16",  // private (RFC 1918)
		"192.175.48.0/24", // direct delegation AS112 (RFC 7534)
		"198.18.0.0/15",   // benchmarking (RFC 2544)
		"198.51.100.0/24", // documentation, TEST-NET-2 (RFC 5737)
		"203.0.113.0/24",  // documentation, TEST-NET-3 (RFC 5737)
		"224.0.0.0/4",     // multicast (RFC 5771)
		"240.0.0.0/4",     // reserved (RFC 1112), 255.255.255.255 the limited broadcast (RFC 919)
		// IPv6
		"::/96",             // unspecified, loopback and the deprecated IPv4-compatible ::a.b.c.d (RFC 4291)
		"64:ff9b::/96",      // IPv4/IPv6 translation, NAT64 (RFC 6052)
		"64:ff9b:1::/48",    // local-use IPv4/IPv6 translation (RFC 8215)
		"100::/64",          // discard-only (RFC 6666)
		"100:0:0:1::/64",    // dummy prefix (RFC 9780)
		"2001::/23",         // IETF protocol assignments (RFC 2928): Teredo 2001::/32, benchmarking, ORCHID…
		"2001:db8::/32",     // documentation (RFC 3849)
		"2002::/16",         // 6to4 (RFC 3056): embeds an IPv4 address
		"2620:4f:8000::/48", // direct delegation AS112 (RFC 7534)
		"3fff::/20",         // documentation (RFC 9637)
		"5f00::/16",         // segment routing SIDs (RFC 9602)
		"fc00::/7",          // unique local (RFC 4193)
		"fe80::/10",         // link-local (RFC 4291)
		"fec0::/10",         // deprecated site-local (RFC 3879)
		"ff00::/8",          // multicast (RFC 4291)
	} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

// Blocked tells whether ip is one a guarded request may not reach: the
// address itself, and the IPv4 address an IPv4-mapped one (::ffff:a.b.c.d)
// maps, is checked against
// net.IP's predicates and the special-purpose ranges. The one place every
// guarded request (webhook deliveries, Git remotes, any egress to come)
// decides.
func Blocked(ip net.IP) bool {
	if ip == nil || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() {
		return true
	}
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return true
	}
	for _, addr := range []netip.Addr{a, a.Unmap()} {
		for _, p := range special {
			if p.Contains(addr) {
				return true
			}
		}
	}
	return false
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
