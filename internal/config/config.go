// Package config reads the control plane's settings from the environment
// (and the .env file the operator keeps beside it). It never logs a value
// that could hold a secret, such as the database URL.
package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is every setting of `nebula serve`.
type Config struct {
	// Addr is the listen address of the HTTP server.
	Addr string
	// DataDir holds the embedded store's file when DatabaseURL is empty.
	DataDir string
	// DatabaseURL selects PostgreSQL.
	DatabaseURL string
	// Introspection enables GraphQL schema introspection.
	Introspection bool
	// LogLevel is debug, info, warn or error; LogFormat text or json.
	LogLevel, LogFormat string
	// Limits of one GraphQL request.
	MaxBodyBytes  int64
	MaxTokens     int
	MaxDepth      int
	MaxComplexity int
	// MaxSelections caps a document's fields, inline fragments and
	// fragment spreads with its fragments expanded; MaxPreviews the
	// preview… fields one request may run.
	MaxSelections int
	MaxPreviews   int
	// Bootstrap names the first tenant and its admin on an empty store.
	BootstrapTenant, BootstrapEmail string
	// MasterKey seals secrets; OldMasterKeys only open them (rotation).
	// Never logged.
	MasterKey     string
	OldMasterKeys []string
	// AgentHeartbeat is the interval agents are asked to report at;
	// ConnectTokenGrace how long a replaced connect token keeps working.
	AgentHeartbeat    time.Duration
	ConnectTokenGrace time.Duration
	// AgentDisconnectedAfter is how long a silent cluster still shows
	// CONNECTED.
	AgentDisconnectedAfter time.Duration
	// PublicURL is the control plane's URL as agents reach it (install
	// manifests); AgentImageRepository the agent image without its tag;
	// AgentImageDigest, when set, pins the install manifests' image to
	// that digest; AgentCABundleFile is a PEM bundle the manifests give
	// agents to trust the control plane's certificate.
	PublicURL, AgentImageRepository, AgentImageDigest, AgentCABundleFile string
	// AgentCABundle is AgentCABundleFile's content, read by the command
	// that serves.
	AgentCABundle string
	// TLSCertFile and TLSKeyFile, when set, make the server speak TLS with
	// that certificate, read again when the files change.
	TLSCertFile, TLSKeyFile string
	// ApprovalTTL is how long a deployment may wait for approval;
	// AllowSelfApproval lets a requester approve their own deployment.
	ApprovalTTL       time.Duration
	AllowSelfApproval bool
	// JobInterval is how often the background jobs run; StallAfter how
	// long a rollout may make no progress before it is flagged.
	JobInterval, StallAfter time.Duration
	// IdempotencyTTL is how long a mutation's idempotency key and its
	// outcome are kept for retries.
	IdempotencyTTL time.Duration
	// MaxTokensPerUser caps the API tokens that work at once for one user
	// in one tenant.
	MaxTokensPerUser int
	// LogRetention is how long container logs and Kubernetes events are
	// kept.
	LogRetention time.Duration
	// SessionTTL is how long a person's sign-in lasts; InvitationTTL how
	// long an invitation link works.
	SessionTTL, InvitationTTL time.Duration
	// OIDC is single sign-on through an OpenID provider; off without an
	// issuer.
	OIDC OIDC
	// Builds bound the builds run on the clusters (NEBULA_BUILD*).
	Builds Builds
	// Webhooks tune outbound webhook deliveries (NEBULA_WEBHOOK_*).
	Webhooks Webhooks
	// AllowedOrigins may open GraphQL websockets from a browser (besides
	// the server's own origin).
	AllowedOrigins []string
	// TrustedDocumentsFile is a manifest of trusted documents
	// (NEBULA_TRUSTED_DOCUMENTS): the operations a token bound to them may
	// run, besides the console's. TrustedDocuments is its content, by
	// hash, read by the command that serves.
	TrustedDocumentsFile string
	TrustedDocuments     map[string]string
	// CORSOrigins are the browser origins (scheme://host[:port]) whose
	// pages may call the API across origins, with an API token
	// (NEBULA_CORS_ORIGINS; none by default). They may open GraphQL
	// websockets too.
	CORSOrigins []string
	// MaxConnsPerToken and MaxConnsPerAddress cap the GraphQL websockets
	// and SSE streams open at once on one replica, per API token and per
	// client address.
	MaxConnsPerToken, MaxConnsPerAddress int
	// WSPing is how often the server pings a GraphQL websocket.
	WSPing time.Duration
	// ShutdownGrace bounds how long a stopping server waits for requests
	// in flight once it closed its connections.
	ShutdownGrace time.Duration
	// PprofAddr, when set, is a loopback address where the process serves
	// Go's profiles (net/http/pprof): for measuring it under load, off by
	// default.
	PprofAddr string
	// Version is the build's, set by the command, not the environment.
	Version string
}

// Defaults of the request limits that a Config built without FromEnv
// (zero) also gets.
const (
	DefaultMaxSelections = 2000
	DefaultMaxPreviews   = 10
)

// FromEnv reads the settings; lookup is os.LookupEnv outside tests.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	c := Config{
		Addr:                 str(lookup, "NEBULA_ADDR", "127.0.0.1:8080"),
		DataDir:              str(lookup, "NEBULA_DATA_DIR", "nebula-data"),
		DatabaseURL:          str(lookup, "NEBULA_DATABASE_URL", ""),
		LogLevel:             str(lookup, "NEBULA_LOG_LEVEL", "info"),
		LogFormat:            str(lookup, "NEBULA_LOG_FORMAT", "text"),
		BootstrapTenant:      str(lookup, "NEBULA_BOOTSTRAP_TENANT", "default"),
		BootstrapEmail:       str(lookup, "NEBULA_BOOTSTRAP_EMAIL", "admin@localhost.localdomain"),
		MasterKey:            str(lookup, "NEBULA_MASTER_KEY", ""),
		AgentImageRepository: str(lookup, "NEBULA_AGENT_IMAGE_REPOSITORY", "ghcr.io/nebulactrl/nebula"),
		AgentImageDigest:     str(lookup, "NEBULA_AGENT_IMAGE_DIGEST", ""),
		AgentCABundleFile:    str(lookup, "NEBULA_AGENT_CA_BUNDLE_FILE", ""),
		TrustedDocumentsFile: str(lookup, "NEBULA_TRUSTED_DOCUMENTS", ""),
		TLSCertFile:          str(lookup, "NEBULA_TLS_CERT_FILE", ""),
		TLSKeyFile:           str(lookup, "NEBULA_TLS_KEY_FILE", ""),
	}
	scheme := "http://"
	if c.TLSCertFile != "" {
		scheme = "https://"
	}
	c.PublicURL = str(lookup, "NEBULA_PUBLIC_URL", scheme+c.Addr)
	c.OIDC = OIDC{Issuer: str(lookup, "NEBULA_OIDC_ISSUER", ""), ClientID: str(lookup, "NEBULA_OIDC_CLIENT_ID", ""),
		ClientSecret: str(lookup, "NEBULA_OIDC_CLIENT_SECRET", ""), GroupsClaim: str(lookup, "NEBULA_OIDC_GROUPS_CLAIM", "groups")}
	for _, d := range strings.Split(str(lookup, "NEBULA_OIDC_ALLOWED_DOMAINS", ""), ",") {
		if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
			c.OIDC.AllowedDomains = append(c.OIDC.AllowedDomains, d)
		}
	}
	c.OIDC.Roles, c.OIDC.rolesErr = parseOIDCRoles(str(lookup, "NEBULA_OIDC_ROLES", ""))
	for _, k := range strings.Split(str(lookup, "NEBULA_MASTER_KEYS_OLD", ""), ",") {
		if k = strings.TrimSpace(k); k != "" {
			c.OldMasterKeys = append(c.OldMasterKeys, k)
		}
	}
	for _, o := range strings.Split(str(lookup, "NEBULA_ALLOWED_ORIGINS", ""), ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.AllowedOrigins = append(c.AllowedOrigins, o)
		}
	}
	var errs []string
	for _, o := range strings.Split(str(lookup, "NEBULA_CORS_ORIGINS", ""), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		if u, err := url.Parse(o); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.Contains(o, "*") {
			errs = append(errs, fmt.Sprintf("NEBULA_CORS_ORIGINS: %q is not an origin: list each as scheme://host[:port], such as https://dash.example.com (no path, no wildcard)", o))
			continue
		}
		c.CORSOrigins = append(c.CORSOrigins, strings.ToLower(o))
	}
	b := func(key string, def bool) bool {
		v, ok := lookup(key)
		if !ok || v == "" {
			return def
		}
		x, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s=%q is not a boolean", key, v))
		}
		return x
	}
	n := func(key string, def, min, max int) int {
		v, ok := lookup(key)
		if !ok || v == "" {
			return def
		}
		x, err := strconv.Atoi(v)
		if err != nil || x < min || x > max {
			errs = append(errs, fmt.Sprintf("%s=%q must be a whole number from %d to %d", key, v, min, max))
		}
		return x
	}
	d := func(key string, def, min, max time.Duration) time.Duration {
		v, ok := lookup(key)
		if !ok || v == "" {
			return def
		}
		x, err := time.ParseDuration(v)
		if err != nil || x < min || x > max {
			errs = append(errs, fmt.Sprintf("%s=%q must be a duration from %s to %s", key, v, min, max))
		}
		return x
	}
	c.AgentHeartbeat = d("NEBULA_AGENT_HEARTBEAT", 15*time.Second, time.Second, 5*time.Minute)
	c.AgentDisconnectedAfter = d("NEBULA_AGENT_DISCONNECTED_AFTER", 60*time.Second, time.Second, time.Hour)
	c.ConnectTokenGrace = d("NEBULA_CONNECT_TOKEN_GRACE", time.Hour, 0, 30*24*time.Hour)
	c.Introspection = b("NEBULA_INTROSPECTION", true)
	c.ApprovalTTL = d("NEBULA_APPROVAL_TTL", 24*time.Hour, time.Second, 90*24*time.Hour)
	c.AllowSelfApproval = b("NEBULA_ALLOW_SELF_APPROVAL", false)
	c.JobInterval = d("NEBULA_JOB_INTERVAL", 5*time.Second, 100*time.Millisecond, time.Hour)
	c.StallAfter = d("NEBULA_DEPLOYMENT_STALL_AFTER", 10*time.Minute, time.Second, 24*time.Hour)
	c.IdempotencyTTL = d("NEBULA_IDEMPOTENCY_TTL", 24*time.Hour, time.Minute, 30*24*time.Hour)
	c.MaxBodyBytes = int64(n("NEBULA_MAX_BODY_BYTES", 1<<20, 1<<10, 64<<20))
	c.MaxTokens = n("NEBULA_MAX_QUERY_TOKENS", 15000, 100, 1_000_000)
	c.MaxDepth = n("NEBULA_MAX_DEPTH", 12, 2, 100)
	c.MaxComplexity = n("NEBULA_MAX_COMPLEXITY", 250_000, 10, 100_000_000)
	c.ShutdownGrace = d("NEBULA_SHUTDOWN_GRACE", 15*time.Second, 0, 10*time.Minute)
	c.PprofAddr = str(lookup, "NEBULA_PPROF_ADDR", "")
	if c.PprofAddr != "" && !loopback(c.PprofAddr) {
		errs = append(errs, fmt.Sprintf("NEBULA_PPROF_ADDR=%q must be a loopback address and port, such as 127.0.0.1:6060: profiles show the process's memory", c.PprofAddr))
	}
	c.WSPing = d("NEBULA_WS_PING", 15*time.Second, 100*time.Millisecond, 5*time.Minute)
	c.MaxConnsPerToken = n("NEBULA_MAX_CONNECTIONS_PER_TOKEN", 32, 1, 100_000)
	c.MaxConnsPerAddress = n("NEBULA_MAX_CONNECTIONS_PER_ADDRESS", 256, 1, 1_000_000)
	c.MaxTokensPerUser = n("NEBULA_MAX_TOKENS_PER_USER", 25, 1, 10_000)
	c.LogRetention = d("NEBULA_LOG_RETENTION", 7*24*time.Hour, time.Hour, 365*24*time.Hour)
	c.SessionTTL = d("NEBULA_SESSION_TTL", 12*time.Hour, 5*time.Minute, 30*24*time.Hour)
	c.InvitationTTL = d("NEBULA_INVITATION_TTL", 7*24*time.Hour, 10*time.Minute, 30*24*time.Hour)
	c.Builds = Builds{
		PerCluster:   n("NEBULA_BUILDS_PER_CLUSTER", 2, 1, 1000),
		Timeout:      d("NEBULA_BUILD_TIMEOUT", 30*time.Minute, time.Minute, 24*time.Hour),
		Silence:      d("NEBULA_BUILD_SILENCE", 2*time.Minute, 10*time.Second, time.Hour),
		Attempts:     n("NEBULA_BUILD_ATTEMPTS", 3, 1, 10),
		MaxLogLines:  int64(n("NEBULA_BUILD_LOG_MAX_LINES", 20000, 100, 10_000_000)),
		MaxLogBytes:  int64(n("NEBULA_BUILD_LOG_MAX_BYTES", 10<<20, 10<<10, 1<<30)),
		MaxLineBytes: int64(n("NEBULA_BUILD_LOG_MAX_LINE_BYTES", 4<<10, 256, 1<<20)),
		LogRetention: d("NEBULA_BUILD_LOG_RETENTION", 7*24*time.Hour, time.Hour, 365*24*time.Hour),
		Builder:      str(lookup, "NEBULA_BUILDER_IMAGE", "moby/buildkit:v0.26.2-rootless"),
		GitTimeout:   d("NEBULA_GIT_TIMEOUT", 10*time.Second, time.Second, 5*time.Minute),
		GitPrivate:   b("NEBULA_GIT_ALLOW_PRIVATE_NETWORKS", false),
	}
	c.Webhooks = Webhooks{
		Timeout:       d("NEBULA_WEBHOOK_TIMEOUT", 10*time.Second, 100*time.Millisecond, time.Minute),
		RetryWindow:   d("NEBULA_WEBHOOK_RETRY_WINDOW", 24*time.Hour, time.Second, 7*24*time.Hour),
		BackoffMin:    d("NEBULA_WEBHOOK_BACKOFF", 5*time.Second, 10*time.Millisecond, time.Hour),
		BackoffMax:    d("NEBULA_WEBHOOK_BACKOFF_MAX", time.Hour, 10*time.Millisecond, 24*time.Hour),
		SecretOverlap: d("NEBULA_WEBHOOK_SECRET_OVERLAP", 24*time.Hour, 0, 30*24*time.Hour),
		AllowPrivate:  b("NEBULA_WEBHOOK_ALLOW_PRIVATE_NETWORKS", false),
		Retention:     d("NEBULA_WEBHOOK_RETENTION", 7*24*time.Hour, time.Hour, 365*24*time.Hour),
		Poll:          d("NEBULA_WEBHOOK_POLL", time.Second, 10*time.Millisecond, time.Minute),
	}
	if c.Webhooks.BackoffMax < c.Webhooks.BackoffMin {
		errs = append(errs, "NEBULA_WEBHOOK_BACKOFF_MAX must be at least NEBULA_WEBHOOK_BACKOFF")
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, "NEBULA_TLS_CERT_FILE and NEBULA_TLS_KEY_FILE go together: set both, or neither")
	}
	if c.AgentImageDigest != "" && !imageDigest.MatchString(c.AgentImageDigest) {
		errs = append(errs, fmt.Sprintf("NEBULA_AGENT_IMAGE_DIGEST=%q must be sha256: and 64 hex digits", c.AgentImageDigest))
	}
	c.MaxSelections = n("NEBULA_MAX_SELECTIONS", DefaultMaxSelections, 100, 100_000)
	c.MaxPreviews = n("NEBULA_MAX_PREVIEWS_PER_REQUEST", DefaultMaxPreviews, 1, 1000)
	if !strings.HasPrefix(c.PublicURL, "http://") && !strings.HasPrefix(c.PublicURL, "https://") {
		errs = append(errs, fmt.Sprintf("NEBULA_PUBLIC_URL=%q must start with http:// or https://", c.PublicURL))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Sprintf("NEBULA_LOG_LEVEL=%q must be debug, info, warn or error", c.LogLevel))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Sprintf("NEBULA_LOG_FORMAT=%q must be text or json", c.LogFormat))
	}
	if c.OIDC.rolesErr != nil {
		errs = append(errs, c.OIDC.rolesErr.Error())
	}
	if c.OIDC.Enabled() {
		if u, err := url.Parse(c.OIDC.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("NEBULA_OIDC_ISSUER=%q must be the provider's https URL", c.OIDC.Issuer))
		}
		if c.OIDC.ClientID == "" || c.OIDC.ClientSecret == "" {
			errs = append(errs, "NEBULA_OIDC_ISSUER is set: NEBULA_OIDC_CLIENT_ID and NEBULA_OIDC_CLIENT_SECRET must be too")
		}
		if len(c.OIDC.Roles) == 0 {
			errs = append(errs, "NEBULA_OIDC_ISSUER is set: NEBULA_OIDC_ROLES must map at least one group to a tenant role")
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

func str(lookup func(string) (string, bool), key, def string) string {
	if v, ok := lookup(key); ok && v != "" {
		return v
	}
	return def
}

// LoadDotEnv sets variables from a KEY=VALUE file that are not already set
// in the environment. A missing file is not an error.
func LoadDotEnv(path string) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%s line %d: want KEY=VALUE", path, i+1)
		}
		k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"'`)
		if _, set := os.LookupEnv(k); !set {
			if err := os.Setenv(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteDotEnv sets keys in a KEY=VALUE file, keeping its other lines, and
// leaves it readable by its owner only: it holds secrets.
func WriteDotEnv(path string, set map[string]string) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	var out []string
	done := map[string]bool{}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		k, _, ok := strings.Cut(strings.TrimSpace(line), "=")
		if v, replace := set[strings.TrimSpace(k)]; ok && replace {
			line = strings.TrimSpace(k) + "=" + v
			done[strings.TrimSpace(k)] = true
		}
		if line != "" || len(out) > 0 {
			out = append(out, line)
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !done[k] {
			out = append(out, k+"="+set[k])
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// imageDigest is an image's content digest.
var imageDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Builds are the settings of the builds run on the clusters
// (NEBULA_BUILD_*); control.BuildSettings is this type.
type Builds struct {
	// PerCluster is how many builds run at once on one cluster.
	PerCluster int
	// Timeout ends a build that has run this long (TIMED_OUT).
	Timeout time.Duration
	// Silence is how long a running build's agent may say nothing of it
	// before the build is handed out again (its agent vanished).
	Silence time.Duration
	// Attempts is how many times a build is handed out before it fails.
	Attempts int
	// MaxLogLines and MaxLogBytes bound the log kept per build; the rest
	// is cut, with a line saying so. MaxLineBytes bounds one line.
	MaxLogLines, MaxLogBytes, MaxLineBytes int64
	// LogRetention is how long log lines are kept.
	LogRetention time.Duration
	// Builder is the BuildKit image the agent runs builds with.
	Builder string
	// GitTimeout bounds reading a branch's head from its repository (a
	// deploy of the branch head); GitPrivate lets that request reach
	// loopback, private and link-local addresses, refused otherwise.
	GitTimeout time.Duration
	GitPrivate bool
}

// Webhooks are the settings of outbound webhook deliveries: an attempt's
// Timeout; tried again for RetryWindow, backing off from BackoffMin to
// BackoffMax; a rotated-out secret signing for SecretOverlap; endpoints
// allowed on private networks; delivered messages kept for Retention;
// each replica looking for due messages every Poll.
type Webhooks struct {
	Timeout, RetryWindow, BackoffMin, BackoffMax, SecretOverlap, Retention, Poll time.Duration
	AllowPrivate                                                                 bool
}

// OIDC is single sign-on through an OpenID provider (authorization code
// flow with PKCE): NEBULA_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET; people
// whose email is verified, in NEBULA_OIDC_ALLOWED_DOMAINS (any when
// empty), are members of the tenants their groups (the GroupsClaim
// claim) map to in NEBULA_OIDC_ROLES.
type OIDC struct {
	Issuer, ClientID, ClientSecret string
	AllowedDomains                 []string
	GroupsClaim                    string
	// Roles maps a group to tenant roles.
	Roles    map[string][]OIDCGrant
	rolesErr error
}

// OIDCGrant is a role in a tenant that a group gives.
type OIDCGrant struct {
	// Tenant is the tenant's id (raw or global) or name.
	Tenant string
	Role   string
}

// Enabled tells whether OIDC sign-in is configured.
func (o OIDC) Enabled() bool { return o.Issuer != "" }

// parseOIDCRoles reads "group=tenant:ROLE,group=tenant:ROLE": a group may
// give roles in several tenants; the tenant is its id (raw or global) or
// its name (when no other tenant has it); ROLE is ADMIN or MEMBER.
func parseOIDCRoles(v string) (map[string][]OIDCGrant, error) {
	out := map[string][]OIDCGrant{}
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		group, grant, ok := strings.Cut(item, "=")
		tenant, role, ok2 := strings.Cut(grant, ":")
		group, tenant, role = strings.TrimSpace(group), strings.TrimSpace(tenant), strings.ToUpper(strings.TrimSpace(role))
		if !ok || !ok2 || group == "" || tenant == "" || (role != "ADMIN" && role != "MEMBER") {
			return nil, fmt.Errorf("NEBULA_OIDC_ROLES item %q must be group=tenant:ADMIN or group=tenant:MEMBER (the tenant's id or name)", item)
		}
		out[group] = append(out[group], OIDCGrant{Tenant: tenant, Role: role})
	}
	return out, nil
}

// loopback tells whether addr is host:port with a loopback host.
func loopback(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
