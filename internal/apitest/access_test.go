package apitest

import (
	"fmt"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/testutil"
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
	testutil.Eventually(t, 5*time.Second, "the subscription of a user removed from the project ends", func() (bool, string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		var last string
		if n := len(s.msgs); n > 0 {
			last, _ = s.msgs[n-1]["type"].(string)
		}
		return last == "complete" || last == "error", fmt.Sprint(s.msgs)
	})
	if got := s.values("deploymentEvents.stage"); len(got) != 2 {
		t.Errorf("events after losing access: %v", got)
	}
}
