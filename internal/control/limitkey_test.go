package control

import "testing"

// A rate limit counts an IPv4 address by itself and an IPv6 address by its
// /64 (issue 30, the bugs: rotating within a /64 reset the sign-in limit).
func TestLimitKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":                  "192.0.2.7",
		"::ffff:192.0.2.7":           "192.0.2.7",
		"2001:db8:1:2::1":            "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:ffff:0:9": "2001:db8:1:2::/64",
		"fe80::1%eth0":               "fe80::/64",
		"not an address":             "not an address",
	} {
		if got := limitKey(in); got != want {
			t.Errorf("limitKey(%q) = %q, want %q", in, got, want)
		}
	}
	if limitKey("2001:db8:1:2::1") == limitKey("2001:db8:1:3::1") {
		t.Error("two /64s count as one")
	}
}
