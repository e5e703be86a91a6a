package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/nebulactrl/nebula/internal/model"
)

// The canonical JSON of a state, written by hand: byte for byte what
// encoding/json's Marshal writes for these types (the hashes, stored and
// compared across versions, depend on it; TestEncodingMatchesMarshal
// holds it to that on the golden states and on strings of every kind),
// without reflection, without a copy of the state to redact, into a
// buffer kept between calls. Marshal spent half of compile+hash growing
// and clearing its buffer.

// sizeHint is the size of the last state encoded, so that Shown allocates
// its bytes once at about the right size rather than growing to it by a
// quarter at a time, copying each time.
var sizeHint atomic.Int64

// chunk is how much of a state Hash encodes before it hashes it: the
// state's bytes are never all held at once.
const chunk = 64 << 10

// chunks keeps Hash's chunk buffers.
var chunks = sync.Pool{New: func() any { b := make([]byte, 0, 2*chunk); return &b }}

// Hash is the state's fingerprint: SHA-256 of its canonical JSON with
// secrets redacted (their versions stand for their values), so that a hash
// shown to people gives away nothing about a secret.
func (s State) Hash() string {
	h := sha256.New()
	bp := chunks.Get().(*[]byte)
	b := appendState((*bp)[:0], &s, true, func(b []byte) []byte {
		if len(b) < chunk {
			return b
		}
		h.Write(b)
		return b[:0]
	})
	h.Write(b)
	*bp = b[:0]
	chunks.Put(bp)
	return hex.EncodeToString(h.Sum(nil))
}

// Shown is the state as it may be stored and shown — secrets redacted — in
// canonical JSON (encoding/json's, written here by hand), with its hash.
// The bytes are written once into a buffer of about the right size, which
// becomes the string (as strings.Builder does): nothing writes to it after.
func (s State) Shown() (string, string) {
	hint := int(sizeHint.Load())
	b := appendState(make([]byte, 0, hint+hint/8), &s, true, nil)
	sizeHint.Store(int64(len(b)))
	return unsafe.String(unsafe.SliceData(b), len(b)), hashOf(b)
}

// appendState appends the state's JSON to b; flush, when given, may take
// what is written so far after each namespace (and returns what to go on
// appending to).
func appendState(b []byte, s *State, redact bool, flush func([]byte) []byte) []byte {
	b = append(b, `{"cluster":`...)
	b = appendString(b, string(s.Cluster))
	b = append(b, `,"namespaces":`...)
	switch {
	case redact && s.Namespaces == nil:
		b = append(b, "[]"...) // Redact's copy is never nil
	case s.Namespaces == nil:
		b = append(b, "null"...)
	default:
		b = append(b, '[')
		for i := range s.Namespaces {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNamespace(b, &s.Namespaces[i], redact)
			if flush != nil {
				b = flush(b)
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"unplaced":`...)
	b = appendList(b, s.Unplaced, appendUnplaced)
	return append(b, '}')
}

func appendNamespace(b []byte, ns *Namespace, redact bool) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, ns.Name)
	b = append(b, `,"project":`...)
	b = appendString(b, ns.Project)
	b = append(b, `,"environment":`...)
	b = appendString(b, ns.Environment)
	b = append(b, `,"environmentId":`...)
	b = appendString(b, string(ns.EnvID))
	b = append(b, `,"services":`...)
	b = appendList(b, ns.Services, func(b []byte, s *Service) []byte { return appendService(b, s, redact) })
	b = append(b, `,"held":`...)
	b = appendList(b, ns.Held, appendHeld)
	return append(b, '}')
}

func appendService(b []byte, s *Service, redact bool) []byte {
	if redact && s.shown != nil {
		return append(b, s.shown...)
	}
	b = append(b, `{"name":`...)
	b = appendString(b, s.Name)
	b = append(b, `,"id":`...)
	b = appendString(b, string(s.ID))
	b = append(b, `,"release":`...)
	b = strconv.AppendInt(b, int64(s.Release), 10)
	b = append(b, `,"releaseId":`...)
	b = appendString(b, string(s.ReleaseID))
	if s.Deployment != "" {
		b = append(b, `,"deployment":`...)
		b = appendString(b, string(s.Deployment))
	}
	b = append(b, `,"image":`...)
	b = appendString(b, s.Image)
	b = append(b, `,"processes":`...)
	b = appendList(b, s.Processes, appendProcess)
	b = append(b, `,"env":`...)
	b = appendList(b, s.Env, func(b []byte, v *EnvVar) []byte { return appendEnvVar(b, v, redact) })
	b = append(b, `,"domains":`...)
	b = appendList(b, s.Domains, appendDomain)
	return append(b, '}')
}

func appendProcess(b []byte, p *Process) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, p.Name)
	b = append(b, `,"command":`...)
	b = appendList(b, p.Command, func(b []byte, s *string) []byte { return appendString(b, *s) })
	b = append(b, `,"replicas":`...)
	b = strconv.AppendInt(b, int64(p.Replicas), 10)
	if p.Port != nil {
		b = append(b, `,"port":`...)
		b = strconv.AppendInt(b, int64(*p.Port), 10)
	}
	if p.Probe != nil {
		b = append(b, `,"readinessProbe":`...)
		b = appendProbe(b, p.Probe)
	}
	return append(b, '}')
}

func appendProbe(b []byte, p *model.Probe) []byte {
	b = append(b, '{')
	if p.Path != nil {
		b = append(b, `"path":`...)
		b = appendString(b, *p.Path)
		b = append(b, ',')
	}
	b = append(b, `"port":`...)
	b = strconv.AppendInt(b, int64(p.Port), 10)
	b = append(b, `,"initialDelaySeconds":`...)
	b = strconv.AppendInt(b, int64(p.InitialDelaySeconds), 10)
	b = append(b, `,"periodSeconds":`...)
	b = strconv.AppendInt(b, int64(p.PeriodSeconds), 10)
	return append(b, '}')
}

func appendEnvVar(b []byte, v *EnvVar, redact bool) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, v.Name)
	b = append(b, `,"value":`...)
	if redact && v.Secret {
		b = appendString(b, Redacted)
	} else {
		b = appendString(b, v.Value)
	}
	if v.Secret {
		b = append(b, `,"secret":true`...)
	}
	if v.Version != "" {
		b = append(b, `,"version":`...)
		b = appendString(b, v.Version)
	}
	return append(b, '}')
}

func appendDomain(b []byte, d *Domain) []byte {
	b = append(b, `{"host":`...)
	b = appendString(b, d.Host)
	b = append(b, `,"process":`...)
	b = appendString(b, d.Process)
	b = append(b, `,"port":`...)
	b = strconv.AppendInt(b, int64(d.Port), 10)
	return append(b, '}')
}

func appendHeld(b []byte, h *Held) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, h.Name)
	b = append(b, `,"id":`...)
	b = appendString(b, string(h.ID))
	b = append(b, `,"reason":`...)
	b = appendString(b, h.Reason)
	return append(b, '}')
}

func appendUnplaced(b []byte, u *Unplaced) []byte {
	b = append(b, `{"project":`...)
	b = appendString(b, u.Project)
	b = append(b, `,"environment":`...)
	b = appendString(b, u.Environment)
	b = append(b, `,"reason":`...)
	b = appendString(b, u.Reason)
	return append(b, '}')
}

// appendList writes a slice as encoding/json does: null when nil.
func appendList[T any](b []byte, items []T, each func([]byte, *T) []byte) []byte {
	if items == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, &items[i])
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does with HTML escaping (its
// default): <, > and & as \u003c…, control characters, invalid UTF-8 as
// \ufffd, and U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// hashOf is the hex SHA-256 of b.
func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
