package egress

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A guarded client refuses to dial a loopback address however the URL
// names it, and never follows a redirect; allowed, it reaches loopback.
func TestClientGuardsTheDial(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	defer target.Close()
	redirecting := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	defer redirecting.Close()

	_, err := Client(time.Second, false).Get(target.URL)
	if !errors.Is(err, ErrPrivateAddress) {
		t.Errorf("a guarded request to %s: %v, want ErrPrivateAddress", target.URL, err)
	}
	resp, err := Client(time.Second, true).Get(redirecting.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("the redirect was followed: %d", resp.StatusCode)
	}
}

func TestCheckURL(t *testing.T) {
	for _, c := range []struct {
		url     string
		private bool // allowed with allowPrivate
		ok      bool
	}{
		{"https://198.41.0.4/hook", true, true},
		{"http://[2001:503:ba3e::2:30]/hook", true, true},
		{"https://203.0.113.10/hook", true, false}, // documentation: special-purpose
		{"http://[2001:db8::1]/hook", true, false},
		{"http://127.0.0.1/", true, false},
		{"http://localhost:8080/", true, false},
		{"http://[::1]/", true, false},
		{"http://10.0.0.1/", true, false},
		{"http://172.16.5.4/", true, false},
		{"http://169.254.169.254/", true, false},
		{"http://[fe80::1]/", true, false},
		{"http://0.0.0.0/", true, false},
		{"ftp://198.41.0.4/", false, false},
		{"https://a:b@198.41.0.4/", false, false},
		{"https:///nohost", false, false},
		{"https://198.41.0.4/#frag", false, false},
	} {
		err := CheckURL(t.Context(), c.url, false)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.url, err)
		}
		if err := CheckURL(t.Context(), c.url, true); (err == nil) != c.private {
			t.Errorf("%s with private networks allowed: %v", c.url, err)
		}
	}
}

// Every special-purpose range the issue found open, in each form an
// address can take, is blocked; addresses of the public Internet are not
// (issue 30, row 10).
func TestBlocked(t *testing.T) {
	for _, a := range []string{
		"100.64.0.1", "100.100.100.200", "100.127.255.255", // shared address space, a cloud's metadata
		"169.254.169.254", "::ffff:169.254.169.254", "::ffff:a9fe:a9fe", // link-local, mapped
		"64:ff9b::a9fe:a9fe", "64:ff9b::127.0.0.1", "64:ff9b:1::1", // NAT64
		"::a9fe:a9fe", "::127.0.0.1", "::10.0.0.1", // IPv4-compatible
		"2002:a9fe:a9fe::1", "2002:7f00:1::", // 6to4 of metadata and loopback
		"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo
		"fec0::1", "fc00::1", "fe80::1", "ff02::1", "::", "::1",
		"0.0.0.0", "0.1.2.3", "10.1.2.3", "127.0.0.2", "172.31.255.255", "192.168.1.1",
		"192.0.0.170", "192.0.2.1", "198.18.0.1", "198.19.255.255", "198.51.100.1", "203.0.113.1",
		"192.88.99.1", "192.31.196.1", "192.175.48.1", "192.52.193.1",
		"224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
		"100::1", "2001:db8::1", "2620:4f:8000::1", "3fff::1", "5f00::1",
	} {
		if !Blocked(net.ParseIP(a)) {
			t.Errorf("%s is not blocked", a)
		}
	}
	for _, a := range []string{"198.41.0.4", "1.1.1.1", "8.8.8.8", "100.128.0.1", "172.32.0.1", "2001:503:ba3e::2:30",
		"2606:4700:4700::1111", "2a00:1450:4001:82b::200e"} {
		if Blocked(net.ParseIP(a)) {
			t.Errorf("%s is blocked, and is an address of the public Internet", a)
		}
	}
	if !Blocked(nil) {
		t.Error("no address is not blocked")
	}
}
