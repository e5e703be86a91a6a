package control_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
)

// systemDoors are the exported methods that act without a caller's
// subject, each as the system subject named: the whole list, so that a
// new one is a decision made here.
var systemDoors = map[string]core.System{
	"Bootstrap":         core.SystemOperator,
	"RecoverAdminToken": core.SystemOperator,
	"Reseal":            core.SystemOperator,
	// The upgrade freezing earlier releases from the rows in force.
	"FreezeReleases":    core.SystemOperator,
	"RunJobs":           core.SystemJobs,
	"RunJobsOnce":       core.SystemJobs,
	"RunOutbound":       core.SystemSender,
	"DeliverOutbound":   core.SystemSender,
	"Authenticate":      core.SystemAuthenticator,
	"AuthenticateAgent": core.SystemAuthenticator,
	// A person signing in, in or out: trusted once the passphrase, the
	// invitation link or the session secret holds.
	"SignIn":           core.SystemAuthenticator,
	"SignOut":          core.SystemAuthenticator,
	"AcceptInvitation": core.SystemAuthenticator,
	// The CLI's sign-in through the browser: trusted with its own secret.
	"StartCLILogin": core.SystemAuthenticator,
	"PollCLILogin":  core.SystemAuthenticator,
	"AgentSideOf":   core.SystemAgent(""),
	// Whoever knows a hook's URL: trusted once the signature holds.
	"ReceiveWebhook": core.SystemWebhook,
}

// TestNoSubjectReachesTheStore calls every exported method of the core's
// Plane and of each domain with a
// context that carries no subject and asserts that not one statement
// reaches the database, except through the system doors above. With the
// bootstrap admin's subject, the same calls do reach it: the count is not
// vacuous.
func TestNoSubjectReachesTheStore(t *testing.T) {
	ctx := context.Background()
	s := controltest.New(t)
	p, drv := s.P, s.Statements
	actor, err := authz.ActorFrom(s.Admin)
	if err != nil {
		t.Fatal(err)
	}

	api := apiMethods(p)
	var lastErr error // of the last call, when its last result is an error
	call := func(t *testing.T, ctx context.Context, m apiMethod) (reached int64) {
		t.Helper()
		fn := m.fn
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
		before := drv.N()
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
		return drv.N() - before
	}

	methods := 0
	for _, m := range api {
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
		if _, ok := api[name]; !ok {
			t.Errorf("system door %s is no method of the plane or a domain: update the list", name)
		}
	}

	// The same calls with a subject reach it.
	withActor := authz.WithActor(ctx, actor)
	reachedWith := 0
	for _, name := range []string{"Tenants", "Tenant", "Clusters", "AuditEvents", "MyAPITokens"} {
		if call(t, withActor, api[name]) > 0 {
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
	asJobs := core.As(ctx, core.SystemJobs)
	for _, m := range api {
		if _, ok := systemDoors[m.Name]; ok {
			continue
		}
		if n := call(t, asJobs, m); n > 0 && lastErr == nil {
			t.Errorf("%s reached the database %d times and succeeded for the jobs' system subject", m.Name, n)
		}
	}

	// And a system subject does reach the store through its own door.
	before := drv.N()
	if _, err := p.RunJobsOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if drv.N() == before {
		t.Fatal("the jobs' system subject reached nothing")
	}
}

// An apiMethod is an exported method of the core or of a domain.
type apiMethod struct {
	Name string
	fn   reflect.Value
}

// apiMethods are the exported methods callers reach through p: the core's,
// and each domain's own (not those it has from the core it embeds), by
// name. A name in two places fails: callers could not tell which they call.
func apiMethods(p *control.Plane) map[string]apiMethod {
	out := map[string]apiMethod{}
	coreT := reflect.TypeFor[*core.Plane]()
	add := func(v reflect.Value, own bool) {
		for i := range v.NumMethod() {
			m := v.Type().Method(i)
			if own {
				if _, ok := coreT.MethodByName(m.Name); ok {
					continue
				}
			}
			if _, dup := out[m.Name]; dup {
				panic("two methods named " + m.Name)
			}
			out[m.Name] = apiMethod{Name: m.Name, fn: v.Method(i)}
		}
	}
	add(reflect.ValueOf(p.Plane), false)
	pv := reflect.ValueOf(p).Elem()
	for i := range pv.NumField() {
		if f := pv.Type().Field(i); f.IsExported() && !f.Anonymous {
			add(pv.Field(i), true)
		}
	}
	return out
}
