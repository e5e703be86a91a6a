// Package protocol defines the messages of the agent channel
// (/agent/v1/connect): JSON text frames over one websocket per cluster,
// each an envelope with a type. Both ends import it; it holds no logic
// beyond decoding and validating, and never imports the store or the API.
//
// docs/agent-protocol.md describes the conversation.
package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
)

// Version is the protocol version this build speaks.
const Version = 1

// MaxMessageBytes caps one frame from an agent: inventories of large
// clusters fit, anything bigger is refused with CloseTooBig.
const MaxMessageBytes = 4 << 20

// Capabilities the control plane knows. An agent announces what it can do;
// the welcome lists what both sides will use.
const (
	CapDesiredState = "desired-state.v1"
	CapAcks         = "acks.v1"
	CapInventory    = "inventory.v1"
	CapCommands     = "commands.v1"
	CapStages       = "stages.v1"
	CapBuilds       = "builds.v1"
	CapLogs         = "logs.v1"
	CapEvents       = "events.v1"
	CapDrift        = "drift.v1"
	CapLogResume    = "log-resume.v1"
)

// Known is every capability this build implements.
var Known = []string{CapDesiredState, CapAcks, CapInventory, CapCommands, CapStages, CapBuilds, CapLogs, CapEvents, CapDrift,
	CapLogResume}

// Close codes (RFC 6455 private range) the control plane ends a session with.
const (
	CloseMalformed    = 4400 // a frame that is not a valid message
	CloseUnauthorized = 4401 // the token stopped being valid (revoked, expired)
	CloseUnsupported  = 4406 // no protocol version in common
	CloseSuperseded   = 4409 // another session of the same cluster took over
	CloseTimeout      = 4408 // no hello in time, or silence past the heartbeat deadline
)

// Message types.
const (
	TypeHello      = "hello"
	TypeWelcome    = "welcome"
	TypeHeartbeat  = "heartbeat"
	TypeDesired    = "desired"
	TypeAck        = "ack"
	TypeCommand    = "command"
	TypeCommandAck = "commandAck"
	TypeStage      = "stage"
	// builds.v1: the builds a cluster should run (control plane → agent,
	// the whole set each time), and what one did (agent → control plane).
	TypeBuilds      = "builds"
	TypeBuildReport = "buildReport"
	// logs.v1: lines the containers of managed pods printed (agent →
	// control plane).
	TypeLogs = "logs"
	// events.v1: Kubernetes events of managed objects (agent → control
	// plane).
	TypeEvents = "events"
	// drift.v1: an object found changed outside NebulaCtrl, reported
	// before the agent applies it again (agent → control plane).
	TypeDrift = "drift"
	// log-resume.v1: where the stored log of container streams ends (agent
	// asks, control plane answers with the same type).
	TypeLogPositions = "logPositions"
)

// Envelope is every frame.
type Envelope struct {
	Type string          `json:"type"`
	Body json.RawMessage `json:"body"`
}

// Hello opens a session (agent → control plane).
type Hello struct {
	Protocols       []int    `json:"protocols"`
	Capabilities    []string `json:"capabilities"`
	AppliedRevision int64    `json:"appliedRevision"`
	// AppliedHash is the hash of the state at AppliedRevision when the
	// agent applied it (desired.State.Hash); empty when it has not.
	AppliedHash string    `json:"appliedHash,omitempty"`
	Inventory   Inventory `json:"inventory"`
	// Agent names the agent instance (its pod's name): a revision's
	// outcomes are kept per agent.
	Agent string `json:"agent,omitempty"`
}

// Welcome answers a hello (control plane → agent).
type Welcome struct {
	Protocol     int      `json:"protocol"`
	Capabilities []string `json:"capabilities"`
	Cluster      string   `json:"cluster"`
	// HeartbeatSeconds is the interval the control plane expects; it is a
	// setting, not a contract.
	HeartbeatSeconds int `json:"heartbeatSeconds"`
}

// Inventory is what an agent reports of its cluster.
type Inventory struct {
	AgentVersion      string     `json:"agentVersion"`
	AgentImage        string     `json:"agentImage"`
	Capabilities      []string   `json:"capabilities"`
	KubernetesVersion string     `json:"kubernetesVersion"`
	Nodes             []Node     `json:"nodes"`
	Workloads         []Workload `json:"workloads"`
}

type Node struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
}

type Workload struct {
	Namespace     string `json:"namespace"`
	Name          string `json:"name"`
	Replicas      int    `json:"replicas"`
	ReadyReplicas int    `json:"readyReplicas"`
}

// Heartbeat reports liveness, inventory and the applied revision.
type Heartbeat struct {
	Inventory       Inventory `json:"inventory"`
	AppliedRevision int64     `json:"appliedRevision"`
	// AppliedHash is the hash the agent computed of the state it applied
	// at AppliedRevision (desired.State.Hash, secrets redacted as the
	// control plane hashes them): the control plane confirms the active
	// revision with it instead of assuming it.
	AppliedHash string    `json:"appliedHash,omitempty"`
	SentAt      time.Time `json:"sentAt"`
}

// Desired is a cluster's whole desired state at a revision.
type Desired struct {
	Revision int64         `json:"revision"`
	State    desired.State `json:"state"`
}

// Ack reports how applying a revision went.
type Ack struct {
	Revision int64         `json:"revision"`
	Result   string        `json:"result"` // "applied" or "failed"
	Errors   []ObjectError `json:"errors,omitempty"`
}

type ObjectError struct {
	Object  string `json:"object"`
	Message string `json:"message"`
}

// Command asks the agent to do an operation (control plane → agent). An
// agent may get a command again after a reconnect until it acknowledges
// it: commands are identified by id, and doing one twice must be harmless.
type Command struct {
	ID   string            `json:"id"`
	Kind string            `json:"kind"`
	Args map[string]string `json:"args"`
}

// Stage reports how rolling out a deployment goes (agent → control
// plane): STARTING, PROBING, SWITCHING_TRAFFIC, RETIRING, SUCCEEDED,
// FAILED or ROLLED_BACK, with what happened. A report only moves a
// deployment delivered to the agent's own cluster, forward (or to FAILED
// or ROLLED_BACK before it ended); one sent twice changes nothing.
type Stage struct {
	Deployment string    `json:"deployment"`
	Stage      string    `json:"stage"`
	Message    string    `json:"message"`
	At         time.Time `json:"at"`
}

// AgentStages are the stages an agent reports (model.AgentStages), as
// the protocol carries them.
var AgentStages = func() []string {
	var out []string
	for _, s := range model.AgentStages() {
		out = append(out, string(s))
	}
	return out
}()

// validate bounds a stage report. Whether it may move the deployment it
// names is the control plane's to decide (control.AgentSide.Stage): this only
// keeps out what could never be stored or looked up — a NUL, which
// PostgreSQL text refuses, would end every session that resent it.
func (s *Stage) validate() error {
	if s.Deployment == "" || len(s.Deployment) > 100 {
		return errors.New("deployment must be 1 to 100 characters")
	}
	if strings.ContainsFunc(s.Deployment, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errors.New("deployment holds a space or a control character")
	}
	if !slices.Contains(AgentStages, s.Stage) {
		return fmt.Errorf("stage %q is not one an agent reports", clip(s.Stage))
	}
	if len(s.Message) > 4096 {
		return errors.New("message over 4096 bytes")
	}
	if strings.ContainsRune(s.Message, 0) {
		return errors.New("message holds a NUL character")
	}
	return nil
}

// Builds is every build the cluster's agent should be running: it starts
// those it does not run and deletes the Jobs of any other build.
type Builds struct {
	Builds []BuildJob `json:"builds"`
}

// BuildJob is one build: clone Repository at Commit, build ContextDir with
// Dockerfile using the Builder image, push to Image. Credential, when set,
// reads a private repository; it is never logged. LogFrom is how many log
// lines the control plane holds: a report sends those after it.
type BuildJob struct {
	ID         string    `json:"id"`
	Repository string    `json:"repository"`
	Commit     string    `json:"commit"`
	ContextDir string    `json:"contextDir"`
	Dockerfile string    `json:"dockerfile"`
	Image      string    `json:"image"`
	Credential string    `json:"credential,omitempty"`
	Builder    string    `json:"builder"`
	Deadline   time.Time `json:"deadline"`
	LogFrom    int64     `json:"logFrom"`
}

func (b *Builds) validate() error {
	for _, j := range b.Builds {
		if j.ID == "" || j.Repository == "" || j.Commit == "" || j.Image == "" || j.Builder == "" {
			return errors.New("a build needs an id, a repository, a commit, an image and a builder")
		}
	}
	return nil
}

// Build statuses an agent reports.
const (
	BuildRunning   = "running"
	BuildSucceeded = "succeeded"
	BuildFailed    = "failed"
)

// MaxReportLines bounds the lines of one build report.
const MaxReportLines = 1000

// BuildReport is what a build did since the last report: its log lines
// after line From (numbered From+1 on), and its status; a succeeded build
// names the Digest it pushed, a failed one says why in Message.
type BuildReport struct {
	ID      string    `json:"id"`
	From    int64     `json:"from"`
	Lines   []LogLine `json:"lines,omitempty"`
	Status  string    `json:"status"`
	Digest  string    `json:"digest,omitempty"`
	Message string    `json:"message,omitempty"`
}

// LogLine is a line of a log and when it was read.
type LogLine struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

func (r *BuildReport) validate() error {
	if r.ID == "" || len(r.ID) > 100 || strings.ContainsFunc(r.ID, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		return errors.New("id must be 1 to 100 characters without spaces")
	}
	if r.From < 0 {
		return errors.New("from is negative")
	}
	if len(r.Lines) > MaxReportLines {
		return fmt.Errorf("over %d lines in one report", MaxReportLines)
	}
	for _, l := range r.Lines {
		if len(l.Text) > 64<<10 {
			return errors.New("a line over 64 KiB")
		}
	}
	if r.Status != BuildRunning && r.Status != BuildSucceeded && r.Status != BuildFailed {
		return fmt.Errorf("status %q is not running, succeeded or failed", clip(r.Status))
	}
	if len(r.Digest) > 200 || len(r.Message) > 8192 {
		return errors.New("digest or message too long")
	}
	return nil
}

// CommandAck reports how a command went.
type CommandAck struct {
	ID      string `json:"id"`
	Result  string `json:"result"` // "applied" or "failed"
	Message string `json:"message,omitempty"`
}

const (
	ResultApplied = "applied"
	ResultFailed  = "failed"
)

// ErrMalformed wraps every decoding and validation failure.
var ErrMalformed = errors.New("malformed message")

// Encode wraps a body in its envelope.
func Encode(typ string, body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{Type: typ, Body: b})
}

// Decode reads a frame from an agent and returns its typed body: *Hello,
// *Heartbeat, *Ack, *CommandAck or *Stage. Anything else is ErrMalformed with the
// reason. Unknown fields are refused: the control plane is never older than
// the protocol its agents speak.
func Decode(frame []byte) (any, error) {
	return decode(frame, true, func(typ string) validator {
		switch typ {
		case TypeHello:
			return &Hello{}
		case TypeHeartbeat:
			return &Heartbeat{}
		case TypeAck:
			return &Ack{}
		case TypeCommandAck:
			return &CommandAck{}
		case TypeStage:
			return &Stage{}
		case TypeBuildReport:
			return &BuildReport{}
		case TypeLogs:
			return &Logs{}
		case TypeEvents:
			return &Events{}
		case TypeDrift:
			return &Drift{}
		case TypeLogPositions:
			return &LogPositions{}
		}
		return nil
	})
}

// DecodeServer reads a frame from the control plane (the agent's side):
// *Welcome, *Desired or *Command. Unknown fields are ignored, so that an
// older agent keeps working with a newer control plane.
func DecodeServer(frame []byte) (any, error) {
	return decode(frame, false, func(typ string) validator {
		switch typ {
		case TypeWelcome:
			return &Welcome{}
		case TypeDesired:
			return &Desired{}
		case TypeCommand:
			return &Command{}
		case TypeBuilds:
			return &Builds{}
		case TypeLogPositions:
			return &LogPositions{}
		}
		return nil
	})
}

type validator interface{ validate() error }

func decode(frame []byte, strict bool, bodyFor func(string) validator) (any, error) {
	var env Envelope
	if err := json.Unmarshal(frame, &env); err != nil {
		return nil, fmt.Errorf("%w: not a JSON envelope", ErrMalformed)
	}
	if env.Type == "" {
		return nil, fmt.Errorf("%w: no type", ErrMalformed)
	}
	body := bodyFor(env.Type)
	if body == nil {
		return nil, fmt.Errorf("%w: unknown type %q", ErrMalformed, clip(env.Type))
	}
	if len(env.Body) == 0 {
		return nil, fmt.Errorf("%w: %s without a body", ErrMalformed, env.Type)
	}
	var err error
	if strict {
		dec := json.NewDecoder(bytes.NewReader(env.Body))
		dec.DisallowUnknownFields()
		err = dec.Decode(body)
	} else {
		// No decoder when unknown fields may pass: it would copy the body
		// (a whole desired state) into a buffer of its own first.
		err = json.Unmarshal(env.Body, body)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s body: %v", ErrMalformed, env.Type, err)
	}
	if err := body.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, env.Type, err)
	}
	return body, nil
}

func (w *Welcome) validate() error {
	if w.Protocol <= 0 || w.Cluster == "" {
		return errors.New("protocol and cluster are required")
	}
	if w.HeartbeatSeconds <= 0 {
		return errors.New("heartbeatSeconds must be positive")
	}
	return nil
}

func (d *Desired) validate() error {
	if d.Revision <= 0 {
		return errors.New("revision must be positive")
	}
	if d.State.Cluster == "" {
		return errors.New("the state names no cluster")
	}
	return nil
}

func (c *Command) validate() error {
	if c.ID == "" || len(c.ID) > 100 || c.Kind == "" {
		return errors.New("a command needs an id of 1 to 100 characters and a kind")
	}
	return nil
}

func (h *Hello) validate() error {
	if len(h.Protocols) == 0 || len(h.Protocols) > 16 {
		return errors.New("protocols must list 1 to 16 versions")
	}
	if h.AppliedRevision < 0 {
		return errors.New("appliedRevision is negative")
	}
	return h.Inventory.validate()
}

func (h *Heartbeat) validate() error {
	if h.AppliedRevision < 0 {
		return errors.New("appliedRevision is negative")
	}
	return h.Inventory.validate()
}

func (a *Ack) validate() error {
	if a.Revision <= 0 {
		return errors.New("revision must be positive")
	}
	if a.Result != ResultApplied && a.Result != ResultFailed {
		return fmt.Errorf("result %q is neither applied nor failed", clip(a.Result))
	}
	if len(a.Errors) > 1000 {
		return errors.New("more than 1000 object errors")
	}
	return nil
}

func (a *CommandAck) validate() error {
	if a.ID == "" || len(a.ID) > 100 {
		return errors.New("id must be 1 to 100 characters")
	}
	if a.Result != ResultApplied && a.Result != ResultFailed {
		return fmt.Errorf("result %q is neither applied nor failed", clip(a.Result))
	}
	if len(a.Message) > 4096 {
		return errors.New("message over 4096 bytes")
	}
	return nil
}

func (i *Inventory) validate() error {
	if len(i.AgentVersion) > 100 || len(i.AgentImage) > 500 || len(i.KubernetesVersion) > 100 {
		return errors.New("inventory field too long")
	}
	if len(i.Nodes) > 10000 || len(i.Workloads) > 100000 || len(i.Capabilities) > 100 {
		return errors.New("inventory lists too long")
	}
	return nil
}

// Negotiate picks the protocol version and the capabilities both sides
// share; ok is false when there is no version in common.
func Negotiate(h *Hello) (version int, caps []string, ok bool) {
	if !slices.Contains(h.Protocols, Version) {
		return 0, nil, false
	}
	for _, c := range h.Capabilities {
		if slices.Contains(Known, c) && !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	slices.Sort(caps)
	return Version, caps, true
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Bounds of one logs message.
const (
	MaxLogStreams   = 500
	MaxLogLines     = 5000
	MaxLogLineBytes = 64 << 10
)

// Logs carries lines containers printed, by stream. Each stream names
// what printed it by the environment and service ids of the desired state
// the agent was given and the release number its pod is labelled with
// (the control plane checks them against the cluster), and the pod's
// names.
// Lines of a stream are in the order printed, with the times the API
// server gave them; the control plane keeps those after the last it
// stored for the stream, so a resend is harmless. Gap, when set, says
// why lines are missing before these (the pod went away, the log was
// rotated, a rate cap was hit): it is stored as a marker line.
type Logs struct {
	Streams []LogStream `json:"streams"`
}

type LogStream struct {
	Environment string    `json:"environment"`
	Service     string    `json:"service"`
	Release     int       `json:"release"`
	Process     string    `json:"process"`
	Namespace   string    `json:"namespace"`
	Pod         string    `json:"pod"`
	Container   string    `json:"container"`
	Stream      string    `json:"stream"` // stdout or stderr
	Lines       []LogLine `json:"lines,omitempty"`
	Gap         string    `json:"gap,omitempty"`
}

func (m *Logs) validate() error {
	if len(m.Streams) == 0 || len(m.Streams) > MaxLogStreams {
		return fmt.Errorf("1 to %d streams", MaxLogStreams)
	}
	n := 0
	for _, s := range m.Streams {
		if !names(s.Environment, s.Service, s.Process, s.Namespace, s.Pod, s.Container) {
			return errors.New("a stream needs its environment, service, process, namespace, pod and container (1 to 253 characters without spaces)")
		}
		if s.Release < 1 {
			return errors.New("a stream needs its release number")
		}
		if s.Stream != "stdout" && s.Stream != "stderr" {
			return fmt.Errorf("stream %q is not stdout or stderr", clip(s.Stream))
		}
		if len(s.Lines) == 0 && s.Gap == "" {
			return errors.New("a stream without lines or a gap")
		}
		if len(s.Gap) > 1000 {
			return errors.New("gap over 1000 bytes")
		}
		for _, l := range s.Lines {
			if len(l.Text) > MaxLogLineBytes {
				return fmt.Errorf("a line over %d bytes", MaxLogLineBytes)
			}
		}
		n += len(s.Lines)
	}
	if n > MaxLogLines {
		return fmt.Errorf("over %d lines", MaxLogLines)
	}
	return nil
}

// LogPositions asks (agent → control plane) where the stored log of each
// stream ends, and answers it (control plane → agent, the same ID, the same
// streams in the same order) with At: the time of the last line stored,
// absent when there is none. An agent that starts following a container it
// has sent nothing of in this process asks first, and reads the log from
// that second on, instead of from its start (log-resume.v1). A stream names
// what printed it as in Logs; the answer covers only the asking agent's
// cluster.
type LogPositions struct {
	ID      string        `json:"id"`
	Streams []LogPosition `json:"streams"`
}

type LogPosition struct {
	Environment string     `json:"environment"`
	Service     string     `json:"service"`
	Pod         string     `json:"pod"`
	Container   string     `json:"container"`
	At          *time.Time `json:"at,omitempty"`
}

func (m *LogPositions) validate() error {
	if m.ID == "" || len(m.ID) > 64 || strings.ContainsFunc(m.ID, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		return errors.New("id must be 1 to 64 characters without spaces")
	}
	if len(m.Streams) == 0 || len(m.Streams) > MaxLogStreams {
		return fmt.Errorf("1 to %d streams", MaxLogStreams)
	}
	for _, s := range m.Streams {
		if !names(s.Environment, s.Service, s.Pod, s.Container) {
			return errors.New("a stream needs its environment, service, pod and container (1 to 253 characters without spaces)")
		}
	}
	return nil
}

// names tells whether each is 1 to 253 characters without spaces or
// control characters: what a stream's ids and Kubernetes names can be.
func names(fields ...string) bool {
	for _, f := range fields {
		if f == "" || len(f) > 253 || strings.ContainsFunc(f, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
			return false
		}
	}
	return true
}

// MaxEvents bounds the events of one message.
const MaxEvents = 500

// Events carries occurrences of Kubernetes events of objects the agent
// manages, as they happen: an event's uid and count name an occurrence
// (a repeated event comes again with a higher count). Environment and
// Service are the ids of the desired state the object belongs to
// (Service empty for an object of no service, such as a namespace).
type Events struct {
	Events []Event `json:"events"`
}

type Event struct {
	UID         string    `json:"uid"`
	Count       int32     `json:"count"`
	Type        string    `json:"type"`
	Reason      string    `json:"reason"`
	Message     string    `json:"message"`
	Namespace   string    `json:"namespace"`
	ObjectKind  string    `json:"objectKind"`
	ObjectName  string    `json:"objectName"`
	Source      string    `json:"source,omitempty"`
	FirstAt     time.Time `json:"firstAt"`
	LastAt      time.Time `json:"lastAt"`
	Environment string    `json:"environment"`
	Service     string    `json:"service,omitempty"`
}

func (m *Events) validate() error {
	if len(m.Events) == 0 || len(m.Events) > MaxEvents {
		return fmt.Errorf("1 to %d events", MaxEvents)
	}
	for _, e := range m.Events {
		if e.UID == "" || len(e.UID) > 100 || e.Environment == "" || e.Namespace == "" || e.ObjectKind == "" || e.ObjectName == "" {
			return errors.New("an event needs its uid, environment, namespace and object")
		}
		if e.Count < 1 {
			return errors.New("an event's count starts at 1")
		}
		if len(e.Message) > 8<<10 || len(e.Reason) > 256 || len(e.Type) > 64 || len(e.Source) > 256 {
			return errors.New("an event's message is over 8 KiB, or its reason, type or source too long")
		}
	}
	return nil
}

// Drift is an object the agent manages found changed outside NebulaCtrl
// (its fields no longer hold what the agent applied), before the agent
// applies it again: the fields that changed (dotted paths, at most 50)
// and the field managers other than the agent's that own fields of it.
type Drift struct {
	Kind        string    `json:"kind"`
	Namespace   string    `json:"namespace"`
	Name        string    `json:"name"`
	Fields      []string  `json:"fields"`
	Managers    []string  `json:"managers"`
	Environment string    `json:"environment"`
	Service     string    `json:"service,omitempty"`
	At          time.Time `json:"at"`
}

func (d *Drift) validate() error {
	if d.Kind == "" || d.Name == "" || d.Environment == "" || len(d.Name) > 253 || len(d.Kind) > 64 || len(d.Namespace) > 253 {
		return errors.New("a drift needs its object's kind, name and environment")
	}
	if len(d.Fields) == 0 || len(d.Fields) > 50 || len(d.Managers) > 20 {
		return errors.New("a drift names 1 to 50 fields and at most 20 managers")
	}
	for _, f := range append(slices.Clone(d.Fields), d.Managers...) {
		if f == "" || len(f) > 256 {
			return errors.New("a field or manager of 1 to 256 characters")
		}
	}
	return nil
}
