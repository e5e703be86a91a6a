package apitest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// events sends Kubernetes events as the agent does (events.v1).
func (a *stageAgent) events(evs ...protocol.Event) {
	a.t.Helper()
	a.send(protocol.TypeEvents, protocol.Events{Events: evs})
	a.handled()
}

const eventFields = `nodes { number count type reason message objectKind objectName service { name } } pageInfo { hasNextPage }`

// An agent's events are stored once per occurrence and read on the
// service, the environment and the cluster; secret values in messages are
// redacted; events of environments the cluster does not run are dropped;
// viewers read an environment's events, tenant admins a cluster's; a
// subscription follows them.
func TestKubeEvents(t *testing.T) {
	EachStore(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		wsDeploy(t, f)
		f.MustDo(t, `mutation($s: ID!) { updateService(input: {serviceId: $s, variables: [{name: "DB_PASSWORD", value: "hunter2-secret", secret: true}]}) {
			service { id } userErrors { message } } }`, map[string]any{"s": f.ServiceID})
		agent, _ := connectStageAgent(t, f, "prod-eu")
		envID, svcID := rawID(t, gid.Environment, f.EnvironmentID), rawID(t, gid.Service, f.ServiceID)
		at := time.Now().Add(-time.Minute).UTC()
		backoff := protocol.Event{UID: "u-1", Count: 1, Type: "Warning", Reason: "BackOff", Message: "login failed with hunter2-secret",
			Namespace: "shop-prod", ObjectKind: "Pod", ObjectName: "api-web-1", Source: "kubelet", FirstAt: at, LastAt: at,
			Environment: envID, Service: svcID}
		again := backoff
		again.Count, again.LastAt = 2, at.Add(time.Second)
		ns := protocol.Event{UID: "u-2", Count: 1, Type: "Normal", Reason: "Created", Message: "namespace made", Namespace: "shop-prod",
			ObjectKind: "Namespace", ObjectName: "shop-prod", FirstAt: at, LastAt: at, Environment: envID}
		stray := ns
		stray.UID, stray.Environment = "u-3", rawID(t, gid.Environment, f.ProtectedEnvironmentID)
		agent.events(backoff, again, ns, stray)
		agent.events(backoff, again) // sent again: stored once

		svc := f.Node(t, f.ServiceID, `... on Service { events(environmentId: "`+f.EnvironmentID+`") { `+eventFields+` } }`)
		evs := decodeInto[[]map[string]any](t, dig(svc, "events.nodes"))
		if len(evs) != 2 || evs[0]["count"] != float64(2) || evs[1]["count"] != float64(1) ||
			evs[0]["message"] != "login failed with [redacted]" || dig(evs[0], "service.name") != "api" {
			t.Errorf("the service's events: %v", evs)
		}
		envEvents := f.Env.MustDo(t, f.Users[Viewer].Token, `query($e: ID!) { node(id: $e) { ... on Environment { events(first: 2) { `+eventFields+` } } } }`,
			map[string]any{"e": f.EnvironmentID})
		list := envEvents.List("node.events.nodes")
		if len(list) != 2 || dig(list[0], "objectKind") != "Namespace" || dig(list[0], "service") != nil ||
			envEvents.Get("node.events.pageInfo.hasNextPage") != true {
			t.Errorf("the environment's events, as a viewer: %s", envEvents.Body)
		}
		warnings := f.Node(t, f.EnvironmentID, `... on Environment { events(type: WARNING) { `+eventFields+` } }`)
		if n := len(dig(warnings, "events.nodes").([]any)); n != 2 {
			t.Errorf("%d warnings, want 2", n)
		}
		if n := len(dig(f.Node(t, f.ProtectedEnvironmentID, `... on Environment { events { `+eventFields+` } }`), "events.nodes").([]any)); n != 0 {
			t.Errorf("%d events of an environment the cluster does not run were stored", n)
		}
		// A cluster's events span projects: tenant admins only.
		cl := f.Node(t, f.ClusterID, `... on Cluster { events { `+eventFields+` } }`)
		if n := len(dig(cl, "events.nodes").([]any)); n != 3 {
			t.Errorf("the cluster shows %d events, want 3", n)
		}
		// Paged one at a time, both ways: the same three, newest first.
		all := dig(cl, "events.nodes").([]any)
		walk := func(arg, cursorArg, next, more string) []any {
			var got []any
			cursor := ""
			for range 5 {
				args := arg + ": 1"
				if cursor != "" {
					args += `, ` + cursorArg + `: "` + cursor + `"`
				}
				r := f.Node(t, f.ClusterID, `... on Cluster { events(`+args+`) { nodes { number } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`)
				nodes := dig(r, "events.nodes").([]any)
				if arg == "last" {
					got = append(nodes, got...)
				} else {
					got = append(got, nodes...)
				}
				if dig(r, "events.pageInfo."+more) != true {
					return got
				}
				cursor = dig(r, "events.pageInfo."+next).(string)
			}
			t.Fatalf("paging the cluster's events by %s does not end", arg)
			return nil
		}
		for _, way := range [][4]string{{"first", "after", "endCursor", "hasNextPage"}, {"last", "before", "startCursor", "hasPreviousPage"}} {
			got := walk(way[0], way[1], way[2], way[3])
			if len(got) != len(all) {
				t.Fatalf("paging by %s: %v, want %v", way[0], got, all)
			}
			for i := range got {
				if dig(got[i], "number") != dig(all[i], "number") {
					t.Errorf("paging by %s: %v, want %v", way[0], got, all)
					break
				}
			}
		}
		res := f.Env.Do(t, f.Users[Viewer].Token, `query($c: ID!) { node(id: $c) { ... on Cluster { events { `+eventFields+` } } } }`,
			map[string]any{"c": f.ClusterID})
		if codes := res.ErrorCodes(); !slices.Equal(codes, []string{"FORBIDDEN"}) {
			t.Errorf("a viewer reads the cluster's events: %v", codes)
		}
		res = f.Env.Do(t, f.Users[Member].Token, `query($e: ID!) { node(id: $e) { ... on Environment { events { `+eventFields+` } } } }`,
			map[string]any{"e": f.EnvironmentID})
		if codes := res.ErrorCodes(); !slices.Equal(codes, []string{"NOT_FOUND"}) {
			t.Errorf("a tenant member outside the project reads its events: %v", codes)
		}
		// The subscription: new events as they are stored.
		s := subscribeOn(t, env, f.Users[Viewer].Token, `subscription($e: ID!, $s: ID, $a: Int) { kubeEvents(environmentId: $e, serviceId: $s, after: $a) { reason count } }`,
			map[string]any{"e": f.EnvironmentID, "s": f.ServiceID, "a": evs[1]["number"]})
		s.waitValues(t, "kubeEvents.reason", []string{"BackOff"}) // the second occurrence, replayed
		third := again
		third.Count, third.Reason = 3, "Unhealthy"
		agent.events(third)
		s.waitValues(t, "kubeEvents.reason", []string{"BackOff", "Unhealthy"})
		if strings.Contains(string(envEvents.Body), "hunter2-secret") {
			t.Error("the secret is shown")
		}
	})
}
