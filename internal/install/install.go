// Package install renders the manifests that install a cluster's agent:
// the namespace nebula-system, its service account, RBAC (with the Lease
// and state permissions in its own namespace), the two-replica Deployment
// pinned to one agent version, and a reference to the Secret that holds
// the connect token. The token itself is never inside: the operator
// creates the Secret from the token registerCluster returned.
package install

import (
	"bytes"
	_ "embed"
	"fmt"
	"strings"
	"text/template"
)

// Namespace, SecretName and SecretKey are where the agent finds its token.
const (
	Namespace  = "nebula-system"
	SecretName = "nebula-agent-token"
	SecretKey  = "token"
	// TokenDir is where the Secret is mounted in the agent's pods.
	TokenDir = "/var/run/secrets/nebula"
	// BuildNamespace is where builds run as Jobs.
	BuildNamespace = "nebula-build"
)

// Settings are the control plane's: where agents connect and which image
// runs them.
type Settings struct {
	// Server is the control plane's URL as agents reach it.
	Server string
	// Repository is the agent image without a tag; the tag is the version.
	Repository string
	// Version pins the agent (the control plane's own version).
	Version string
	// Digest, when set, pins the image to its content digest too
	// (repository:version@sha256:…), so that what runs is exactly the image
	// built.
	Digest string
	// CABundle, when set, is a PEM bundle the agents trust for the
	// control plane's certificate (a private certificate authority): the
	// manifests carry it in a ConfigMap.
	CABundle string
}

// CAConfigMap and CAKey hold the agents' CA bundle; CADir is where its
// pods mount it.
const (
	CAConfigMap = "nebula-agent-ca"
	CAKey       = "ca.crt"
	CADir       = "/etc/nebula/ca"
)

// Bundle is what a console shows for one cluster.
type Bundle struct {
	Version   string
	Image     string
	Manifests string
	Command   string
}

//go:embed agent.yaml.tmpl
var manifestText string

//go:embed controlplane.yaml.tmpl
var controlPlaneText string

var (
	manifests    = template.Must(template.New("agent").Option("missingkey=error").Parse(manifestText))
	controlPlane = template.Must(template.New("control-plane").Option("missingkey=error").Parse(controlPlaneText))
)

// indent prefixes every line of a PEM bundle, for a YAML block scalar.
func indent(s, prefix string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// ControlPlaneNamespace and ControlPlaneSecret are where the control
// plane's manifests run it and find its database URL and master key.
const (
	ControlPlaneNamespace = "nebula"
	ControlPlaneSecret    = "nebula-control-plane"
)

// ControlPlane is what the control plane's manifests are made of.
type ControlPlane struct {
	// Image is the nebula image, best pinned by digest (repo:tag@sha256:…).
	Image   string
	Version string
	// PublicURL is where people and agents reach it (NEBULA_PUBLIC_URL);
	// default https://nebula.example.com, to be replaced.
	PublicURL string
	// Replicas of `nebula serve`; default 2.
	Replicas int
}

// RenderControlPlane builds the manifests that run the control plane on a
// Kubernetes cluster: its namespace, a Deployment of Replicas `nebula
// serve` on PostgreSQL (probes on /readyz and /healthz, the database URL
// and the master key from a Secret the operator creates), a Service and a
// PodDisruptionBudget.
func RenderControlPlane(c ControlPlane) (string, error) {
	if c.Image == "" || c.Version == "" {
		return "", fmt.Errorf("the control plane's manifests need an image and a version: %q, %q", c.Image, c.Version)
	}
	if c.PublicURL == "" {
		c.PublicURL = "https://nebula.example.com"
	}
	if c.Replicas <= 0 {
		c.Replicas = 2
	}
	var b bytes.Buffer
	err := controlPlane.Execute(&b, map[string]any{"Namespace": ControlPlaneNamespace, "SecretName": ControlPlaneSecret,
		"Image": c.Image, "Version": c.Version, "PublicURL": c.PublicURL, "Replicas": c.Replicas})
	if err != nil {
		return "", fmt.Errorf("rendering the control plane's manifests: %w", err)
	}
	return b.String(), nil
}

// Render builds the bundle for a cluster.
func Render(s Settings, clusterName string) (Bundle, error) {
	if s.Server == "" || s.Repository == "" || s.Version == "" {
		return Bundle{}, fmt.Errorf("install settings are incomplete: server %q, repository %q, version %q", s.Server, s.Repository, s.Version)
	}
	image := s.Repository + ":" + s.Version
	if s.Digest != "" {
		image += "@" + s.Digest
	}
	var b bytes.Buffer
	err := manifests.Execute(&b, map[string]any{
		"Namespace": Namespace, "SecretName": SecretName, "SecretKey": SecretKey, "TokenDir": TokenDir,
		"BuildNamespace": BuildNamespace,
		"Image":          image, "Server": s.Server, "Version": s.Version, "Cluster": clusterName,
		"CABundle": indent(s.CABundle, "    "), "CAConfigMap": CAConfigMap, "CAKey": CAKey, "CADir": CADir,
	})
	if err != nil {
		return Bundle{}, fmt.Errorf("rendering the agent manifests: %w", err)
	}
	file := "nebula-agent-" + clusterName + ".yaml"
	cmd := strings.Join([]string{
		"kubectl apply -f " + file,
		"kubectl -n " + Namespace + " create secret generic " + SecretName +
			` --from-literal=` + SecretKey + `="$NEBULA_CONNECT_TOKEN"`,
	}, " && ")
	return Bundle{Version: s.Version, Image: image, Manifests: b.String(), Command: cmd}, nil
}
