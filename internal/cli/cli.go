// Package cli is the `nebula` command: it parses arguments, reads the
// configuration and wires the pieces for each subcommand. Subcommands
// print for people on stdout and log on stderr; the only secrets they ever
// print are tokens created by that very command, once.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/postgres"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

const usage = `nebula — the NebulaCtrl control plane

Usage:
  nebula serve                      serve the GraphQL API (embedded store unless NEBULA_DATABASE_URL is set)
  nebula dev                        serve on the embedded store (./nebula-dev) with a simulated cluster, its agent and
                                    a demo project in this process: deploy and watch the stages live in GraphiQL
  nebula migrate                    apply database migrations and exit
  nebula admin bootstrap [--recover] create the first tenant and an admin token on an empty store;
                                    with --recover, mint a new admin token for an existing one
  nebula admin gen-master-key [--rotate]
                                    write a new master key (seals secrets) to .env; with --rotate,
                                    keep the current one in NEBULA_MASTER_KEYS_OLD for opening
  nebula admin reseal               reseal every secret under the primary master key (safe while serving)
  nebula agent [flags]              run the in-cluster agent (see docs/agent-protocol.md; --help for flags)
  nebula version                    print the version

Configuration comes from the environment and a .env file in the working directory;
see README.md.
`

// Version is set at build time.
var Version = "dev"

// Run executes the command line args (without the program name).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	if args[0] == "agent" {
		// The agent runs in a customer's cluster: none of the control
		// plane's settings (or its .env) apply to it.
		return runAgent(ctx, args[1:], stderr)
	}
	if err := config.LoadDotEnv(".env"); err != nil {
		return err
	}
	cfg, err := config.FromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	cfg.Version = Version
	log := newLogger(cfg, stderr)
	switch args[0] {
	case "serve":
		return serve(ctx, cfg, log, stdout)
	case "dev":
		if _, set := os.LookupEnv("NEBULA_DATA_DIR"); !set {
			cfg.DataDir = "nebula-dev"
		}
		return dev(ctx, cfg, log, stdout)
	case "migrate":
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
		return nil
	case "admin":
		return admin(ctx, cfg, log, args[1:], stdout)
	case "version":
		fmt.Fprintln(stdout, Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
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
	opts := []control.Option{control.WithBox(box), control.WithConnectGrace(cfg.ConnectTokenGrace),
		control.WithDisconnectedAfter(cfg.AgentDisconnectedAfter), control.WithApprovals(cfg.ApprovalTTL, cfg.AllowSelfApproval),
		control.WithStallAfter(cfg.StallAfter), control.WithMaxTokensPerUser(cfg.MaxTokensPerUser),
		control.WithBuildSettings(control.BuildSettings(cfg.Builds)), control.WithLogRetention(cfg.LogRetention)}
	if cfg.DatabaseURL != "" {
		// Several replicas share PostgreSQL: changes are told to all of
		// them with NOTIFY, and each LISTENs (started by serve).
		opts = append(opts, control.WithBus(bus.New(), bus.Postgres{Q: st.Q(), OnError: func(err error) {
			log.Warn("sending a notification", "error", err)
		}}))
	}
	p, err := control.New(st, log, opts...)
	if err != nil {
		st.Close()
		return nil, nil, err
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
// its base URL and the admin token of a first start ("" otherwise).
func serveWith(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer,
	ready func(ctx context.Context, base, bootSecret string) error) error {
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
	boot, err := plane.Bootstrap(ctx, cfg.BootstrapTenant, cfg.BootstrapEmail)
	if err != nil && !errors.Is(err, control.ErrBootstrapped) {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	base := "http://" + ln.Addr().String()
	where := "embedded store " + filepath.Join(cfg.DataDir, "nebula.db")
	if cfg.DatabaseURL != "" {
		where = "PostgreSQL"
	}
	fmt.Fprintf(stdout, "NebulaCtrl %s is serving GraphQL at %s/graphql (GraphiQL: %s/) on the %s\n", Version, base, base, where)
	if boot != nil {
		printToken(stdout, "First start: created tenant "+boot.Tenant.Name+" with admin "+boot.User.Email+".", boot.Secret, base)
	} else {
		fmt.Fprintf(stdout, "Authenticate with the admin token printed at first start (lost it? run `nebula admin bootstrap --recover`).\n")
	}
	log.Info("serving", "addr", ln.Addr().String(), "store", st.Kind())
	srv := server.New(plane, cfg, log)
	if ready != nil {
		secret := ""
		if boot != nil {
			secret = boot.Secret
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- srv.Run(ctx, ln) }()
		if err := ready(ctx, base, secret); err != nil {
			cancel()
			<-errc
			return err
		}
		return <-errc
	}
	return srv.Run(ctx, ln)
}

func printToken(w io.Writer, headline, secret, base string) {
	fmt.Fprintf(w, `%s
Admin API token (shown once, store it now):

    %s

Try it:
    curl -s %s/graphql -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
      -d '{"query":"{ viewer { user { email } tenants { nodes { id name } } } }"}'
`, headline, secret, base, secret)
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

func admin(ctx context.Context, cfg config.Config, log *slog.Logger, args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "gen-master-key" {
		fs := flag.NewFlagSet("gen-master-key", flag.ContinueOnError)
		rotate := fs.Bool("rotate", false, "keep the current key for opening")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		key, err := writeMasterKey(*rotate)
		if err != nil {
			return err
		}
		k, _ := seal.ParseKey(key)
		fmt.Fprintf(stdout, "Wrote master key %s to .env. Restart the control plane, then run `nebula admin reseal`.\n", k.ID())
		return nil
	}
	if len(args) > 0 && args[0] == "reseal" {
		plane, st, err := openPlane(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer st.Close()
		rep, err := plane.Reseal(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "resealed %d secrets; %d already under the primary key; %d unreadable with the keys given\n",
			rep.Resealed, rep.Current, rep.Unreadable)
		return nil
	}
	if len(args) == 0 || args[0] != "bootstrap" {
		return errors.New("usage: nebula admin bootstrap [--recover] | gen-master-key [--rotate] | reseal")
	}
	fs := flag.NewFlagSet("bootstrap", flag.ContinueOnError)
	recover := fs.Bool("recover", false, "mint a new admin token for the first tenant's admin")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	plane, st, err := openPlane(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	base := "http://" + strings.TrimPrefix(cfg.Addr, "http://")
	if *recover {
		b, err := plane.RecoverAdminToken(ctx)
		if err != nil {
			return err
		}
		printToken(stdout, "Recovered admin access to tenant "+b.Tenant.Name+" for "+b.User.Email+".", b.Secret, base)
		return nil
	}
	b, err := plane.Bootstrap(ctx, cfg.BootstrapTenant, cfg.BootstrapEmail)
	if err != nil {
		return err
	}
	printToken(stdout, "Created tenant "+b.Tenant.Name+" with admin "+b.User.Email+".", b.Secret, base)
	return nil
}
