// Package pgtest gives tests a real, throwaway PostgreSQL database.
//
// A test binary that uses it calls Main from its TestMain. The first test
// that asks for a database either uses the server named by
// NEBULA_TEST_DATABASE_URL or starts a private one (initdb into a temporary
// directory, as the postgres OS user when running as root); every test gets
// its own fresh database, dropped when the test ends. Main stops a private
// server and removes its directory when the tests are done.
//
// It is for tests only and must never be imported by production code.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

// Environment variables read by the package.
const (
	// EnvURL names an existing server to create test databases on; its user
	// must be allowed to CREATE DATABASE.
	EnvURL = "NEBULA_TEST_DATABASE_URL"
	// EnvBin overrides the directory holding initdb and postgres.
	EnvBin = "NEBULA_PG_BIN"
	// EnvRequire=1 turns "PostgreSQL unavailable" from a skip into a failure
	// (set in CI, so that the PostgreSQL tests can never silently vanish).
	EnvRequire = "NEBULA_REQUIRE_POSTGRES"
)

const (
	defaultBin = "/usr/lib/postgresql/15/bin"
	// startTimeout bounds initdb plus the wait for the first connection.
	startTimeout = 60 * time.Second
	// opTimeout bounds one CREATE or DROP DATABASE.
	opTimeout = 30 * time.Second
	// launchAttempts retries a start that lost its port to another process
	// between picking and binding it.
	launchAttempts = 3
)

var (
	mainCalled atomic.Bool

	setupOnce sync.Once
	adminURL  string  // a URL of the maintenance database, where databases are created
	local     *server // the server this binary started; nil when using EnvURL
	setupErr  error   // why PostgreSQL cannot be had
)

// Main runs the tests, then stops the server this binary started (if any),
// removes its directory and exits with the tests' code. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	mainCalled.Store(true)
	code := m.Run()
	// m.Run has returned, so no test is still inside setupOnce.
	if local != nil {
		if err := local.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stopping PostgreSQL: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// URL creates a fresh, empty database for the test and returns its URL. The
// database is dropped when the test ends. If PostgreSQL cannot be had the
// test is skipped, or fails when NEBULA_REQUIRE_POSTGRES=1.
func URL(t testing.TB) string {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatal("pgtest: the package's TestMain must call pgtest.Main(m), which stops the server it starts")
	}
	setupOnce.Do(setup)
	if setupErr != nil {
		msg := fmt.Sprintf("PostgreSQL unavailable: %v; set %s or install PostgreSQL 15", setupErr, EnvURL)
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s (%s=1)", msg, EnvRequire)
		}
		t.Skip(msg)
	}

	name := "t_" + randomHex(8)
	if err := adminExec(fmt.Sprintf("CREATE DATABASE %s", name)); err != nil {
		t.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		// FORCE ends connections a test left open, so one leak does not
		// turn into a confusing failure here.
		if err := adminExec(fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	u, err := withDatabase(adminURL, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// Open returns a migrated store on a fresh database, closed when the test ends.
func Open(t testing.TB) *store.Store {
	t.Helper()
	return OpenWith(t, postgres.Options{})
}

// OpenWith is Open with pool options (a query tracer, a connection cap).
func OpenWith(t testing.TB, opts postgres.Options) *store.Store {
	t.Helper()
	u := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	db, err := postgres.Open(ctx, u, opts)
	if err != nil {
		t.Fatalf("pgtest: opening the test database: %v", err)
	}
	s := store.New(db)
	// Registered after URL's cleanup, so it runs first: the pool closes
	// before the database is dropped.
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("pgtest: migrating the test database: %v", err)
	}
	return s
}

// setup finds or starts the server, once per test binary.
func setup() {
	if u := os.Getenv(EnvURL); u != "" {
		adminURL = u
		if err := adminExec("SELECT 1"); err != nil {
			setupErr = fmt.Errorf("connecting to %s: %w", EnvURL, err)
		}
		return
	}
	local, setupErr = start(false)
	if setupErr == nil {
		adminURL = local.url
	}
}

// adminExec runs one statement on the maintenance database. CREATE and DROP
// DATABASE cannot run in a transaction, so each gets its own connection
// (no pool to share between tests running in parallel).
func adminExec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// withDatabase returns base (a URL or a key=value DSN) pointing at database db.
func withDatabase(base, db string) (string, error) {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			// The error can echo a password: keep it out of test logs.
			return "", fmt.Errorf("parsing %s as a URL failed", EnvURL)
		}
		u.Path, u.RawPath = "/"+db, ""
		return u.String(), nil
	}
	// In a key=value DSN a later key wins.
	return base + " dbname=" + db, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// owner is the OS user the server runs as; nil means the current user.
type owner struct{ uid, gid int }

// server is a PostgreSQL this test binary started.
type server struct {
	dir   string // everything lives here: data, socket, log
	url   string
	port  int
	pgbin string
	own   *owner
	// durable servers acknowledge a commit once its WAL is written, so
	// that an immediate shutdown (a crash of PostgreSQL, not of the
	// machine) loses no acknowledged commit; the shared server does not
	// bother.
	durable bool
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error         // cmd's exit, valid once exited is closed
}

func (s *server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *server) logPath() string { return filepath.Join(s.dir, "postgres.log") }

// start initialises a cluster in a new temporary directory and starts a
// postgres on a free loopback port.
func start(durable bool) (_ *server, err error) {
	bin := os.Getenv(EnvBin)
	if bin == "" {
		bin = defaultBin
	}
	initdb, pgbin := filepath.Join(bin, "initdb"), filepath.Join(bin, "postgres")
	for _, p := range []string{initdb, pgbin} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("finding %s (set %s to its directory): %w", filepath.Base(p), EnvBin, err)
		}
	}

	var own *owner
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		if own, err = postgresUser(); err != nil {
			return nil, err
		}
	}

	dir, err := os.MkdirTemp("", "nebula-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("creating the server directory: %w", err)
	}
	s := &server{dir: dir, durable: durable}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	if own != nil {
		if err := os.Chown(dir, own.uid, own.gid); err != nil {
			return nil, fmt.Errorf("handing %s to the postgres user: %w", dir, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, initdb, "-D", s.dataDir(), "-A", "trust", "-U", "postgres",
		"--no-sync", "-E", "UTF8", "--locale=C")
	// The C locale sorts text bytewise, like SQLite, and exists everywhere.
	cmd.Dir = dir
	cmd.SysProcAttr = procAttr(own)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("running initdb: %v: %s", err, strings.TrimSpace(string(out)))
	}

	s.pgbin, s.own = pgbin, own
	for attempt := 1; ; attempt++ {
		err = s.launch(ctx, 0)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errExited) || attempt == launchAttempts {
			return nil, err
		}
	}
}

var errExited = errors.New("postgres exited before accepting connections")

// launch starts postgres on a free port and waits until it accepts a
// connection. A postgres that exits first (say, another process took the
// port) is reported as errExited so that start can try another port.
func (s *server) launch(ctx context.Context, port int) error {
	pgbin, own := s.pgbin, s.own
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return err
		}
	}
	s.port = port
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening the server log: %w", err)
	}
	defer logf.Close() // the child has its own descriptor

	// Durability is worthless for a database thrown away after the tests
	// (fsync matters only when the machine, not PostgreSQL, stops).
	cmd := exec.Command(pgbin, "-D", s.dataDir(), "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+s.dir,
		"-c", "fsync=off",
		"-c", "synchronous_commit="+map[bool]string{true: "on", false: "off"}[s.durable],
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
	)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Also makes the kernel stop postgres if this binary dies without
	// reaching Main's cleanup (a panic, a test timeout).
	cmd.SysProcAttr = procAttr(own)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	s.cmd, s.exited, s.waitErr = cmd, make(chan struct{}), nil
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	s.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		return err
	}
	return nil
}

// waitReady polls with a real connection until one succeeds, postgres
// exits, or ctx ends.
func (s *server) waitReady(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, s.url)
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			return nil
		}
		last = err
		select {
		case <-s.exited:
			return fmt.Errorf("%w (%v); log:\n%s", errExited, s.waitErr, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections within %s: %v; log:\n%s",
				startTimeout, last, s.logTail())
		case <-tick.C:
		}
	}
}

// Server is a PostgreSQL of one test's own, which the test may stop and
// start again on the same address: fault tests of what clients see when
// the database goes away.
type Server struct {
	t testing.TB
	s *server
	// URL is the URL of its database nebula.
	URL string
}

// Private starts a server for the test alone, stopped and removed when the
// test ends. Without PostgreSQL the test is skipped, or fails when
// NEBULA_REQUIRE_POSTGRES=1.
func Private(t testing.TB) *Server {
	t.Helper()
	s, err := start(true)
	if err != nil {
		msg := fmt.Sprintf("PostgreSQL unavailable: %v", err)
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s (%s=1)", msg, EnvRequire)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("pgtest: stopping the private server: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatalf("pgtest: connecting to the private server: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE nebula"); err != nil {
		t.Fatalf("pgtest: creating the database: %v", err)
	}
	u, err := withDatabase(s.url, "nebula")
	if err != nil {
		t.Fatal(err)
	}
	return &Server{t: t, s: s, URL: u}
}

// Stop shuts the server down at once, like pg_ctl stop -m immediate:
// every connection is cut, no checkpoint; it recovers when started.
func (p *Server) Stop() {
	p.t.Helper()
	p.s.kill()
}

// Start starts the stopped server again on the same port.
func (p *Server) Start() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var err error
	for attempt := 0; attempt < launchAttempts; attempt++ {
		// The port was just freed; another process could take it, but
		// then the test cannot go on anyway.
		if err = p.s.launch(ctx, p.s.port); err == nil {
			return
		}
	}
	p.t.Fatalf("pgtest: restarting the private server: %v", err)
}

// Restart is Stop then Start: pg_ctl restart -m immediate.
func (p *Server) Restart() {
	p.t.Helper()
	p.Stop()
	p.Start()
}

// stop shuts the server down without a checkpoint (the data is about to be
// deleted) and removes its directory.
func (s *server) stop() error {
	s.kill()
	return os.RemoveAll(s.dir)
}

// kill asks for an immediate shutdown (SIGQUIT: the postmaster stops its
// children and exits), falling back to SIGKILL.
func (s *server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case <-s.exited:
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// logTail returns the end of the server log, for error messages.
func (s *server) logTail() string {
	f, err := os.Open(s.logPath())
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	const max = 4 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		_, _ = f.Seek(-max, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// postgresUser looks up the OS user the server runs as when the tests run
// as root.
func postgresUser() (*owner, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs the postgres OS user: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("postgres user id %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("postgres group id %q: %w", u.Gid, err)
	}
	return &owner{uid: uid, gid: gid}, nil
}
