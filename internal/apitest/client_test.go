package apitest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Khan/genqlient/graphql"

	"github.com/nebulactrl/nebula/internal/client"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/testutil"
)

// followStages follows a deployment's events with the CLI's client in a
// goroutine: each event goes to events, closed when Follow ends; the
// returned channel then gives Follow's result.
func followStages(ctx context.Context, c *client.Client, dep string, events chan<- client.DeploymentEventsDeploymentEventsDeploymentEvent,
	retries *atomic.Int32) <-chan error {
	done := make(chan error, 1)
	var cursor *string
	go func() {
		done <- client.Follow(ctx, c,
			func(ctx context.Context, ws graphql.WebSocketClient) (chan client.DeploymentEventsWsResponse, string, error) {
				return client.DeploymentEvents(ctx, ws, dep, cursor)
			},
			func(r client.DeploymentEventsWsResponse) (bool, error) {
				if err := client.Refusal(r.Errors); err != nil {
					return false, err
				}
				ev := r.Data.DeploymentEvents
				cursor = &ev.Cursor
				events <- ev
				return model.DeploymentStage(ev.Stage).Terminal(), nil
			},
			func(error, time.Duration) { retries.Add(1) })
		close(events)
	}()
	return done
}

// The CLI's client follows a deployment's stages over its own websocket
// transport: it answers the server's keep-alive pings (genqlient's own
// transport takes them for errors), and when the network drops it opens
// the subscription again from the last cursor, so that every stage
// arrives once, in order; it stops when the deployment ends.
func TestClientFollowsThroughDrops(t *testing.T) {
	t.Parallel()
	env := NewEnvWith(t, OpenSQLite(t), func(c *config.Config) { c.WSPing = 100 * time.Millisecond })
	f := env.NewFixture(t)
	agent, _ := connectStageAgent(t, f, "prod-eu")
	dep, raw := wsDeploy(t, f)
	agent.waitDeployment(string(raw))
	proxy := startCutProxy(t, strings.TrimPrefix(env.Server.URL, "http://"))
	c, err := client.New(proxy.URL(), f.Users[Viewer].Token, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	events := make(chan client.DeploymentEventsDeploymentEventsDeploymentEvent, 100)
	var retries atomic.Int32
	done := followStages(ctx, c, dep, events, &retries)
	var got []string
	take := func(n int) {
		t.Helper()
		for range n {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("Follow ended after %v: %v", got, <-done)
				}
				got = append(got, string(ev.Stage))
				if ev.Sequence != len(got) {
					t.Errorf("event %d has sequence %d", len(got), ev.Sequence)
				}
			case <-ctx.Done():
				t.Fatalf("waiting for events after %v", got)
			}
		}
	}
	take(2) // QUEUED, DELIVERING: replayed
	testutil.Eventually(t, 10*time.Second, "the server pings the client five times", func() (bool, string) {
		return proxy.Pings() >= 5, ""
	})
	agent.report(string(raw), model.StageStarting)
	agent.report(string(raw), model.StageProbing)
	take(2)
	if n := retries.Load(); n != 0 {
		t.Fatalf("the client reconnected %d times before any drop: the pings broke it", n)
	}
	proxy.setCut(true)
	testutil.Eventually(t, 10*time.Second, "the client sees the drop", func() (bool, string) { return retries.Load() > 0, "" })
	agent.report(string(raw), model.StageSwitchingTraffic)
	agent.report(string(raw), model.StageRetiring)
	agent.report(string(raw), model.StageSucceeded)
	agent.handled()
	proxy.setCut(false)
	take(3)
	if err := <-done; err != nil {
		t.Errorf("Follow ended with %v", err)
	}
	want := "QUEUED,DELIVERING,STARTING,PROBING,SWITCHING_TRAFFIC,RETIRING,SUCCEEDED"
	if strings.Join(got, ",") != want {
		t.Errorf("stages %v, want %s", got, want)
	}
}

// A revoked token ends the client's subscription at once: the server
// closes with 4403 and Follow does not try again.
func TestClientStopsOnRevokedToken(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	dep, _ := wsDeploy(t, f)
	r := f.MustDo(t, `mutation { createApiToken(input: {name: "follower"}) { secret apiToken { id } `+ue+` } }`, nil)
	c, err := client.New(env.Server.URL, r.Str("createApiToken.secret"), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan client.DeploymentEventsDeploymentEventsDeploymentEvent, 100)
	var retries atomic.Int32
	done := followStages(t.Context(), c, dep, events, &retries)
	<-events // following
	f.MustDo(t, `mutation($id: ID!) { revokeApiToken(input: {apiTokenId: $id}) { `+ue+` } }`, map[string]any{"id": r.Str("createApiToken.apiToken.id")})
	select {
	case err := <-done:
		if !client.Closed(err, 4403) || retries.Load() != 0 {
			t.Errorf("Follow ended with %v after %d retries, want the 4403 close and none", err, retries.Load())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Follow goes on with a revoked token")
	}
	// A query with it is refused, said as the CLI says it.
	_, err = client.Viewer(t.Context(), c.GQL)
	var ce *client.Error
	if !errors.As(client.Explain(err), &ce) || ce.Code != "UNAUTHENTICATED" || !strings.Contains(ce.Message, "nebula login") {
		t.Errorf("a query with the revoked token: %v", client.Explain(err))
	}
}
