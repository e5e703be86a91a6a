package model

import (
	"fmt"
	"io"
	"time"
)

// What runs, seen from the API (issue 13): the lines the containers of a
// service print and the Kubernetes events of the objects the agent
// manages, kept for a retention (7 days by default).

// LogStream is where a line came from.
type LogStream int8

const (
	// LogMarker is a line of the control plane's own: a gap in a stream
	// (a pod gone, logs rotated, a rate cap hit), or a cut line.
	LogMarker LogStream = 0
	LogStdout LogStream = 1
	LogStderr LogStream = 2
)

// LogLine is a line a container printed, attributed to what ran it. Seq
// numbers the lines of one service in one environment from 1, in the
// order they were stored: the cursor of a reader.
type LogLine struct {
	Seq           int64
	At            time.Time
	TenantID      TenantID
	ProjectID     ProjectID
	EnvironmentID EnvironmentID
	ServiceID     ServiceID
	ReleaseID     ReleaseID
	ClusterID     ClusterID
	Process       string
	Pod           string
	Container     string
	Stream        LogStream
	Line          string
}

func (l *LogLine) Scope() Scope { return Scope{Tenant: l.TenantID, Project: l.ProjectID} }

// KubeEvent is an occurrence of a Kubernetes event of an object the agent
// manages: the event's uid and its count name it (a repeated event is a
// new occurrence with a higher count). Project, environment and service
// are empty for an object outside a service (a namespace).
type KubeEvent struct {
	ID            int64
	At            time.Time // when it last happened
	FirstAt       time.Time
	TenantID      TenantID
	ClusterID     ClusterID
	ProjectID     ProjectID
	EnvironmentID EnvironmentID
	ServiceID     ServiceID
	UID           string
	Count         int
	Type          string // Normal or Warning
	Reason        string
	Message       string
	Namespace     string
	ObjectKind    string
	ObjectName    string
	Source        string
}

func (e *KubeEvent) Scope() Scope { return Scope{Tenant: e.TenantID, Project: e.ProjectID} }

var logStreamNames = map[LogStream]string{LogMarker: "MARKER", LogStdout: "STDOUT", LogStderr: "STDERR"}

func (s LogStream) String() string { return logStreamNames[s] }

func (s LogStream) MarshalGQL(w io.Writer) { fmt.Fprintf(w, "%q", s.String()) }

func (s *LogStream) UnmarshalGQL(x any) error {
	str, ok := x.(string)
	if ok {
		for k, v := range logStreamNames {
			if v == str {
				*s = k
				return nil
			}
		}
	}
	return fmt.Errorf("%v is not a LogStream (STDOUT, STDERR, MARKER)", x)
}

// Drift is an object the agent manages found changed outside NebulaCtrl,
// before the agent applied it again: which fields no longer held what the
// agent set, and the field managers that own them.
type Drift struct {
	ID            int64
	TenantID      TenantID
	ClusterID     ClusterID
	ProjectID     ProjectID
	EnvironmentID EnvironmentID
	ServiceID     ServiceID
	Kind          string
	Namespace     string
	Name          string
	Fields        []string
	Managers      []string
	DetectedAt    time.Time
}
