// Package controltest builds a control plane for the tests of the control
// layer's packages: the embedded store in a temporary directory, counted
// statement by statement, with one bootstrapped tenant whose admin acts
// with an API token, a project, a service with an image, a cluster and an
// environment placed on it. No API, no network.
package controltest

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/delivery"
	"github.com/nebulactrl/nebula/internal/seal"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/people"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

// Shop is a plane with one tenant and what it deploys.
type Shop struct {
	P  *control.Plane
	St *store.Store
	// Statements counts what reaches the database.
	Statements *Counting
	Boot       *people.Bootstrapped
	// Admin acts as the tenant's bootstrap admin.
	Admin   context.Context
	Project *model.Project
	Svc     *model.Service
	Env     *model.Environment
	Cluster *model.Cluster
}

// New is a Shop on a fresh embedded store; opts configure the plane.
func New(t testing.TB, opts ...core.Option) *Shop {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "shop.db"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Shop{Statements: &Counting{Driver: db}}
	s.St = store.New(s.Statements)
	t.Cleanup(s.St.Close)
	if _, err := s.St.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if s.P, err = control.New(s.St, slog.New(slog.NewTextHandler(io.Discard, nil)), opts...); err != nil {
		t.Fatal(err)
	}
	if s.Boot, err = s.P.People.Bootstrap(ctx, "acme", "admin@acme.test"); err != nil {
		t.Fatal(err)
	}
	s.Admin = s.As(t, s.Boot.Secret)
	if s.Project, err = s.P.Delivery.CreateProject(s.Admin, s.Boot.Tenant.ID, "shop", ""); err != nil {
		t.Fatal(err)
	}
	image, name := "registry.example.com/shop/api", "prod"
	if s.Svc, err = s.P.Delivery.CreateService(s.Admin, s.Project.ID, delivery.ServiceInput{Name: "api", Image: &image,
		Processes: []model.Process{{Name: "web", Command: []string{"/api"}, Replicas: 1}}}); err != nil {
		t.Fatal(err)
	}
	if s.Cluster, _, err = s.P.Clusters.RegisterCluster(s.Admin, s.Boot.Tenant.ID, "eu-1", nil); err != nil {
		t.Fatal(err)
	}
	if s.Env, err = s.P.Delivery.CreateEnvironment(s.Admin, s.Project.ID, delivery.EnvironmentInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	return s
}

// Sealed is New with a master key: secrets (variables, credentials, hook
// and endpoint secrets) can be sealed and opened.
func Sealed(t testing.TB, opts ...core.Option) *Shop {
	t.Helper()
	key, err := seal.ParseKey(seal.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return New(t, append([]core.Option{core.WithBox(seal.NewBox(&key))}, opts...)...)
}

// Passphrase is the passphrase of the people Person invites.
const Passphrase = "correct horse battery staple 42"

// Person invites email into the shop's tenant with the tenant role role,
// accepts the invitation with Passphrase, and is a context acting with the
// session it gives; with project set, they also hold that role in the
// shop's project.
func (s *Shop) Person(t testing.TB, email string, role model.TenantRole, project model.ProjectRole) context.Context {
	t.Helper()
	_, _, link, err := s.P.People.InviteMember(s.Admin, people.InviteMemberInput{Tenant: s.Boot.Tenant.ID,
		Email: email, Name: email, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	_, session, err := s.P.People.AcceptInvitation(context.Background(), link, Passphrase, people.Client{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.P.People.AuthenticateSession(context.Background(), session, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if project != "" {
		if _, err := s.P.People.AddProjectMember(s.Admin, s.Project.ID, a.User.LocalID, project); err != nil {
			t.Fatal(err)
		}
	}
	return authz.WithActor(context.Background(), a)
}

// OtherAdmin is a context acting as the admin of another tenant, made now.
func (s *Shop) OtherAdmin(t testing.TB) context.Context {
	t.Helper()
	_, _, secret, err := s.P.People.CreateTenant(s.Admin, "other")
	if err != nil {
		t.Fatal(err)
	}
	return s.As(t, secret)
}

// Clock is a plane's clock that a test moves (core.WithClock(c.Now)).
type Clock struct {
	mu sync.Mutex
	At time.Time
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.At
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.At = c.At.Add(d)
}

// As is a context acting with an API token's secret.
func (s *Shop) As(t testing.TB, secret string) context.Context {
	t.Helper()
	actor, err := s.P.People.Authenticate(context.Background(), secret, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return authz.WithActor(context.Background(), actor)
}

// Deploy deploys the service to the environment with the image digest of n.
func (s *Shop) Deploy(t testing.TB, n int) (*model.Release, *model.Deployment) {
	t.Helper()
	rel, d, err := s.P.Delivery.Deploy(s.Admin, s.Svc.ID, s.Env.ID, Digest(n))
	if err != nil {
		t.Fatal(err)
	}
	return rel, d
}

// Digest is an image digest, a different one for each n.
func Digest(n int) string {
	const hex = "0123456789abcdef"
	b := []byte("sha256:")
	for i := range 64 {
		b = append(b, hex[(n+i)%16])
	}
	return string(b)
}

// Counting is a database driver that counts the statements (in
// transactions too) and the transactions that reach it.
type Counting struct {
	store.Driver
	n, txs atomic.Int64
}

// N is the count of statements and transactions so far.
func (c *Counting) N() int64 { return c.n.Load() }

// Txs is the count of transactions so far.
func (c *Counting) Txs() int64 { return c.txs.Load() }

func (c *Counting) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	c.n.Add(1)
	return c.Driver.Exec(ctx, sql, args...)
}

func (c *Counting) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	c.n.Add(1)
	return c.Driver.Query(ctx, sql, args...)
}

func (c *Counting) Begin(ctx context.Context) (store.Tx, error) {
	return c.counted(c.Driver.Begin(ctx))
}

func (c *Counting) BeginRead(ctx context.Context) (store.Tx, error) {
	return c.counted(c.Driver.BeginRead(ctx))
}

func (c *Counting) counted(tx store.Tx, err error) (store.Tx, error) {
	c.n.Add(1)
	c.txs.Add(1)
	if err != nil {
		return nil, err
	}
	return &countingTx{Tx: tx, c: c}, nil
}

// countingTx counts the statements of a transaction.
type countingTx struct {
	store.Tx
	c *Counting
}

func (t *countingTx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	t.c.n.Add(1)
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *countingTx) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	t.c.n.Add(1)
	return t.Tx.Query(ctx, sql, args...)
}
