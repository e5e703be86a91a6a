package model

import (
	"slices"
	"testing"
)

// The stage sets every layer takes from here partition the stages as a
// deployment's way does: waiting (queued, building, awaiting approval),
// rolling out on its cluster, or ended.
func TestStageSets(t *testing.T) {
	waiting := []DeploymentStage{StageQueued, StageBuilding, StageAwaitingApproval}
	var all []DeploymentStage
	all = append(all, waiting...)
	all = append(all, RollingStages()...)
	all = append(all, TerminalStages()...)
	if !slices.Equal(all, deploymentStages) {
		t.Errorf("waiting + rolling + terminal = %v, want every stage once in schema order %v", all, deploymentStages)
	}
	for _, s := range deploymentStages {
		live := s == StageSucceeded || slices.Contains(RollingStages(), s)
		if s.Live() != live || slices.Contains(LiveStages(), s) != live {
			t.Errorf("%s: Live %v, in LiveStages %v, want %v", s, s.Live(), slices.Contains(LiveStages(), s), live)
		}
		if s.Terminal() != slices.Contains(TerminalStages(), s) {
			t.Errorf("%s: Terminal %v disagrees with TerminalStages", s, s.Terminal())
		}
		// An agent reports the stages of a rollout on its cluster and how
		// it ended there; never a waiting stage, DELIVERING (the control
		// plane's), SUPERSEDED or CANCELLED.
		fromAgent := !slices.Contains(waiting, s) && s != StageDelivering && s != StageSuperseded && s != StageCancelled
		if s.FromAgent() != fromAgent || slices.Contains(AgentStages(), s) != fromAgent {
			t.Errorf("%s: FromAgent %v, want %v", s, s.FromAgent(), fromAgent)
		}
	}
	// Ranks follow the way, and every terminal stage ranks above the rest.
	for i, s := range deploymentStages[1:] {
		prev := deploymentStages[i]
		if s.Rank() < prev.Rank() || !s.Terminal() && s.Rank() == prev.Rank() {
			t.Errorf("rank of %s (%d) not above %s (%d)", s, s.Rank(), prev, prev.Rank())
		}
	}
	// The sets are copies: a caller cannot change the vocabulary.
	RollingStages()[0] = StageCancelled
	if !StageDelivering.Live() {
		t.Error("changing a returned set changed the model's")
	}
}
