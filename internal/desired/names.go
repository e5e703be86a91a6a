package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Names of the Kubernetes objects of a service. The compiler (service
// addresses in variable references), previews and the agent all use these,
// so they always agree.

// DeploymentName is the Deployment of one process of one release.
func DeploymentName(service, process string, release int) string {
	return objectName(service, process, "r"+strconv.Itoa(release))
}

// ServiceName is the Service of one process (every release's).
func ServiceName(service, process string) string { return objectName(service, process) }

// SecretName holds the variables of one release of a service: a release
// carries its configuration down to its pods, so a release rolling out (or
// rolled back) never changes what the pods of another read.
func SecretName(service string, release int) string {
	return objectName(service, "env", "r"+strconv.Itoa(release))
}

// IngressName routes a service's domains.
func IngressName(service string) string { return objectName(service) }

// objectName joins parts with "-" into a name every kind accepts: a DNS
// label of at most 63 characters that starts with a letter (a Service's
// rule). A name that would not be one keeps a readable prefix and ends in
// a hash of the whole, so two different part lists never share a name by
// truncation.
func objectName(parts ...string) string {
	name := strings.Join(parts, "-")
	if len(name) <= 63 && name != "" && name[0] >= 'a' && name[0] <= 'z' {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	prefix := name
	if prefix == "" || prefix[0] < 'a' || prefix[0] > 'z' {
		prefix = "n" + prefix
	}
	if len(prefix) > 54 {
		prefix = prefix[:54]
	}
	return strings.TrimRight(prefix, "-") + "-" + hex.EncodeToString(sum[:4])
}
