package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/nebulactrl/nebula/internal/client"
)

// The client commands (login, status, deploy, …) talk to a control plane
// over its GraphQL API only, through internal/client, with a token kept
// in the CLI's credentials file. They never read the control plane's
// configuration (.env) or its store.

// Exit codes of the client commands, for scripts (docs/cli.md).
const (
	exitError      = 1   // the request failed: bad input, refused, unreachable
	exitFailed     = 3   // the deployment ended FAILED
	exitRolledBack = 4   // the deployment ended ROLLED_BACK
	exitCancelled  = 5   // the deployment ended CANCELLED (or was rejected)
	exitSuperseded = 6   // a newer deployment superseded it
	exitTimeout    = 124 // --timeout passed before the deployment ended
)

// ExitError is an error with the process exit code it should end with.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the exit code for what Run returned.
func ExitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if err != nil {
		return exitError
	}
	return 0
}

// credentials are the CLI's contexts: a control plane's URL and a token
// for each, and the one in use. Stored as JSON with mode 0600 (the
// directory 0700); the token is never printed.
type credentials struct {
	Current  string                    `json:"current"`
	Contexts map[string]*remoteContext `json:"contexts"`
}

type remoteContext struct {
	URL   string `json:"url"`
	Token string `json:"token"`
	// CAFile is a PEM bundle to trust for the control plane's TLS
	// certificate, besides the system's.
	CAFile string `json:"caFile,omitempty"`
}

// credentialsPath is NEBULA_CONFIG, or config.json in the user's
// configuration directory ($XDG_CONFIG_HOME/nebula).
func credentialsPath() (string, error) {
	if p := os.Getenv("NEBULA_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the configuration directory (set NEBULA_CONFIG): %w", err)
	}
	return filepath.Join(dir, "nebula", "config.json"), nil
}

func loadCredentials() (*credentials, string, error) {
	path, err := credentialsPath()
	if err != nil {
		return nil, "", err
	}
	c := &credentials{Contexts: map[string]*remoteContext{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, path, nil
	}
	if err != nil {
		return nil, "", err
	}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", path, err)
	}
	if c.Contexts == nil {
		c.Contexts = map[string]*remoteContext{}
	}
	return c, path, nil
}

// save writes the credentials with mode 0600, replacing the file whole.
func (c *credentials) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (c *credentials) names() []string {
	out := make([]string, 0, len(c.Contexts))
	for n := range c.Contexts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// remote is what every client command shares: which control plane (the
// --context flag, or NEBULA_URL and NEBULA_TOKEN), the output format, and
// where it prints.
type remote struct {
	context string
	output  string
	stdout  io.Writer
	stderr  io.Writer
}

// bind adds the shared flags to a client command.
func (r *remote) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.context, "context", os.Getenv("NEBULA_CONTEXT"), "the control plane to use, by its `nebula login` name (NEBULA_CONTEXT; default the current one)")
	cmd.Flags().StringVarP(&r.output, "output", "o", "text", "text, or json for scripts")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		c, _, err := loadCredentials()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return c.names(), cobra.ShellCompDirectiveNoFileComp
	})
}

// json tells whether the output is for scripts.
func (r *remote) json() bool { return r.output == "json" }

// terminal tells whether stdout is a terminal a person watches (progress
// is drawn there; scripts and CI logs get plain lines).
func (r *remote) terminal() bool {
	f, ok := r.stdout.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && !r.json()
}

// client connects to the control plane of the chosen context, or of
// NEBULA_URL and NEBULA_TOKEN when both are set (CI).
func (r *remote) client() (*client.Client, error) {
	if r.output != "text" && r.output != "json" {
		return nil, fmt.Errorf("--output %q: use text or json", r.output)
	}
	url, token, caFile := os.Getenv("NEBULA_URL"), os.Getenv("NEBULA_TOKEN"), os.Getenv("NEBULA_CA_FILE")
	if url == "" || token == "" || r.context != "" {
		creds, path, err := loadCredentials()
		if err != nil {
			return nil, err
		}
		name := r.context
		if name == "" {
			name = creds.Current
		}
		ctx := creds.Contexts[name]
		if ctx == nil {
			if name == "" {
				return nil, errors.New("not logged in: run `nebula login URL` (or set NEBULA_URL and NEBULA_TOKEN)")
			}
			return nil, fmt.Errorf("no context %q in %s (contexts: %v)", name, path, creds.names())
		}
		url, token, caFile = ctx.URL, ctx.Token, ctx.CAFile
	}
	tlsConf, err := tlsTrusting(caFile)
	if err != nil {
		return nil, err
	}
	return client.New(url, token, client.Options{UserAgent: "nebula-cli/" + Version, TLS: tlsConf})
}

// printJSON writes v for scripts.
func (r *remote) printJSON(v any) error {
	enc := json.NewEncoder(r.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// explained is what a client command returns for an error of the API: the
// control plane's refusal said plainly.
func explained(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return &ExitError{Code: 130, Err: errors.New("interrupted")}
	}
	return client.Explain(err)
}

// nodeAs is the object of a node(id:) answer as the type asked for; false
// when there is none (not found, not visible) or it is of another type.
func nodeAs[T any, I any](n *I) (T, bool) {
	var zero T
	if n == nil {
		return zero, false
	}
	t, ok := any(*n).(T)
	return t, ok
}
