package protocol

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	good := []string{
		`{"type":"hello","body":{"protocols":[1],"capabilities":["acks.v1"],"appliedRevision":3,"inventory":{"agentVersion":"1","agentImage":"x","capabilities":[],"kubernetesVersion":"v1","nodes":[],"workloads":[]}}}`,
		`{"type":"heartbeat","body":{"inventory":{"agentVersion":"1","agentImage":"","capabilities":null,"kubernetesVersion":"","nodes":null,"workloads":null},"appliedRevision":0,"sentAt":"2026-11-30T10:00:00Z"}}`,
		`{"type":"ack","body":{"revision":4,"result":"failed","errors":[{"object":"Deployment/a","message":"no"}]}}`,
		`{"type":"stage","body":{"deployment":"01a22bbd-97a1-7c2e-9d3f-5e6a7b8c9d0e","stage":"PROBING","message":"waiting for readiness probes: web 0/2 ready\n(pod web-1: ContainersNotReady)","at":"2026-11-30T10:00:00Z"}}`,
		`{"type":"stage","body":{"deployment":"d","stage":"ROLLED_BACK","message":""}}`,
		`{"type":"logPositions","body":{"id":"1","streams":[{"environment":"e","service":"s","pod":"p","container":"c"}]}}`,
	}
	for _, g := range good {
		if _, err := Decode([]byte(g)); err != nil {
			t.Errorf("Decode(%s) = %v, want ok", g, err)
		}
	}
	bad := map[string]string{
		"not json":       `{`,
		"no type":        `{"body":{}}`,
		"unknown type":   `{"type":"teleport","body":{}}`,
		"no body":        `{"type":"ack"}`,
		"unknown field":  `{"type":"ack","body":{"revision":1,"result":"applied","extra":1}}`,
		"bad result":     `{"type":"ack","body":{"revision":1,"result":"maybe"}}`,
		"zero revision":  `{"type":"ack","body":{"revision":0,"result":"applied"}}`,
		"no protocols":   `{"type":"hello","body":{"protocols":[]}}`,
		"negative":       `{"type":"heartbeat","body":{"appliedRevision":-1}}`,
		"wrong type":     `{"type":"ack","body":{"revision":"1","result":"applied"}}`,
		"welcome to cp":  `{"type":"welcome","body":{"protocol":1}}`,
		"desired to cp":  `{"type":"desired","body":{"revision":1}}`,
		"long agent str": `{"type":"heartbeat","body":{"inventory":{"agentVersion":"` + strings.Repeat("v", 101) + `"}}}`,
		// Stages: the control plane's to move a deployment to, not the agent's.
		"stage queued":        `{"type":"stage","body":{"deployment":"d","stage":"QUEUED","message":""}}`,
		"stage delivering":    `{"type":"stage","body":{"deployment":"d","stage":"DELIVERING","message":""}}`,
		"stage awaiting":      `{"type":"stage","body":{"deployment":"d","stage":"AWAITING_APPROVAL","message":""}}`,
		"stage cancelled":     `{"type":"stage","body":{"deployment":"d","stage":"CANCELLED","message":""}}`,
		"stage superseded":    `{"type":"stage","body":{"deployment":"d","stage":"SUPERSEDED","message":""}}`,
		"stage lower case":    `{"type":"stage","body":{"deployment":"d","stage":"succeeded","message":""}}`,
		"stage no deployment": `{"type":"stage","body":{"deployment":"","stage":"STARTING","message":""}}`,
		"stage long id":       `{"type":"stage","body":{"deployment":"` + strings.Repeat("d", 101) + `","stage":"STARTING"}}`,
		"stage id with NUL":   `{"type":"stage","body":{"deployment":"d\u0000","stage":"STARTING"}}`,
		"stage id with space": `{"type":"stage","body":{"deployment":"a b","stage":"STARTING"}}`,
		"stage message NUL":   `{"type":"stage","body":{"deployment":"d","stage":"STARTING","message":"a\u0000b"}}`,
		"stage long message":  `{"type":"stage","body":{"deployment":"d","stage":"FAILED","message":"` + strings.Repeat("m", 4097) + `"}}`,
		"stage extra field":   `{"type":"stage","body":{"deployment":"d","stage":"STARTING","cluster":"c"}}`,
		"stage bad time":      `{"type":"stage","body":{"deployment":"d","stage":"STARTING","at":"yesterday"}}`,
		// Where logs end: an id, 1 to 500 streams, each named whole.
		"positions no id":      `{"type":"logPositions","body":{"id":"","streams":[{"environment":"e","service":"s","pod":"p","container":"c"}]}}`,
		"positions long id":    `{"type":"logPositions","body":{"id":"` + strings.Repeat("i", 65) + `","streams":[{"environment":"e","service":"s","pod":"p","container":"c"}]}}`,
		"positions no streams": `{"type":"logPositions","body":{"id":"1","streams":[]}}`,
		"positions no pod":     `{"type":"logPositions","body":{"id":"1","streams":[{"environment":"e","service":"s","pod":"","container":"c"}]}}`,
		"positions pod space":  `{"type":"logPositions","body":{"id":"1","streams":[{"environment":"e","service":"s","pod":"p q","container":"c"}]}}`,
		"positions extra":      `{"type":"logPositions","body":{"id":"1","streams":[{"environment":"e","service":"s","pod":"p","container":"c","cluster":"x"}]}}`,
		"positions too many":   `{"type":"logPositions","body":{"id":"1","streams":[` + strings.Repeat(`{"environment":"e","service":"s","pod":"p","container":"c"},`, MaxLogStreams) + `{"environment":"e","service":"s","pod":"p","container":"c"}]}}`,
	}
	for name, b := range bad {
		if _, err := Decode([]byte(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode = %v, want ErrMalformed", name, err)
		}
	}
}

func TestNegotiate(t *testing.T) {
	v, caps, ok := Negotiate(&Hello{Protocols: []int{2, 1}, Capabilities: []string{"acks.v1", "x", "acks.v1"}})
	if !ok || v != 1 || len(caps) != 1 || caps[0] != CapAcks {
		t.Errorf("Negotiate = %d %v %v, want 1 [acks.v1] true", v, caps, ok)
	}
	if _, _, ok := Negotiate(&Hello{Protocols: []int{2}}); ok {
		t.Error("negotiated without a common version")
	}
}

// FuzzDecode: no frame makes the decoder panic, and what it accepts
// validates. A stage report it accepts names a deployment by an id that
// can be looked up, reports a stage only an agent reports, and carries a
// message that can be stored.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","body":{"protocols":[1]}}`,
		`{"type":"ack","body":{"revision":1,"result":"applied","errors":[{"object":"a","message":"b"}]}}`,
		`{"type":"heartbeat","body":{"appliedRevision":2}}`,
		`{"type":"welcome","body":{"protocol":1,"cluster":"c","heartbeatSeconds":15,"capabilities":[]}}`,
		`{"type":"desired","body":{"revision":3,"state":{"cluster":"c","namespaces":[]}}}`,
		`{"type":"command","body":{"id":"i","kind":"RESYNC","args":{}}}`,
		`{"type":"stage","body":{"deployment":"01a22bbd-97a1-7c2e-9d3f-5e6a7b8c9d0e","stage":"STARTING","message":"started release 3 of api: web","at":"2026-11-30T10:00:00Z"}}`,
		`{"type":"stage","body":{"deployment":"d","stage":"SUCCEEDED","message":"release 3 is live"}}`,
		`{"type":"stage","body":{"deployment":"d","stage":"ROLLED_BACK","message":"readiness probes did not pass"}}`,
		`{"type":"stage","body":{"deployment":"d","stage":"AWAITING_APPROVAL","message":""}}`,
		`{"type":"stage","body":{"deployment":"d","stage":"DELIVERING","message":""}}`,
		`{"type":"stage","body":{"deployment":"d\u0000","stage":"STARTING"}}`,
		`{"type":"stage","body":{"deployment":"d","stage":"FAILED","message":"\u0000"}}`,
		`{"type":"stage","body":{"deployment":"","stage":"PROBING"}}`,
		`{"type":"stage","body":{"deployment":"d","stage":"PROBING","extra":1}}`,
		`{"type":"x"}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		// Both directions: the control plane's decoder of agent frames and
		// the agent's decoder of control-plane frames.
		for _, decode := range []func([]byte) (any, error){Decode, DecodeServer} {
			msg, err := decode(frame)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("error %v is not ErrMalformed", err)
				}
				continue
			}
			if v, ok := msg.(validator); !ok || v.validate() != nil {
				t.Fatalf("accepted an invalid message %#v", msg)
			}
			if s, ok := msg.(*Stage); ok {
				if why := stageInvariant(s); why != "" {
					t.Fatalf("accepted a stage report %#v: %s", s, why)
				}
			}
		}
	})
}

// stageInvariant says what is wrong with an accepted stage report, written
// apart from validate so that the fuzzer checks the rules, not the code.
func stageInvariant(s *Stage) string {
	switch s.Stage {
	case "STARTING", "PROBING", "SWITCHING_TRAFFIC", "RETIRING", "SUCCEEDED", "FAILED", "ROLLED_BACK":
	default:
		return "a stage no agent reports"
	}
	if n := len(s.Deployment); n < 1 || n > 100 {
		return "a deployment id of " + strconv.Itoa(n) + " bytes"
	}
	for _, r := range s.Deployment {
		if r <= ' ' || r == 0x7f {
			return "a control character or space in the deployment id"
		}
	}
	if len(s.Message) > 4096 {
		return "a message over 4096 bytes"
	}
	if strings.ContainsRune(s.Message, 0) {
		return "a NUL in the message"
	}
	return ""
}

func TestDecodeServer(t *testing.T) {
	for frame, want := range map[string]string{
		`{"type":"desired","body":{"revision":0,"state":{"cluster":"c"}}}`: "revision must be positive",
		`{"type":"desired","body":{"revision":2,"state":{}}}`:              "names no cluster",
		`{"type":"welcome","body":{"protocol":1,"cluster":"c"}}`:           "heartbeatSeconds must be positive",
		`{"type":"command","body":{"id":"","kind":"RESYNC"}}`:              "needs an id",
		`{"type":"hello","body":{"protocols":[1]}}`:                        `unknown type "hello"`,
	} {
		_, err := DecodeServer([]byte(frame))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeServer(%s) = %v, want an error containing %q", frame, err, want)
		}
	}
	// An answer of where logs end reaches the agent, times and all.
	msg, err := DecodeServer([]byte(`{"type":"logPositions","body":{"id":"3","streams":[{"environment":"e","service":"s","pod":"p","container":"c","at":"2026-12-01T10:00:00.123456Z"},{"environment":"e","service":"s","pod":"q","container":"c"}]}}`))
	if p, ok := msg.(*LogPositions); err != nil || !ok || p.ID != "3" || p.Streams[0].At == nil || p.Streams[0].At.Nanosecond() != 123456000 || p.Streams[1].At != nil {
		t.Errorf("an answer of where logs end: %#v, %v", msg, err)
	}
	msg, err = DecodeServer([]byte(`{"type":"desired","body":{"revision":7,"future":true,"state":{"cluster":"c","namespaces":[]}}}`))
	if d, ok := msg.(*Desired); err != nil || !ok || d.Revision != 7 {
		t.Errorf("a desired state with an unknown field: %#v, %v", msg, err)
	}
}
