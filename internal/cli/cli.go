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

	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/server"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/postgres"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

const usage = `nebula — the NebulaCtrl control plane

Usage:
  nebula serve                      serve the GraphQL API (embedded store unless NEBULA_DATABASE_URL is set)
  nebula migrate                    apply database migrations and exit
  nebula admin bootstrap [--recover] create the first tenant and an admin token on an empty store;
                                    with --recover, mint a new admin token for an existing one
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
	if err := config.LoadDotEnv(".env"); err != nil {
		return err
	}
	cfg, err := config.FromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	switch args[0] {
	case "serve":
		return serve(ctx, cfg, log, stdout)
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
			fmt.Fprintf(stdout, "%s store is up to date\n", st.Dialect().Name)
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

func openPlane(ctx context.Context, cfg config.Config, log *slog.Logger) (*control.Plane, *store.Store, error) {
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, nil, err
	}
	p, err := control.New(st, log)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return p, st, nil
}

func serve(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	plane, st, err := openPlane(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
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
	log.Info("serving", "addr", ln.Addr().String(), "store", st.Dialect().Name)
	return server.New(plane, cfg, log).Run(ctx, ln)
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

func admin(ctx context.Context, cfg config.Config, log *slog.Logger, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "bootstrap" {
		return errors.New("usage: nebula admin bootstrap [--recover]")
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
