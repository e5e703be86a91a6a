package apitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Connections outlive role changes. Every operation on a connection that
// stays open, and every update of a subscription (nested fields included),
// must be authorized with the grants in force when it runs or is sent:
// per transport (graphql-transport-ws, legacy graphql-ws, SSE) and per
// change (role lowered, project role removed, member removed, token
// revoked).

// do runs a query or mutation on the connection and returns what its
// operation answered: data, errors, or the code the connection was closed
// with instead (0 while it is open).
func (w *wsClient) do(id, query string, vars map[string]any) (data map[string]any, errs []GraphQLError, closed int) {
	w.t.Helper()
	w.subscribe(id, query, vars)
	deadline := time.Now().Add(wsWait)
	for {
		m, err := w.readFrame(time.Until(deadline))
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return nil, nil, ce.Code
		}
		if err != nil {
			w.t.Fatalf("operation %s: reading: %v", id, err)
		}
		if m.ID != id {
			continue
		}
		switch m.Type {
		case "next", "data":
			var p struct {
				Data   map[string]any `json:"data"`
				Errors []GraphQLError `json:"errors"`
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				w.t.Fatalf("decoding %v: %v", m, err)
			}
			data, errs = p.Data, append(errs, p.Errors...)
		case "error":
			var list []GraphQLError
			if err := json.Unmarshal(m.Payload, &list); err != nil {
				w.t.Fatalf("decoding %v: %v", m, err)
			}
			return data, append(errs, list...), 0
		case "complete":
			return data, errs, 0
		}
	}
}

// mustDo is do that fails on any error.
func (w *wsClient) mustDo(id, query string, vars map[string]any) map[string]any {
	w.t.Helper()
	data, errs, closed := w.do(id, query, vars)
	if closed != 0 || len(errs) > 0 {
		w.t.Fatalf("operation %s: closed %d, errors %v", id, closed, errs)
	}
	return data
}

func codesOf(errs []GraphQLError) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Code()
	}
	return out
}

// wantDenied asserts an operation was refused: an error with one of the
// codes, or the connection closed with 4403 (the token stopped working).
func wantDenied(t *testing.T, what string, data map[string]any, errs []GraphQLError, closed int, codes ...string) {
	t.Helper()
	if closed != 0 {
		if closed != 4403 {
			t.Errorf("%s: connection closed with %d, want 4403 or an error", what, closed)
		}
		return
	}
	for _, e := range errs {
		if slices.Contains(codes, e.Code()) {
			return
		}
	}
	t.Errorf("%s: got data %v errors %v, want an error with a code in %v", what, data, codesOf(errs), codes)
}

// liveCaller is a fresh caller for one case: a tenant admin, or a member
// with the editor role in the fixture project.
func liveCaller(t *testing.T, f *Fixture, admin bool) *Caller {
	t.Helper()
	if admin {
		return f.NewCaller(t, "live-admin", "ADMIN")
	}
	c := f.NewCaller(t, "live-editor", "MEMBER")
	c.ProjectMemberID = f.GrantProjectRole(t, f.ProjectID, c.UserID, "EDITOR")
	return c
}

const (
	liveAdminRead   = `query($c: ID!) { node(id: $c) { ... on Cluster { connectTokens { nodes { id } } } } }`
	liveDemote      = `mutation($m: ID!, $r: TenantRole!) { updateMemberRole(input: {memberId: $m, role: $r}) { member { role } userErrors { code } } }`
	liveSetPlan     = `mutation($t: ID!) { setTenantPlan(input: {tenantId: $t, plan: ENTERPRISE}) { tenant { plan { name } } userErrors { code } } }`
	liveAddAdmin    = `mutation($t: ID!, $e: String!) { addMember(input: {tenantId: $t, email: $e, name: "sneaky", role: ADMIN}) { member { id } userErrors { code } } }`
	liveSetVariable = `mutation($p: ID!, $s: ID!, $v: String!) { setVariable(input: {projectId: $p, serviceId: $s, name: "LIVE", value: $v}) { variable { id } userErrors { code } } }`
	liveDeploy      = `mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } userErrors { code } } }`
)

func TestLiveGrantsWebsocketOperations(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		for _, proto := range wsProtocols {
			t.Run(proto, func(t *testing.T) {
				t.Run("role lowered", func(t *testing.T) {
					c := liveCaller(t, f, true)
					w := wsDial(t, env, proto)
					w.init(c.Token)
					w.mustDo("warm", liveAdminRead, map[string]any{"c": f.ClusterID})
					f.MustDo(t, liveDemote, map[string]any{"m": c.MemberID, "r": "MEMBER"})

					data, errs, closed := w.do("read", liveAdminRead, map[string]any{"c": f.ClusterID})
					wantDenied(t, "connectTokens after the demotion", data, errs, closed, "FORBIDDEN")
					data, errs, closed = w.do("self", liveDemote, map[string]any{"m": c.MemberID, "r": "ADMIN"})
					wantDenied(t, "updateMemberRole(self → ADMIN)", data, errs, closed, "FORBIDDEN")
					data, errs, closed = w.do("add", liveAddAdmin, map[string]any{"t": f.TenantID, "e": f.Unique("sneaky") + "@evil.test"})
					wantDenied(t, "addMember(role: ADMIN)", data, errs, closed, "FORBIDDEN")
					data, errs, closed = w.do("plan", liveSetPlan, map[string]any{"t": f.TenantID})
					wantDenied(t, "setTenantPlan", data, errs, closed, "FORBIDDEN")

					r := f.MustDo(t, `query($m: ID!) { node(id: $m) { ... on Member { role } } }`, map[string]any{"m": c.MemberID})
					if got := r.Str("node.role"); got != "MEMBER" {
						t.Errorf("the demoted caller's role is %q, want MEMBER", got)
					}
					r = f.MustDo(t, `query($t: ID!) { node(id: $t) { ... on Tenant { plan { name } } } }`, map[string]any{"t": f.TenantID})
					if got := r.Str("node.plan.name"); got != "TEAM" {
						t.Errorf("the plan is %q, want TEAM", got)
					}
				})
				t.Run("project role removed", func(t *testing.T) {
					c := liveCaller(t, f, false)
					w := wsDial(t, env, proto)
					w.init(c.Token)
					w.mustDo("warm", liveSetVariable, map[string]any{"p": f.ProjectID, "s": f.ServiceID, "v": "before"})
					f.MustDo(t, `mutation($m: ID!) { removeProjectMember(input: {projectMemberId: $m}) { userErrors { code } } }`,
						map[string]any{"m": c.ProjectMemberID})

					data, errs, closed := w.do("var", liveSetVariable, map[string]any{"p": f.ProjectID, "s": f.ServiceID, "v": "after"})
					wantDenied(t, "setVariable", data, errs, closed, "NOT_FOUND")
					data, errs, closed = w.do("deploy", liveDeploy, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(9_000_000 + env.Next())})
					wantDenied(t, "deploy", data, errs, closed, "NOT_FOUND")
				})
				t.Run("member removed", func(t *testing.T) {
					c := liveCaller(t, f, false)
					w := wsDial(t, env, proto)
					w.init(c.Token)
					w.mustDo("warm", liveSetVariable, map[string]any{"p": f.ProjectID, "s": f.ServiceID, "v": "before"})
					f.MustDo(t, `mutation($m: ID!) { removeMember(input: {memberId: $m}) { userErrors { code } } }`,
						map[string]any{"m": c.MemberID})
					data, errs, closed := w.do("var", liveSetVariable, map[string]any{"p": f.ProjectID, "s": f.ServiceID, "v": "after"})
					wantDenied(t, "setVariable", data, errs, closed, "NOT_FOUND", "UNAUTHENTICATED")
				})
				t.Run("token revoked", func(t *testing.T) {
					c := liveCaller(t, f, true)
					w := wsDial(t, env, proto)
					w.init(c.Token)
					w.mustDo("warm", liveAdminRead, map[string]any{"c": f.ClusterID})
					wsRevoke(t, f, c.TokenID)
					data, errs, closed := w.do("read", liveAdminRead, map[string]any{"c": f.ClusterID})
					wantDenied(t, "a query", data, errs, closed, "UNAUTHENTICATED")
				})
			})
		}
	})
}

// sseStream is a subscription over SSE, read event by event.
type sseStream struct {
	t      *testing.T
	events chan sseEvent
	cancel context.CancelFunc
}

type sseEvent struct {
	Name string // "next" or "complete"; "" once the stream ended
	Data map[string]any
	Errs []GraphQLError
}

func sseSubscribe(t *testing.T, e *Env, token, query string, vars map[string]any) *sseStream {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Server.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("opening an SSE stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("opening an SSE stream: HTTP %d", resp.StatusCode)
	}
	s := &sseStream{t: t, events: make(chan sseEvent, 64), cancel: cancel}
	go func() {
		defer close(s.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if name == "" {
					continue
				}
				ev := sseEvent{Name: name}
				if data != "" {
					var p struct {
						Data   map[string]any `json:"data"`
						Errors []GraphQLError `json:"errors"`
					}
					_ = json.Unmarshal([]byte(data), &p)
					ev.Data, ev.Errs = p.Data, p.Errors
				}
				s.events <- ev
				name, data = "", ""
			case strings.HasPrefix(line, "event:"):
				name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			}
		}
	}()
	return s
}

// next returns the next event; Name "" when the stream ended.
func (s *sseStream) next() sseEvent {
	s.t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case <-time.After(wsWait):
		s.t.Fatal("no SSE event in time")
		return sseEvent{}
	}
}

// live is a subscription over one transport, read by its own goroutine.
type live struct {
	t       *testing.T
	updates chan liveUpdate
}

// liveUpdate is one update: data and errors, or how the subscription
// ended ("complete", "error", "closed <code>", "ended" for an SSE stream
// without complete).
type liveUpdate struct {
	data map[string]any
	errs []GraphQLError
	end  string
}

// next returns the next update.
func (l live) next() (map[string]any, []GraphQLError, string) {
	l.t.Helper()
	select {
	case u := <-l.updates:
		return u.data, u.errs, u.end
	case <-time.After(wsWait):
		l.t.Fatal("no update of the subscription in time")
		return nil, nil, ""
	}
}

// quiet asserts that nothing arrives for d.
func (l live) quiet(what string, d time.Duration) {
	l.t.Helper()
	select {
	case u := <-l.updates:
		l.t.Fatalf("%s: got data %v errors %v end %q, want nothing for %v", what, u.data, codesOf(u.errs), u.end, d)
	case <-time.After(d):
	}
}

// liveSubscribe opens a subscription over a transport.
func liveSubscribe(t *testing.T, e *Env, transport, token, query string, vars map[string]any) live {
	t.Helper()
	l := live{t: t, updates: make(chan liveUpdate, 256)}
	if transport == "sse" {
		s := sseSubscribe(t, e, token, query, vars)
		go func() {
			var errs []GraphQLError
			for ev := range s.events {
				switch ev.Name {
				case "next":
					if ev.Data == nil && len(ev.Errs) > 0 {
						errs = ev.Errs // the subscription's error: the stream ends next
					}
					l.updates <- liveUpdate{data: ev.Data, errs: ev.Errs}
				case "complete":
					l.updates <- liveUpdate{end: "complete"}
					return
				}
			}
			l.updates <- liveUpdate{errs: errs, end: "ended"}
		}()
		return l
	}
	w := wsDial(t, e, transport)
	w.init(token)
	w.subscribe("sub", query, vars)
	go func() {
		for {
			m, err := w.readFrame(time.Hour)
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				l.updates <- liveUpdate{end: fmt.Sprintf("closed %d", ce.Code)}
				return
			}
			if err != nil {
				l.updates <- liveUpdate{end: "broken: " + err.Error()}
				return
			}
			if m.ID != "sub" {
				continue
			}
			switch m.Type {
			case "next", "data":
				var p struct {
					Data   map[string]any `json:"data"`
					Errors []GraphQLError `json:"errors"`
				}
				_ = json.Unmarshal(m.Payload, &p)
				l.updates <- liveUpdate{data: p.Data, errs: p.Errors}
			case "error":
				var list []GraphQLError
				_ = json.Unmarshal(m.Payload, &list)
				l.updates <- liveUpdate{errs: list, end: "error"}
				return
			case "complete":
				l.updates <- liveUpdate{end: "complete"}
				return
			}
		}
	}()
	return l
}

// liveEnd reads updates until the subscription ends and returns how, with
// the errors it ended with.
func (l live) end(t *testing.T) (string, []GraphQLError) {
	t.Helper()
	var last []GraphQLError
	for {
		_, errs, end := l.next()
		if len(errs) > 0 {
			last = errs
		}
		if end != "" {
			if len(errs) == 0 {
				errs = last
			}
			return end, errs
		}
	}
}

var liveTransports = []string{wsTransportWS, wsLegacyWS, "sse"}

const liveClusterStatus = `subscription($c: ID!) { clusterStatus(clusterId: $c) { desiredRevision connectTokens { nodes { id } } } }`

// bumpRevision changes the fixture service's variables as the owner: the
// cluster's desired revision moves, and clusterStatus sends an update.
func bumpRevision(t *testing.T, f *Fixture) {
	t.Helper()
	f.MustDo(t, liveSetVariable, map[string]any{"p": f.ProjectID, "s": f.ServiceID, "v": f.Unique("v")})
}

func TestLiveGrantsSubscriptions(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		for _, transport := range liveTransports {
			t.Run(transport, func(t *testing.T) {
				// A lowered role: the next update's admin-only field is
				// refused, though the subscription itself goes on.
				t.Run("role lowered", func(t *testing.T) {
					c := liveCaller(t, f, true)
					l := liveSubscribe(t, env, transport, c.Token, liveClusterStatus, map[string]any{"c": f.ClusterID})
					data, errs, end := l.next()
					if end != "" || len(errs) > 0 || len(dig(data, "clusterStatus.connectTokens.nodes").([]any)) == 0 {
						t.Fatalf("first update as an admin: data %v errors %v end %q, want the connect tokens", data, errs, end)
					}
					f.MustDo(t, liveDemote, map[string]any{"m": c.MemberID, "r": "MEMBER"})
					bumpRevision(t, f)
					data, errs, _ = l.next()
					if tokens := dig(data, "clusterStatus.connectTokens"); tokens != nil {
						t.Errorf("after the demotion an update still carries connectTokens %v", tokens)
					}
					if !slices.Contains(codesOf(errs), "FORBIDDEN") {
						t.Errorf("after the demotion: errors %v, want FORBIDDEN", codesOf(errs))
					}
				})
				for _, change := range []string{"project role removed", "member removed", "token revoked"} {
					t.Run(change, func(t *testing.T) {
						c := liveCaller(t, f, false)
						l := liveSubscribe(t, env, transport, c.Token,
							`subscription($e: ID!) { environmentDeployments(environmentId: $e) { id stage } }`,
							map[string]any{"e": f.EnvironmentID})
						if _, errs, end := l.next(); end != "" || len(errs) > 0 {
							t.Fatalf("first update: errors %v end %q", errs, end)
						}
						var want []string
						switch change {
						case "project role removed":
							f.MustDo(t, `mutation($m: ID!) { removeProjectMember(input: {projectMemberId: $m}) { userErrors { code } } }`,
								map[string]any{"m": c.ProjectMemberID})
							want = []string{"NOT_FOUND"}
						case "member removed":
							f.MustDo(t, `mutation($m: ID!) { removeMember(input: {memberId: $m}) { userErrors { code } } }`,
								map[string]any{"m": c.MemberID})
							want = []string{"NOT_FOUND", "UNAUTHENTICATED"}
						case "token revoked":
							wsRevoke(t, f, c.TokenID)
							want = []string{"UNAUTHENTICATED"}
						}
						// Whatever happens next, no more deployments of the
						// project reach the caller.
						f.MustDo(t, liveDeploy, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(8_000_000 + env.Next())})
						end, errs := l.end(t)
						switch {
						case end == "closed 4403":
						case end == "complete":
							t.Errorf("the subscription completed as if it were over; want an error saying why it ended")
						case !slices.ContainsFunc(codesOf(errs), func(c string) bool { return slices.Contains(want, c) }):
							t.Errorf("ended %q with errors %v, want one of %v", end, codesOf(errs), want)
						}
					})
				}
			})
		}
	})
}

// A role change on one replica reaches a connection held by another
// within a second: at once through the note, at the latest when the
// grants read before it are a second old.
func TestLiveGrantsAcrossReplicas(t *testing.T) {
	r := newReplicas(t)
	f := r.a.NewFixture(t)
	c := liveCaller(t, f, true)
	w := wsDial(t, r.b, wsTransportWS)
	w.init(c.Token)
	w.mustDo("warm", liveAdminRead, map[string]any{"c": f.ClusterID})
	f.MustDo(t, liveDemote, map[string]any{"m": c.MemberID, "r": "MEMBER"})
	changed := time.Now()
	for i := 0; ; i++ {
		started := time.Now()
		data, errs, closed := w.do(fmt.Sprintf("read%d", i), liveAdminRead, map[string]any{"c": f.ClusterID})
		if closed != 0 || len(errs) > 0 {
			wantDenied(t, "connectTokens on the other replica", data, errs, closed, "FORBIDDEN")
			t.Logf("refused on the other replica %v after the change (attempt %d)", time.Since(changed).Round(time.Millisecond), i+1)
			return
		}
		if started.Sub(changed) > time.Second {
			t.Fatalf("an operation started %v after the demotion on the other replica still read connectTokens", started.Sub(changed))
		}
	}
}

// A deploymentEvents subscriber, whose new events come from their notes
// (the notes carry them), gets them only while its caller may read them:
// with access, the event a later deploy causes (SUPERSEDED) arrives; after
// the caller's project role is removed, it never does, and the
// subscription ends saying why. (The removal's own note makes the follower
// read first; the grant check a hint gets is tested in control,
// TestDeploymentNotesCarryTheirEvents.)
func TestLiveGrantsDeploymentEvents(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		for _, transport := range liveTransports {
			for _, removed := range []bool{false, true} {
				name := transport + "/access kept"
				if removed {
					name = transport + "/project role removed"
				}
				t.Run(name, func(t *testing.T) {
					c := liveCaller(t, f, false)
					first := f.MustDo(t, liveDeploy, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(9_000_000 + env.Next())})
					id := dig(first.Data, "deploy.deployment.id")
					l := liveSubscribe(t, env, transport, c.Token,
						`subscription($d: ID!) { deploymentEvents(deploymentId: $d) { sequence stage } }`, map[string]any{"d": id})
					if _, errs, end := l.next(); end != "" || len(errs) > 0 {
						t.Fatalf("first event: errors %v end %q", errs, end)
					}
					if removed {
						f.MustDo(t, `mutation($m: ID!) { removeProjectMember(input: {projectMemberId: $m}) { userErrors { code } } }`,
							map[string]any{"m": c.ProjectMemberID})
					}
					f.MustDo(t, liveDeploy, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID, "d": Digest(9_000_000 + env.Next())})
					for {
						data, errs, end := l.next()
						if stage := dig(data, "deploymentEvents.stage"); stage == "SUPERSEDED" {
							if removed {
								t.Fatalf("after the project role was removed the subscriber got %v", data)
							}
							return
						}
						if end != "" {
							if !removed {
								t.Fatalf("ended %q with errors %v before the SUPERSEDED event", end, codesOf(errs))
							}
							if end != "closed 4403" && !slices.Contains(codesOf(errs), "NOT_FOUND") {
								t.Errorf("ended %q with errors %v, want NOT_FOUND", end, codesOf(errs))
							}
							return
						}
						if len(errs) > 0 && removed {
							if !slices.Contains(codesOf(errs), "NOT_FOUND") {
								t.Errorf("errors %v, want NOT_FOUND", codesOf(errs))
							}
						}
					}
				})
			}
		}
	})
}
