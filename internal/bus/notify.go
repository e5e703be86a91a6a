package bus

import (
	"context"
	"strings"

	"github.com/nebulactrl/nebula/internal/store"
	"github.com/nebulactrl/nebula/internal/store/postgres"
)

// Channel is the PostgreSQL notification channel.
const Channel = "nebula"

// maxPayload keeps each notification well below PostgreSQL's 8000 bytes.
const maxPayload = 4000

// Notifier is how the control plane tells of changes.
type Notifier interface {
	// InTx notes notes inside the transaction q, to be told when it
	// commits and never if it rolls back.
	InTx(ctx context.Context, q store.Querier, notes []Note) error
	// Committed tells the notes InTx noted once their transaction
	// committed.
	Committed(notes []Note)
	// Now tells topics of a change already committed.
	Now(ctx context.Context, topics []string)
}

// Memory delivers on this process only: the embedded store's single
// replica.
type Memory struct{ B *Bus }

func (Memory) InTx(context.Context, store.Querier, []Note) error { return nil }
func (m Memory) Committed(notes []Note)                          { m.B.DeliverNotes(notes) }
func (m Memory) Now(_ context.Context, topics []string)          { m.B.Deliver(topics...) }

// Postgres sends notes with pg_notify; every replica's listener (Listen)
// delivers them. With B, this replica's own notes are delivered to B as
// soon as their transaction committed, and its listener passes over them
// when PostgreSQL brings them back (they carry B's origin): a subscriber
// here does not wait for the round trip. Without B, this replica learns
// of its notes through its listener, as the others do.
type Postgres struct {
	// Q runs Now's notifications (the pool).
	Q store.Querier
	// B is this replica's bus; nil: notes come back through the listener.
	B *Bus
	// OnError is told of a notification that could not be sent.
	OnError func(error)
}

// originLine starts a payload sent by the bus of origin.
func originLine(origin string) string { return "from:" + origin }

func (p Postgres) InTx(ctx context.Context, q store.Querier, notes []Note) error {
	prefix := ""
	if p.B != nil {
		prefix = originLine(p.B.origin)
	}
	for _, payload := range payloads(prefix, notes) {
		if err := postgres.Notify(ctx, q, Channel, payload); err != nil {
			return err
		}
	}
	return nil
}

func (p Postgres) Committed(notes []Note) {
	if p.B != nil {
		p.B.DeliverNotes(notes)
	}
}

func (p Postgres) Now(ctx context.Context, topics []string) {
	notes := notesOf(topics)
	if err := p.InTx(ctx, p.Q, notes); err != nil {
		if p.OnError != nil {
			p.OnError(err)
		}
		return
	}
	p.Committed(notes)
}

// received is what a listener of b delivers of a payload: its notes, none
// when b sent it itself (delivered at commit). A line is a topic, or a
// topic, a tab and its hint.
func received(b *Bus, payload string) []Note {
	lines := strings.Split(payload, "\n")
	if first := lines[0]; strings.HasPrefix(first, "from:") {
		if first == originLine(b.origin) {
			return nil
		}
		lines = lines[1:]
	}
	notes := make([]Note, len(lines))
	for i, l := range lines {
		notes[i].Topic, notes[i].Hint, _ = strings.Cut(l, "\t")
	}
	return notes
}

// payloads writes notes a line each into notifications under maxPayload,
// each starting with the line prefix when there is one. A hint goes on its
// topic's line after a tab, unless it holds a tab or a newline (hints are
// JSON, which writes neither) or its line would not fit in a notification:
// then the topic goes alone, and its followers read.
func payloads(prefix string, notes []Note) []string {
	var out []string
	var b strings.Builder
	start := func() {
		b.Reset()
		if prefix != "" {
			b.WriteString(prefix)
		}
	}
	start()
	empty := b.Len()
	room := maxPayload - len(prefix) - 1
	for _, n := range notes {
		if len(n.Topic) > room {
			continue // never produced: topics are a word and an id
		}
		line := n.Topic
		if n.Hint != "" && len(n.Topic)+1+len(n.Hint) <= room && !strings.ContainsAny(n.Hint, "\t\n") {
			line = n.Topic + "\t" + n.Hint
		}
		if b.Len() > empty && b.Len()+1+len(line) > maxPayload {
			out = append(out, b.String())
			start()
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	if b.Len() > empty {
		out = append(out, b.String())
	}
	return out
}
