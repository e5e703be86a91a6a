// Package cli is the `nebula` command: it parses arguments, reads the
// configuration and wires the pieces for each subcommand. Subcommands
// print for people on stdout and log on stderr; the only secrets they ever
// print are tokens created by that very command, once.
package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/control/outbound"
	"github.com/nebulactrl/nebula/internal/control/people"

	"github.com/spf13/cobra"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/postgres"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

// Version is set at build time.
var Version = "dev"

// Run executes the command line args (without the program name). Every
// command's --help prints its help and does nothing else: the control
// plane's configuration is read only once a command runs.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return RunWithInput(ctx, args, os.Stdin, stdout, stderr)
}

// RunWithInput is Run reading standard input from stdin (a token for
// login, a confirmation).
func RunWithInput(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

// newRoot is the command tree.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "nebula",
		Short: "NebulaCtrl, the deployment control plane for K3s and Kubernetes clusters",
		Long: `nebula — the NebulaCtrl control plane, its in-cluster agent, and a client of its API.

The control plane's configuration comes from the environment and a .env file in the working
directory; see README.md. The agent reads only its own flags and NEBULA_AGENT_* variables.
The client commands (login, status, deploy, …) talk to a control plane over its GraphQL API
with a token kept by nebula login, or NEBULA_URL and NEBULA_TOKEN; see docs/cli.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(stderr)
			_ = cmd.Usage()
			return errors.New("no command given")
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// controlPlane wraps a control-plane command: its configuration is
	// read (the environment, .env) only when it runs, never for --help.
	controlPlane := func(run func(ctx context.Context, cfg config.Config, log *slog.Logger, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if err := config.LoadDotEnv(".env"); err != nil {
				return err
			}
			cfg, err := config.FromEnv(os.LookupEnv)
			if err != nil {
				return err
			}
			cfg.Version = Version
			return run(cmd.Context(), cfg, newLogger(cfg, stderr), args)
		}
	}
	root.AddCommand(&cobra.Command{
		Use:   "serve",
		Short: "Serve the GraphQL API and the agents' endpoint",
		Long: `Serve the GraphQL API (/graphql, GraphiQL at /graphiql, the console at /), the agents' websocket (/agent/v1/connect)
and the webhooks, on NEBULA_ADDR. The store is the embedded SQLite file in NEBULA_DATA_DIR
unless NEBULA_DATABASE_URL names a PostgreSQL database. On an empty store the first start
creates the first tenant and prints its admin token, once.`,
		Args: cobra.NoArgs,
		RunE: controlPlane(func(ctx context.Context, cfg config.Config, log *slog.Logger, _ []string) error {
			return serve(ctx, cfg, log, stdout)
		}),
	})
	root.AddCommand(&cobra.Command{
		Use:   "dev",
		Short: "Serve on the embedded store with a simulated cluster, its agent and a demo project",
		Long: `Serve on the embedded store (./nebula-dev unless NEBULA_DATA_DIR is set) with a simulated
cluster, its agent and a demo project in this process: deploy and watch the stages live in
GraphiQL. It prints the token, a deploy mutation and the subscription to paste.`,
		Args: cobra.NoArgs,
		RunE: controlPlane(func(ctx context.Context, cfg config.Config, log *slog.Logger, _ []string) error {
			if _, set := os.LookupEnv("NEBULA_DATA_DIR"); !set {
				cfg.DataDir = "nebula-dev"
			}
			return dev(ctx, cfg, log, stdout)
		}),
	})
	root.AddCommand(&cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations and exit",
		Args:  cobra.NoArgs,
		RunE: controlPlane(func(ctx context.Context, cfg config.Config, _ *slog.Logger, _ []string) error {
			return migrate(ctx, cfg, stdout)
		}),
	})
	root.AddCommand(adminCommand(stdout, controlPlane))
	root.AddCommand(agentCommand(stderr))
	for _, c := range root.Commands() {
		if c.Name() != "version" {
			c.GroupID = "plane"
		}
	}
	root.AddGroup(&cobra.Group{ID: "plane", Title: "The control plane and the agent:"},
		&cobra.Group{ID: "client", Title: "Client commands (a control plane's API, docs/cli.md):"})
	var clients []*cobra.Command
	clients = append(clients, loginCommands(stdin, stdout, stderr)...)
	clients = append(clients, statusCommand(stdout, stderr), deployCommand(stdin, stdout, stderr))
	clients = append(clients, decisionCommands(stdout, stderr)...)
	clients = append(clients, changesetCommand(stdout, stderr))
	clients = append(clients, logsCommand(stdout, stderr), auditCommand(stdout, stderr))
	for _, c := range clients {
		c.GroupID = "client"
		root.AddCommand(c)
	}
	// Shell completion (nebula completion bash|zsh|fish|powershell),
	// made now so that it is in the tree --help walks.
	root.InitDefaultCompletionCmd()
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(stdout, Version)
			return nil
		},
	})
	return root
}

// migrate applies the store's migrations.
func migrate(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintf(stdout, "%s store is up to date\n", st.Kind())
	}
	for _, m := range applied {
		fmt.Fprintf(stdout, "applied %s\n", m)
	}
	// Releases made before releases froze their configuration get the
	// configuration in force (nothing running changes).
	p, err := control.New(st, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	rep, err := p.Delivery.FreezeReleases(ctx)
	if err != nil {
		return fmt.Errorf("freezing the configuration of earlier releases: %w", err)
	}
	if rep.Releases > 0 || rep.Versions > 0 {
		fmt.Fprintf(stdout, "froze the configuration in force into %d earlier releases (%d secret versions kept)\n", rep.Releases, rep.Versions)
	}
	return nil
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openStore opens PostgreSQL when a URL is configured, the embedded SQLite
// file otherwise.
func openStore(ctx context.Context, cfg config.Config) (*store.Store, error) {
	if cfg.DatabaseURL != "" {
		db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{})
		if err != nil {
			return nil, err
		}
		return store.New(db), nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	db, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "nebula.db"))
	if err != nil {
		return nil, err
	}
	return store.New(db), nil
}

// keyBox builds the master key ring. A malformed key stops the start; a
// missing or wrong one does not: secrets then read as unreadable.
func keyBox(cfg config.Config, log *slog.Logger) (*seal.Box, error) {
	var primary *seal.Key
	if cfg.MasterKey != "" {
		k, err := seal.ParseKey(cfg.MasterKey)
		if err != nil {
			return nil, fmt.Errorf("NEBULA_MASTER_KEY: %w", err)
		}
		primary = &k
	}
	var older []seal.Key
	for i, s := range cfg.OldMasterKeys {
		k, err := seal.ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("NEBULA_MASTER_KEYS_OLD entry %d: %w", i+1, err)
		}
		older = append(older, k)
	}
	if primary == nil {
		log.Warn("no master key: secrets cannot be set and stored ones are unreadable; run `nebula admin gen-master-key`")
	}
	return seal.NewBox(primary, older...), nil
}

func openPlane(ctx context.Context, cfg config.Config, log *slog.Logger) (*control.Plane, *store.Store, error) {
	box, err := keyBox(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, nil, err
	}
	opts := []core.Option{core.WithBox(box), core.WithConnectGrace(cfg.ConnectTokenGrace),
		core.WithDisconnectedAfter(cfg.AgentDisconnectedAfter), core.WithApprovals(cfg.ApprovalTTL, cfg.AllowSelfApproval),
		core.WithStallAfter(cfg.StallAfter), core.WithMaxTokensPerUser(cfg.MaxTokensPerUser),
		core.WithBuildSettings(cfg.Builds), core.WithLogRetention(cfg.LogRetention),
		core.WithSessionTTL(cfg.SessionTTL), core.WithInvitationTTL(cfg.InvitationTTL),
		core.WithOutbound(outbound.SettingsFrom(cfg.Webhooks, Version))}
	if cfg.OIDC.Enabled() {
		opts = append(opts, core.WithOIDC(people.OIDCSettingsFrom(cfg.OIDC)))
	}
	if cfg.DatabaseURL != "" {
		// Several replicas share PostgreSQL: changes are told to all of
		// them with NOTIFY, and each LISTENs (started by serve).
		// This replica's own notes reach its subscribers at commit.
		b := bus.New()
		opts = append(opts, core.WithBus(b, bus.Postgres{Q: st.Q(), B: b, OnError: func(err error) {
			log.Warn("sending a notification", "error", err)
		}}))
	}
	p, err := control.New(st, log, opts...)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	if rep, err := p.Delivery.FreezeReleases(ctx); err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("freezing the configuration of earlier releases: %w", err)
	} else if rep.Releases > 0 || rep.Versions > 0 {
		log.Info("froze the configuration in force into earlier releases", "releases", rep.Releases, "secretVersions", rep.Versions)
	}
	return p, st, nil
}

// listen starts the PostgreSQL notification listener of a serving
// replica, owned by parts until ctx ends, and waits until it listens.
func listen(ctx context.Context, cfg config.Config, p *control.Plane, log *slog.Logger, parts *sync.WaitGroup) error {
	if cfg.DatabaseURL == "" {
		return nil
	}
	ready := make(chan struct{})
	parts.Go(func() { bus.Listen(ctx, cfg.DatabaseURL, p.Bus(), log, ready) })
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return errors.New("the PostgreSQL notification listener did not start within 30 s")
	}
}

func serve(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	return serveWith(ctx, cfg, log, stdout, nil)
}

// serveWith serves; ready, when given, runs once the server listens, with
// its base URL and what a first start made (nil otherwise).
func serveWith(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer,
	ready func(ctx context.Context, base string, boot *people.Bootstrapped) error) error {
	if cfg.MasterKey == "" {
		// Zero-config: a first start with no key and no data makes one, so
		// secrets work from the first minute. With data already stored, a
		// missing key is the operator's to restore, never to replace.
		empty, err := storeIsEmpty(ctx, cfg)
		if err != nil {
			return err
		}
		if empty {
			k, err := writeMasterKey(false)
			if err != nil {
				return err
			}
			cfg.MasterKey = k
			fmt.Fprintf(stdout, "Wrote a new master key to .env (it seals secrets; back it up: without it they cannot be opened).\n")
		}
	}
	// One owner for the process's parts. They start in order — store,
	// notification listener, jobs, server — and stop in reverse: the
	// server drains first (srv.Run returns once it has), then the jobs and
	// the listener, then the store closes.
	plane, st, err := openPlane(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var parts sync.WaitGroup
	defer func() {
		stopBackground()
		parts.Wait()
		log.Info("stopped: jobs and the notification listener; closing the store")
	}()
	if err := listen(bg, cfg, plane, log, &parts); err != nil {
		return err
	}
	parts.Go(func() { plane.RunJobs(bg, cfg.JobInterval) })
	parts.Go(func() { plane.Outbound.RunOutbound(bg) })
	boot, err := plane.People.Bootstrap(ctx, cfg.BootstrapTenant, cfg.BootstrapEmail)
	if err != nil && !errors.Is(err, people.ErrBootstrapped) {
		return err
	}
	if cfg.PprofAddr != "" {
		_, stop, err := servePprof(cfg.PprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	base := "http://" + ln.Addr().String()
	if cfg.TLSCertFile != "" {
		certs, err := server.NewCertReloader(cfg.TLSCertFile, cfg.TLSKeyFile, log)
		if err != nil {
			ln.Close()
			return err
		}
		ln = server.TLSListener(ln, certs)
		base = "https://" + ln.Addr().String()
	}
	if cfg.AgentCABundleFile != "" {
		pem, err := os.ReadFile(cfg.AgentCABundleFile)
		if err == nil && !x509.NewCertPool().AppendCertsFromPEM(pem) {
			err = errors.New("it holds no PEM certificate")
		}
		if err != nil {
			ln.Close()
			return fmt.Errorf("NEBULA_AGENT_CA_BUNDLE_FILE %s: %w", cfg.AgentCABundleFile, err)
		}
		cfg.AgentCABundle = string(pem)
	}
	if cfg.TrustedDocumentsFile != "" {
		b, err := os.ReadFile(cfg.TrustedDocumentsFile)
		if err == nil {
			cfg.TrustedDocuments, err = server.ParseTrustedDocuments(b)
		}
		if err != nil {
			ln.Close()
			return fmt.Errorf("NEBULA_TRUSTED_DOCUMENTS %s: %w", cfg.TrustedDocumentsFile, err)
		}
	}
	where := "embedded store " + filepath.Join(cfg.DataDir, "nebula.db")
	if cfg.DatabaseURL != "" {
		where = "PostgreSQL"
	}
	fmt.Fprintf(stdout, "NebulaCtrl %s is serving GraphQL at %s/graphql (GraphiQL: %s/graphiql, console: %s/) on the %s\n", Version, base, base, base, where)
	if boot != nil {
		printToken(stdout, "First start: created tenant "+boot.Tenant.Name+" with admin "+boot.User.Email+".", boot, base)
	} else {
		fmt.Fprintf(stdout, "Authenticate with the admin token printed at first start (lost it? run `nebula admin bootstrap --recover`).\n")
	}
	log.Info("serving", "addr", ln.Addr().String(), "store", st.Kind())
	srv := server.New(plane, cfg, log)
	if ready != nil {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- srv.Run(ctx, ln) }()
		if err := ready(ctx, base, boot); err != nil {
			cancel()
			<-errc
			return err
		}
		return <-errc
	}
	return srv.Run(ctx, ln)
}

// printToken shows what a first start or a recovery made, once: the
// admin's API token and the link through which they set a passphrase for
// the console.
func printToken(w io.Writer, headline string, b *people.Bootstrapped, base string) {
	fmt.Fprintf(w, `%s
Admin API token (shown once, store it now):

    %s

Try it:
    curl -s %s/graphql -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
      -d '{"query":"{ viewer { user { email } tenants { nodes { id name } } } }"}'

`, headline, b.Secret, base, b.Secret)
	printConsoleLink(w, base, b.User.Email, b.Invitation, b.InvitationExpires)
}

// printConsoleLink shows an invitation link for the console: the person
// opens it once and sets a passphrase, then signs in at /signin.
func printConsoleLink(w io.Writer, base, email, secret string, expires time.Time) {
	fmt.Fprintf(w, `Console: open this link once to set a passphrase for %s (it works until %s;
afterwards sign in at %s/signin):

    %s/invitation#%s
`, email, expires.Local().Format("2 Jan 15:04"), base, base, secret)
}

// storeIsEmpty tells whether the store holds no tenant yet.
func storeIsEmpty(ctx context.Context, cfg config.Config) (bool, error) {
	st, err := openStore(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return false, err
	}
	n, err := store.CountTenants(ctx, st.Q())
	return n == 0, err
}

// writeMasterKey writes a new primary key to .env and returns it; with
// rotate, the current one moves to NEBULA_MASTER_KEYS_OLD.
func writeMasterKey(rotate bool) (string, error) {
	key := seal.GenerateKey()
	set := map[string]string{"NEBULA_MASTER_KEY": key}
	if cur := os.Getenv("NEBULA_MASTER_KEY"); cur != "" {
		if !rotate {
			return "", errors.New("NEBULA_MASTER_KEY is already set; use --rotate to make a new primary and keep the old one for opening")
		}
		old := cur
		if prev := os.Getenv("NEBULA_MASTER_KEYS_OLD"); prev != "" {
			old = cur + "," + prev
		}
		set["NEBULA_MASTER_KEYS_OLD"] = old
	}
	if err := config.WriteDotEnv(".env", set); err != nil {
		return "", err
	}
	return key, nil
}

// runner is a control-plane command's body (see newRoot).
type runner = func(run func(ctx context.Context, cfg config.Config, log *slog.Logger, args []string) error) func(*cobra.Command, []string) error

// adminCommand is `nebula admin` and its commands.
func adminCommand(stdout io.Writer, controlPlane runner) *cobra.Command {
	adm := &cobra.Command{
		Use:   "admin",
		Short: "Bootstrap the first tenant, manage master keys, reseal secrets",
		Args:  cobra.NoArgs,
	}
	var recoverToken bool
	bootstrap := &cobra.Command{
		Use:   "bootstrap",
		Short: "Create the first tenant and an admin token on an empty store",
		Long: `Create the first tenant (NEBULA_BOOTSTRAP_TENANT) and its admin (NEBULA_BOOTSTRAP_EMAIL) on an
empty store and print the admin token, once. With --recover, mint a new admin token for the
first tenant's admin of an existing store.`,
		Args: cobra.NoArgs,
		RunE: controlPlane(func(ctx context.Context, cfg config.Config, log *slog.Logger, _ []string) error {
			return adminBootstrap(ctx, cfg, log, recoverToken, stdout)
		}),
	}
	bootstrap.Flags().BoolVar(&recoverToken, "recover", false, "mint a new admin token for the first tenant's admin")
	var rotate, print bool
	genKey := &cobra.Command{
		Use:   "gen-master-key",
		Short: "Write a new master key (seals secrets) to .env",
		Long: `Write a new master key, which seals secrets at rest, to .env. With --rotate, the current key is
kept in NEBULA_MASTER_KEYS_OLD for opening; run "nebula admin reseal" after a restart. With
--print, only print a new key (for a Kubernetes Secret, or a secret manager); nothing is written.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if print {
				fmt.Fprintln(stdout, seal.GenerateKey())
				return nil
			}
			// The key in .env, or the environment, is the one rotated.
			if err := config.LoadDotEnv(".env"); err != nil {
				return err
			}
			key, err := writeMasterKey(rotate)
			if err != nil {
				return err
			}
			k, _ := seal.ParseKey(key)
			fmt.Fprintf(stdout, "Wrote master key %s to .env. Restart the control plane, then run `nebula admin reseal`.\n", k.ID())
			return nil
		},
	}
	genKey.Flags().BoolVar(&rotate, "rotate", false, "keep the current key for opening")
	genKey.Flags().BoolVar(&print, "print", false, "print a new key on standard output; write nothing")
	reseal := &cobra.Command{
		Use:   "reseal",
		Short: "Reseal every secret under the primary master key (safe while serving)",
		Args:  cobra.NoArgs,
		RunE: controlPlane(func(ctx context.Context, cfg config.Config, log *slog.Logger, _ []string) error {
			plane, st, err := openPlane(ctx, cfg, log)
			if err != nil {
				return err
			}
			defer st.Close()
			rep, err := plane.Delivery.Reseal(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "resealed %d secrets; %d already under the primary key; %d unreadable with the keys given\n",
				rep.Resealed, rep.Current, rep.Unreadable)
			fmt.Fprintf(stdout, "of the secret versions releases froze: resealed %d; %d already under the primary key; %d unreadable\n",
				rep.Versions.Resealed, rep.Versions.Current, rep.Versions.Unreadable)
			return nil
		}),
	}
	adm.AddCommand(bootstrap, genKey, reseal)
	return adm
}

// adminBootstrap creates the first tenant, or with recover mints a new
// admin token.
func adminBootstrap(ctx context.Context, cfg config.Config, log *slog.Logger, recover bool, stdout io.Writer) error {
	plane, st, err := openPlane(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	base := "http://" + strings.TrimPrefix(cfg.Addr, "http://")
	if recover {
		b, err := plane.People.RecoverAdminToken(ctx)
		if err != nil {
			return err
		}
		printToken(stdout, "Recovered admin access to tenant "+b.Tenant.Name+" for "+b.User.Email+".", b, base)
		return nil
	}
	b, err := plane.People.Bootstrap(ctx, cfg.BootstrapTenant, cfg.BootstrapEmail)
	if err != nil {
		return err
	}
	printToken(stdout, "Created tenant "+b.Tenant.Name+" with admin "+b.User.Email+".", b, base)
	return nil
}
