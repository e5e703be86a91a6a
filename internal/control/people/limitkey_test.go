package people

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

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

// One account's sign-in in flight refuses a second at once (no queue, no
// store write, no derivation); another account is not held up; once the
// first ends the account signs in again; 60 at once, one gets through.
func TestSignInInFlight(t *testing.T) {
	var k inFlight
	end, ok := k.begin("account:a@x.test")
	if !ok {
		t.Fatal("the first sign-in of an account was refused")
	}
	if _, again := k.begin("account:a@x.test"); again {
		t.Error("a second sign-in of the account while one is checked was let through")
	}
	endB, ok := k.begin("account:b@x.test")
	if !ok {
		t.Error("another account was held up")
	}
	endB()
	end()
	end, ok = k.begin("account:a@x.test")
	if !ok {
		t.Fatal("the account could not sign in again after the first ended")
	}
	end()

	var wg sync.WaitGroup
	var through, refused atomic.Int32
	release := make(chan struct{})
	for range 60 {
		wg.Go(func() {
			if end, ok := k.begin("account:c@x.test"); ok {
				through.Add(1)
				<-release
				end()
				return
			}
			refused.Add(1)
		})
	}
	// The one through holds on until every other has been refused.
	for through.Load()+refused.Load() < 60 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if n := through.Load(); n != 1 {
		t.Errorf("%d of 60 concurrent sign-ins of one account got through, want 1", n)
	}
	if len(k.m) != 0 {
		t.Errorf("keys left behind: %v", k.m)
	}
}
