package hub

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nebulactrl/nebula/internal/control/agents"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// The protocol ends here: the hub translates what an agent sends into the
// control plane's own types, which never name a wire type.

// report records a hello's or heartbeat's inventory (stored as the agent
// sent it), applied revision and the hash of the state it applied.
func (s *session) report(ctx context.Context, inv protocol.Inventory, applied int64, hash string) error {
	b, err := json.Marshal(inv)
	if err != nil {
		return err
	}
	return s.side.Report(ctx, b, applied, hash)
}

// AppliedOf translates an apply acknowledgement.
func AppliedOf(m *protocol.Ack) agents.Applied {
	out := agents.Applied{Revision: m.Revision, OK: m.Result == protocol.ResultApplied}
	for _, e := range m.Errors {
		out.Errors = append(out.Errors, model.ObjectError{Object: e.Object, Message: e.Message})
	}
	return out
}

// CommandDoneOf translates a command acknowledgement.
func CommandDoneOf(m *protocol.CommandAck) agents.CommandDone {
	return agents.CommandDone{ID: model.CommandID(m.ID), Failed: m.Result == protocol.ResultFailed, Message: m.Message}
}

// StageOf translates a stage report.
func StageOf(m *protocol.Stage) agents.StageReport {
	return agents.StageReport{Deployment: model.DeploymentID(m.Deployment), Stage: model.DeploymentStage(m.Stage), Message: m.Message}
}

// BuildReportOf translates a build report.
func BuildReportOf(m *protocol.BuildReport) agents.BuildReport {
	r := agents.BuildReport{ID: model.BuildID(m.ID), From: m.From, Digest: m.Digest, Message: m.Message,
		Running: m.Status == protocol.BuildRunning, Succeeded: m.Status == protocol.BuildSucceeded,
		Failed: m.Status == protocol.BuildFailed}
	for _, l := range m.Lines {
		r.Lines = append(r.Lines, agents.LogLine{At: l.At, Text: l.Text})
	}
	return r
}

// BuildsOf translates the builds a cluster should run.
func BuildsOf(js []agents.BuildJob) protocol.Builds {
	out := protocol.Builds{Builds: make([]protocol.BuildJob, len(js))}
	for i, j := range js {
		out.Builds[i] = protocol.BuildJob{ID: string(j.ID), Repository: j.Repository, Commit: j.Commit,
			ContextDir: j.ContextDir, Dockerfile: j.Dockerfile, Image: j.Image, Credential: j.Credential,
			Builder: j.Builder, Deadline: j.Deadline, LogFrom: j.LogFrom}
	}
	return out
}

// LogsOf translates the streams of a logs message.
func LogsOf(m *protocol.Logs) []agents.LogStreamIn {
	out := make([]agents.LogStreamIn, len(m.Streams))
	for i, s := range m.Streams {
		lines := make([]agents.LogLine, len(s.Lines))
		for j, l := range s.Lines {
			lines[j] = agents.LogLine{At: l.At, Text: l.Text}
		}
		out[i] = agents.LogStreamIn{Environment: model.EnvironmentID(s.Environment), Service: model.ServiceID(s.Service),
			Release: s.Release, Process: s.Process, Namespace: s.Namespace, Pod: s.Pod, Container: s.Container,
			Stderr: s.Stream == "stderr", Lines: lines, Gap: s.Gap}
	}
	return out
}

// LogStreamKeysOf translates the streams a logPositions request asks
// about.
func LogStreamKeysOf(m *protocol.LogPositions) []agents.LogStreamKey {
	out := make([]agents.LogStreamKey, len(m.Streams))
	for i, s := range m.Streams {
		out[i] = agents.LogStreamKey{Environment: model.EnvironmentID(s.Environment), Service: model.ServiceID(s.Service),
			Pod: s.Pod, Container: s.Container}
	}
	return out
}

// LogPositionsAnswer is the answer to a logPositions request: its streams,
// each with the time of the last line stored where there is one.
func LogPositionsAnswer(m *protocol.LogPositions, ats []time.Time) protocol.LogPositions {
	out := protocol.LogPositions{ID: m.ID, Streams: make([]protocol.LogPosition, len(m.Streams))}
	for i, s := range m.Streams {
		s.At = nil
		if i < len(ats) && !ats[i].IsZero() {
			at := ats[i]
			s.At = &at
		}
		out.Streams[i] = s
	}
	return out
}

// EventsOf translates the events of an events message.
func EventsOf(m *protocol.Events) []agents.EventIn {
	out := make([]agents.EventIn, len(m.Events))
	for i, e := range m.Events {
		out[i] = agents.EventIn{UID: e.UID, Count: int(e.Count), Type: e.Type, Reason: e.Reason, Message: e.Message,
			Namespace: e.Namespace, ObjectKind: e.ObjectKind, ObjectName: e.ObjectName, Source: e.Source, FirstAt: e.FirstAt,
			LastAt: e.LastAt, Environment: model.EnvironmentID(e.Environment), Service: model.ServiceID(e.Service)}
	}
	return out
}
