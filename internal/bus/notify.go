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
// delivers them, this one's included.
type Postgres struct {
	// Q runs Now's notifications (the pool).
	Q store.Querier
	// OnError is told of a notification that could not be sent.
	OnError func(error)
}

func (p Postgres) InTx(ctx context.Context, q store.Querier, topics []string) error {
	for _, payload := range payloads(topics) {
		if err := postgres.Notify(ctx, q, Channel, payload); err != nil {
			return err
		}
	}
	return nil
}

func (Postgres) Committed([]string) {}

func (p Postgres) Now(ctx context.Context, topics []string) {
	if err := p.InTx(ctx, p.Q, topics); err != nil && p.OnError != nil {
		p.OnError(err)
	}
}

// payloads joins topics by newlines into notifications under maxPayload.
func payloads(topics []string) []string {
	var out []string
	var b strings.Builder
	for _, t := range topics {
		if len(t) > maxPayload {
			continue // never produced: topics are a word and an id
		}
		if b.Len() > 0 && b.Len()+1+len(t) > maxPayload {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}
