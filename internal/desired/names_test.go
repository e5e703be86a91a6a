package desired

import (
	"regexp"
	"strings"
	"testing"
)

// A Service name is a DNS-1035 label: what every object the agent makes
// accepts.
var dns1035 = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

func TestObjectNames(t *testing.T) {
	long := strings.Repeat("s", 63)
	cases := []struct {
		got, want string
	}{
		{DeploymentName("api", "web", 3), "api-web-r3"},
		{ServiceName("api", "web"), "api-web"},
		{SecretName("api", 3), "api-env-r3"},
		{IngressName("api"), "api"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("name %q, want %q", c.got, c.want)
		}
	}
	seen := map[string]string{}
	for _, parts := range [][2]string{
		{long, "web"}, {long, "worker"}, {long + "x", "web"}, {"1api", "web"}, {"2api", "web"},
		{"api", strings.Repeat("p", 63)}, {"api", "web"},
	} {
		for _, name := range []string{ServiceName(parts[0], parts[1]), DeploymentName(parts[0], parts[1], 12345)} {
			if len(name) > 63 || !dns1035.MatchString(name) {
				t.Errorf("%v gives %q (%d characters), not a DNS-1035 label", parts, name, len(name))
			}
			if other, dup := seen[name]; dup {
				t.Errorf("%v and %s both give %q", parts, other, name)
			}
			seen[name] = strings.Join(parts[:], "/")
		}
	}
	if ServiceName(long, "web") != ServiceName(long, "web") {
		t.Error("a hashed name is not stable")
	}
}
