package apitest

import (
	"testing"
	"time"
)

// A subscription ends as soon as its user loses access to what it follows,
// though the token stays valid.
func TestSubscriptionEndsWhenAccessIsLost(t *testing.T) {
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	dep := f.deployAsOwner(t, f.EnvironmentID)
	viewer := f.Users[Viewer]
	s := subscribeOn(t, env, viewer.Token, `subscription($d: ID!) { deploymentEvents(deploymentId: $d) { stage } }`,
		map[string]any{"d": dep})
	s.waitValues(t, "deploymentEvents.stage", []string{"QUEUED", "DELIVERING"})
	f.MustDo(t, `mutation($m: ID!) { removeProjectMember(input: {projectMemberId: $m}) { removedProjectMemberId userErrors { message } } }`,
		map[string]any{"m": viewer.ProjectMemberID})
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		var last string
		if n := len(s.msgs); n > 0 {
			last, _ = s.msgs[n-1]["type"].(string)
		}
		s.mu.Unlock()
		if last == "complete" || last == "error" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscription of a user removed from the project did not end: %v", s.msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := s.values("deploymentEvents.stage"); len(got) != 2 {
		t.Errorf("events after losing access: %v", got)
	}
}
