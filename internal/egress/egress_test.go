package egress

import (
	"errors"
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
		{"https://203.0.113.10/hook", true, true},
		{"http://[2001:db8::1]/hook", true, true},
		{"http://127.0.0.1/", true, false},
		{"http://localhost:8080/", true, false},
		{"http://[::1]/", true, false},
		{"http://10.0.0.1/", true, false},
		{"http://172.16.5.4/", true, false},
		{"http://169.254.169.254/", true, false},
		{"http://[fe80::1]/", true, false},
		{"http://0.0.0.0/", true, false},
		{"ftp://203.0.113.10/", false, false},
		{"https://a:b@203.0.113.10/", false, false},
		{"https:///nohost", false, false},
		{"https://203.0.113.10/#frag", false, false},
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
