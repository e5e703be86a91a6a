// Package bus tells the parts of the control plane — on this replica and,
// with PostgreSQL, on every replica — that something changed. A note is a
// topic naming one object ("deployment:<id>", "cluster:<id>", …): whoever
// follows a topic re-reads the object through authorization, from where
// it got to. A note may be delivered twice or coalesced with others; a
// subscriber that may have missed notes (a listener that reconnected) is
// told to resync, i.e. to re-read.
//
// A note may carry a hint: what the change appended for the topic's
// followers (a deployment's new events), so that a follower that is
// exactly where the hint starts, and whose reader may see the scope the
// hint names, can send it without reading. A hint is only ever a shortcut:
// it can be missing (too large to send, a note without one, a resync), and
// a follower that cannot use it reads as it would without it.
//
// The embedded store runs one replica: notes go from the commit to the
// subscribers in memory. PostgreSQL runs several: notes are sent with
// pg_notify inside the transaction that made the change (delivered at
// commit, dropped on rollback) and every replica LISTENs (listen.go).
package bus

import (
	"crypto/rand"
	"sync"

	"github.com/nebulactrl/nebula/internal/wake"
)

// Topics.
func Deployment(id string) string  { return "deployment:" + id }
func Environment(id string) string { return "environment:" + id }

// ChangeSets is noted when a change set of the project changes.
func ChangeSets(project string) string { return "changesets:" + project }
func Cluster(id string) string         { return "cluster:" + id }
func Revision(cluster string) string {
	return "revision:" + cluster
}
func Commands(cluster string) string { return "commands:" + cluster }
func Tokens(cluster string) string   { return "tokens:" + cluster }

// Build is noted when a build's status or log moves; Builds when the set
// of builds a cluster should run changes.
func Build(id string) string       { return "build:" + id }
func Builds(cluster string) string { return "builds:" + cluster }

// Logs is noted when lines of a service in an environment were stored.
func Logs(env, service string) string { return "logs:" + env + ":" + service }

// Events is noted when Kubernetes events of an environment were stored.
func Events(env string) string { return "events:" + env }

// User is noted when a user's access changes: a role, a membership, a
// revoked API token. Their connections check their token again.
func User(id string) string { return "user:" + id }

// Secrets is the topic of a change that may have changed a tenant's
// secrets (a variable, a service's Git credential): the agents' sessions
// of the tenant rebuild what they redact from logs.
func Secrets(tenant string) string { return "secrets:" + tenant }

// Bus fans notes out to subscriptions of this process.
type Bus struct {
	mu     sync.Mutex
	topics map[string]map[*Sub]struct{}
	subs   map[*Sub]struct{}
	// observers see every delivered topic, and nil for a resync.
	observers []func(topics []string)
	// origin tells this process's notes apart when PostgreSQL brings
	// them back: they were delivered here at commit (see Postgres).
	origin string
}

// Observe calls fn with the topics of every delivery, and with nil when
// notes may have been lost (a resync), for caches of this process that
// must drop what a change made stale. fn runs inside the bus's lock: it
// must be quick and must not call the bus.
func (b *Bus) Observe(fn func(topics []string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.observers = append(b.observers, fn)
}

// New makes an empty bus.
func New() *Bus {
	return &Bus{topics: map[string]map[*Sub]struct{}{}, subs: map[*Sub]struct{}{}, origin: rand.Text()}
}

// Sub is a subscription to some topics. C receives a value whenever one of
// them was noted (several notes may become one) or a resync is due; it
// never blocks the bus.
type Sub struct {
	C      <-chan struct{}
	wake   wake.Signal
	fn     func()            // instead of C (SubscribeFunc)
	hinted func(hint string) // instead of C (SubscribeHints)
	b      *Bus
	topics []string
	once   sync.Once
}

// Note is a noted topic with its hint ("": none).
type Note struct{ Topic, Hint string }

// Subscribe follows topics until Close.
func (b *Bus) Subscribe(topics ...string) *Sub {
	w := wake.New()
	return b.add(&Sub{C: w.C(), wake: w, b: b, topics: topics})
}

// SubscribeFunc follows topics until Close by calling fn, instead of
// waking a channel: a follower that waits on no goroutine of its own (an
// idle subscription holds none). fn runs inside the bus's lock, for each
// noted topic it follows and on every resync: it must be quick (start work
// elsewhere) and must not call the bus. The Sub's C is nil.
func (b *Bus) SubscribeFunc(fn func(), topics ...string) *Sub {
	return b.add(&Sub{fn: fn, b: b, topics: topics})
}

// SubscribeHints is SubscribeFunc with each note's hint: fn gets "" for a
// note without one and on a resync.
func (b *Bus) SubscribeHints(fn func(hint string), topics ...string) *Sub {
	return b.add(&Sub{hinted: fn, b: b, topics: topics})
}

func (b *Bus) add(s *Sub) *Sub {
	topics := s.topics
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs[s] = struct{}{}
	for _, t := range topics {
		if b.topics[t] == nil {
			b.topics[t] = map[*Sub]struct{}{}
		}
		b.topics[t][s] = struct{}{}
	}
	return s
}

// Close stops the subscription.
func (s *Sub) Close() {
	s.once.Do(func() {
		b := s.b
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, s)
		for _, t := range s.topics {
			delete(b.topics[t], s)
			if len(b.topics[t]) == 0 {
				delete(b.topics, t)
			}
		}
	})
}

// poke wakes the subscriber: one pending wake covers every note since.
func (s *Sub) poke(hint string) {
	switch {
	case s.fn != nil:
		s.fn()
	case s.hinted != nil:
		s.hinted(hint)
	default:
		s.wake.Poke()
	}
}

// Deliver wakes the subscriptions of the topics: notes without hints.
func (b *Bus) Deliver(topics ...string) { b.DeliverNotes(notesOf(topics)) }

// notesOf is topics as notes without hints.
func notesOf(topics []string) []Note {
	notes := make([]Note, len(topics))
	for i, t := range topics {
		notes[i].Topic = t
	}
	return notes
}

// DeliverNotes wakes the subscriptions of the notes' topics, with their
// hints.
func (b *Bus) DeliverNotes(notes []Note) {
	topics := make([]string, len(notes))
	for i, n := range notes {
		topics[i] = n.Topic
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, fn := range b.observers {
		fn(topics)
	}
	for _, n := range notes {
		for s := range b.topics[n.Topic] {
			s.poke(n.Hint)
		}
	}
}

// Resync wakes every subscription: notes may have been lost.
func (b *Bus) Resync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, fn := range b.observers {
		fn(nil)
	}
	for s := range b.subs {
		s.poke("")
	}
}

// Following counts the subscriptions of one topic.
func (b *Bus) Following(topic string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.topics[topic])
}

// Subscriptions counts the live subscriptions, for metrics.
func (b *Bus) Subscriptions() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
