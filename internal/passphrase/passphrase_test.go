package passphrase

import (
	"strings"
	"testing"
)

func TestHashAndCheck(t *testing.T) {
	h := Hash("correct horse battery staple")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q is not argon2id in the PHC format with the documented parameters", h)
	}
	if h == Hash("correct horse battery staple") {
		t.Error("two hashes of one passphrase are equal: no fresh salt")
	}
	if !Check(h, "correct horse battery staple") {
		t.Error("the passphrase does not check against its hash")
	}
	for _, wrong := range []string{"correct horse battery stapl", "Correct horse battery staple", ""} {
		if Check(h, wrong) {
			t.Errorf("%q checks against the hash of another passphrase", wrong)
		}
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdA$a2V5", "$argon2id$v=19$m=99999999,t=2,p=1$c2FsdA$a2V5",
		strings.Replace(h, "$v=19$", "$v=16$", 1), h[:len(h)-4] + "!!!!"} {
		if Check(bad, "correct horse battery staple") {
			t.Errorf("a malformed hash %q matched", bad)
		}
	}
	if Check(Dummy, "") || Check(Dummy, "not a passphrase anyone has: ") {
		t.Error("the dummy hash matched")
	}
}

func TestValid(t *testing.T) {
	for p, ok := range map[string]bool{
		"short":                          false,
		"twelve chars":                   true,
		strings.Repeat("é", 12):          true,
		strings.Repeat("x", MaxLength):   true,
		strings.Repeat("x", MaxLength+1): false,
		"eleven char":                    false,
		"\xff\xfe invalid utf-8 here":    false,
	} {
		if err := Valid(p); (err == nil) != ok {
			t.Errorf("Valid(%.20q) = %v, want ok %v", p, err, ok)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	h := Hash("correct horse battery staple")
	for b.Loop() {
		Check(h, "correct horse battery staple")
	}
}

// A person's KDF derives one key per passphrase; a tenant's sealed value
// opens only with the key of its passphrase and for its tenant, and says
// nothing of another tenant's (equal passphrases seal differently).
func TestSealedPassphrases(t *testing.T) {
	kdf := NewKDF()
	if !strings.HasPrefix(kdf, "$argon2id$v=19$m=19456,t=2,p=1$") || kdf == NewKDF() {
		t.Fatalf("kdf %q: not argon2id with the documented parameters, or no fresh salt", kdf)
	}
	before := Derivations()
	key, err := Derive(kdf, "correct horse battery staple")
	if err != nil || Derivations() != before+1 {
		t.Fatalf("deriving: %v, %d derivations", err, Derivations()-before)
	}
	a, b := Seal(key, "tenant-a"), Seal(key, "tenant-b")
	if !Sealed(a) || a == b {
		t.Errorf("sealed values %q and %q: not marked, or equal across tenants", a, b)
	}
	if !Opens(key, "tenant-a", a) || Opens(key, "tenant-b", a) {
		t.Error("a sealed value opens for the wrong tenant, or not for its own")
	}
	other, _ := Derive(kdf, "correct horse battery stapl")
	elsewhere, _ := Derive(NewKDF(), "correct horse battery staple")
	if Opens(other, "tenant-a", a) || Opens(elsewhere, "tenant-a", a) {
		t.Error("a sealed value opens with another passphrase's key or another person's")
	}
	legacy := Hash("correct horse battery staple")
	if Sealed(legacy) || Opens(key, "tenant-a", legacy) || Opens(key, "tenant-a", sealedPrefix+"!!!") {
		t.Error("a hash, or a malformed sealed value, opens")
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ", "$argon2id$v=19$m=99999999,t=2,p=1$c2FsdHNhbHQ",
		"$argon2id$v=16$m=19456,t=2,p=1$c2FsdHNhbHQ", "$argon2id$v=19$m=19456,t=2,p=1$c2E", "$argon2id$v=19$m=19456,t=2,p=1$!!"} {
		if _, err := Derive(bad, "correct horse battery staple"); err == nil {
			t.Errorf("deriving under %q worked", bad)
		}
	}
}
