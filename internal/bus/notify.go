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
	// InTx notes topics inside the transaction q, to be told when it
	// commits and never if it rolls back.
	InTx(ctx context.Context, q store.Querier, topics []string) error
	// Committed tells the topics InTx noted once their transaction
	// committed.
	Committed(topics []string)
	// Now tells topics of a change already committed.
	Now(ctx context.Context, topics []string)
}

// Memory delivers on this process only: the embedded store's single
// replica.
type Memory struct{ B *Bus }

func (Memory) InTx(context.Context, store.Querier, []string) error { return nil }
func (m Memory) Committed(topics []string)                         { m.B.Deliver(topics...) }
func (m Memory) Now(_ context.Context, topics []string)            { m.B.Deliver(topics...) }

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

func (p Postgres) InTx(ctx context.Context, q store.Querier, topics []string) error {
	prefix := ""
	if p.B != nil {
		prefix = originLine(p.B.origin)
	}
	for _, payload := range payloads(prefix, topics) {
		if err := postgres.Notify(ctx, q, Channel, payload); err != nil {
			return err
		}
	}
	return nil
}

func (p Postgres) Committed(topics []string) {
	if p.B != nil {
		p.B.Deliver(topics...)
	}
}

func (p Postgres) Now(ctx context.Context, topics []string) {
	if err := p.InTx(ctx, p.Q, topics); err != nil {
		if p.OnError != nil {
			p.OnError(err)
		}
		return
	}
	p.Committed(topics)
}

// received is what a listener of b delivers of a payload: its topics,
// none when b sent it itself (delivered at commit).
func received(b *Bus, payload string) []string {
	topics := strings.Split(payload, "\n")
	if first := topics[0]; strings.HasPrefix(first, "from:") {
		if first == originLine(b.origin) {
			return nil
		}
		topics = topics[1:]
	}
	return topics
}

// payloads joins topics by newlines into notifications under maxPayload,
// each starting with the line prefix when there is one.
func payloads(prefix string, topics []string) []string {
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
	for _, t := range topics {
		if len(t) > maxPayload-len(prefix)-1 {
			continue // never produced: topics are a word and an id
		}
		if b.Len() > empty && b.Len()+1+len(t) > maxPayload {
			out = append(out, b.String())
			start()
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	if b.Len() > empty {
		out = append(out, b.String())
	}
	return out
}
