package hub_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/control/clusters"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store"
)

// recvCommand reads frames until a command arrives.
func recvCommand(t *testing.T, r *rig, c interface {
	ReadMessage() (int, []byte, error)
}) protocol.Command {
	t.Helper()
	for {
		_, frame, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		var env protocol.Envelope
		if err := json.Unmarshal(frame, &env); err != nil {
			t.Fatal(err)
		}
		if env.Type != protocol.TypeCommand {
			continue
		}
		var cmd protocol.Command
		if err := json.Unmarshal(env.Body, &cmd); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
}

// Commands queued while the agent is away wait for it; one delivered but
// not acknowledged comes again after a reconnect; an ack is final, and an
// agent can only acknowledge its own cluster's commands.
func TestCommandsDurable(t *testing.T) {
	r := newRig(t)
	id, tok := r.cluster(t, "edge")
	other, otherTok := r.cluster(t, "other")
	cmd, err := r.plane.Clusters.QueueCommand(r.ctx, clusters.CommandInput{Cluster: id, Kind: model.CommandResync})
	if err != nil {
		t.Fatal(err)
	}
	status := func(cid model.CommandID) model.CommandStatus {
		c, err := store.Commands.Get(t.Context(), r.st.Q(), cid)
		if err != nil {
			t.Fatal(err)
		}
		return c.Status
	}

	c1, _, err := r.dial(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	hello(t, c1, 0)
	got := recvCommand(t, r, c1)
	if got.ID != string(cmd.ID) || got.Kind != "RESYNC" {
		t.Fatalf("command %+v, want %s RESYNC", got, cmd.ID)
	}
	waitFor(t, "the command is delivered", func() bool { return status(cmd.ID) == model.CommandDelivered })
	c1.Close() // the ack is lost with the session

	// Another cluster's agent cannot acknowledge it.
	co, _, err := r.dial(t, otherTok)
	if err != nil {
		t.Fatal(err)
	}
	hello(t, co, 0)
	send(t, co, protocol.TypeCommandAck, protocol.CommandAck{ID: string(cmd.ID), Result: protocol.ResultApplied})

	c2, _, err := r.dial(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	hello(t, c2, 0)
	if again := recvCommand(t, r, c2); again.ID != string(cmd.ID) {
		t.Fatalf("after a reconnect got %s, want %s again", again.ID, cmd.ID)
	}
	if st := status(cmd.ID); st != model.CommandDelivered {
		t.Errorf("status after another cluster's ack: %s, want DELIVERED", st)
	}
	send(t, c2, protocol.TypeCommandAck, protocol.CommandAck{ID: string(cmd.ID), Result: protocol.ResultApplied, Message: "resynced 4 objects"})
	waitFor(t, "the command is applied", func() bool { return status(cmd.ID) == model.CommandApplied })
	send(t, c2, protocol.TypeCommandAck, protocol.CommandAck{ID: string(cmd.ID), Result: protocol.ResultFailed})
	// Frames are handled in order: once this heartbeat shows, the ack before
	// it was handled.
	marked := inventory
	marked.AgentVersion = "after-second-ack"
	send(t, c2, protocol.TypeHeartbeat, protocol.Heartbeat{Inventory: marked})
	waitFor(t, "the heartbeat after the second ack is stored", func() bool { return strings.Contains(r.clusterRow(t, id).Inventory, "after-second-ack") })
	// A command queued now reaches the live session at once; a later ack
	// of the first one did not move it.
	cmd2, err := r.plane.Clusters.QueueCommand(r.ctx, clusters.CommandInput{Cluster: id, Kind: model.CommandCollectDiagnostics})
	if err != nil {
		t.Fatal(err)
	}
	if live := recvCommand(t, r, c2); live.ID != string(cmd2.ID) {
		t.Errorf("live command %s, want %s", live.ID, cmd2.ID)
	}
	if st := status(cmd.ID); st != model.CommandApplied {
		t.Errorf("status after a second ack: %s, want APPLIED (final)", st)
	}
	_ = other
}
