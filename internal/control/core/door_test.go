package core

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/sqlite"
)

// TestOneDoor fails when code of this package reaches the store other than
// through the door (door.go): p.store, or a store handle's Q, Tx, ReadTx
// or Ping, anywhere else. The grant cache (grants.go) is the authorizer's
// own loader: it reads the grants every check needs, for the subject
// being checked.
func TestOneDoor(t *testing.T) {
	allowed := map[string]string{
		"door.go":   "the door",
		"grants.go": "the authorizer's loader of a subject's grants",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || allowed[name] != "" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); n.Sel.Name == "store" && !(ok && id.Name == "store") {
					t.Errorf("%s: the store is reached outside the door (door.go): use p.q(ctx), p.tx or p.readTx", fset.Position(n.Pos()))
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && slices.Contains([]string{"Q", "Tx", "ReadTx", "Ping"}, sel.Sel.Name) {
					t.Errorf("%s: %s on a store handle outside the door (door.go)", fset.Position(n.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d files: is the test running in the package's directory?", checked)
	}
}

// systemDoors are the exported methods that act without a caller's
// subject, each as the system subject named: the whole list, so that a
// new one is a decision made here.
var systemDoors = map[string]System{
	"Bootstrap":         SystemOperator,
	"RecoverAdminToken": SystemOperator,
	"Reseal":            SystemOperator,
	"RunJobs":           systemJobs,
	"RunJobsOnce":       systemJobs,
	"RunOutbound":       systemSender,
	"DeliverOutbound":   systemSender,
	"Authenticate":      SystemAuthenticator,
	"AuthenticateAgent": SystemAuthenticator,
	// A person signing in, in or out: trusted once the passphrase, the
	// invitation link or the session secret holds.
	"SignIn":           SystemAuthenticator,
	"SignOut":          SystemAuthenticator,
	"AcceptInvitation": SystemAuthenticator,
	// The CLI's sign-in through the browser: trusted with its own secret.
	"StartCLILogin": SystemAuthenticator,
	"PollCLILogin":  SystemAuthenticator,
	"AgentSideOf":   SystemAgent(""),
	// Whoever knows a hook's URL: trusted once the signature holds.
	"ReceiveWebhook": systemWebhook,
}

// counting is a database driver that counts the statements and
// transactions that reach it.
type counting struct {
	store.Driver
	n atomic.Int64
}

func (c *counting) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	c.n.Add(1)
	return c.Driver.Exec(ctx, sql, args...)
}

func (c *counting) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	c.n.Add(1)
	return c.Driver.Query(ctx, sql, args...)
}

func (c *counting) Begin(ctx context.Context) (store.Tx, error) {
	c.n.Add(1)
	return c.Driver.Begin(ctx)
}

func (c *counting) BeginRead(ctx context.Context) (store.Tx, error) {
	c.n.Add(1)
	return c.Driver.BeginRead(ctx)
}

// TestNoSubjectReachesTheStore calls every exported method of Plane with a
// context that carries no subject and asserts that not one statement
// reaches the database, except through the system doors above. With the
// bootstrap admin's subject, the same calls do reach it: the count is not
// vacuous.
func TestNoSubjectReachesTheStore(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "door.db"))
	if err != nil {
		t.Fatal(err)
	}
	drv := &counting{Driver: db}
	st := store.New(drv)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	boot, err := p.Bootstrap(ctx, "acme", "admin@acme.test")
	if err != nil {
		t.Fatal(err)
	}
	actor, err := p.Authenticate(ctx, boot.Secret, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}

	pv := reflect.ValueOf(p)
	var lastErr error // of the last call, when its last result is an error
	call := func(t *testing.T, ctx context.Context, m reflect.Method) (reached int64) {
		t.Helper()
		fn := pv.Method(m.Index)
		ft := fn.Type()
		args := []reflect.Value{reflect.ValueOf(ctx)}
		if ft.NumIn() == 0 || ft.In(0) != reflect.TypeFor[context.Context]() {
			args = nil
		}
		for i := len(args); i < ft.NumIn(); i++ {
			at := ft.In(i)
			if ft.IsVariadic() && i == ft.NumIn()-1 {
				break
			}
			switch at.Kind() {
			case reflect.Pointer:
				args = append(args, reflect.New(at.Elem())) // an empty object, not nil
			default:
				args = append(args, reflect.Zero(at))
			}
		}
		before := drv.n.Load()
		done := make(chan struct{})
		go func() {
			defer close(done)
			lastErr = errors.New("panicked")
			defer func() { _ = recover() }() // an empty argument may not be usable; what counts is the database
			out := fn.Call(args)
			lastErr = nil
			if n := len(out); n > 0 && ft.Out(n-1) == reflect.TypeFor[error]() && !out[n-1].IsNil() {
				lastErr = out[n-1].Interface().(error)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not return", m.Name)
		}
		return drv.n.Load() - before
	}

	methods := 0
	for i := range pv.NumMethod() {
		m := pv.Type().Method(i)
		if _, ok := systemDoors[m.Name]; ok {
			continue
		}
		methods++
		if n := call(t, ctx, m); n != 0 {
			t.Errorf("%s without a subject reached the database %d times", m.Name, n)
		}
	}
	if methods < 90 {
		t.Fatalf("called %d methods; Plane has more", methods)
	}
	for name := range systemDoors {
		if _, ok := pv.Type().MethodByName(name); !ok {
			t.Errorf("system door %s is no method of Plane: update the list", name)
		}
	}

	// The same calls with a subject reach it.
	withActor := authz.WithActor(ctx, actor)
	reachedWith := 0
	for _, name := range []string{"Tenants", "Tenant", "Clusters", "AuditEvents", "MyAPITokens"} {
		m, _ := pv.Type().MethodByName(name)
		if call(t, withActor, m) > 0 {
			reachedWith++
		}
	}
	if reachedWith == 0 {
		t.Fatal("with the admin's subject no call reached the database: the count sees nothing")
	}
	// A system subject holds no role: no method of the API side both
	// reaches the database for it and succeeds. (A read by id reaches it
	// before the check of the row's scope refuses; a method given nothing
	// to read succeeds without a statement.)
	asJobs := As(ctx, systemJobs)
	for i := range pv.NumMethod() {
		m := pv.Type().Method(i)
		if _, ok := systemDoors[m.Name]; ok {
			continue
		}
		if n := call(t, asJobs, m); n > 0 && lastErr == nil {
			t.Errorf("%s reached the database %d times and succeeded for the jobs' system subject", m.Name, n)
		}
	}

	// And a system subject does reach the store through its own door.
	before := drv.n.Load()
	if _, err := p.RunJobsOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if drv.n.Load() == before {
		t.Fatal("the jobs' system subject reached nothing")
	}
}
