package bus

import (
	"context"
	"log/slog"
	"time"

	"github.com/nebulactrl/nebula/internal/store/postgres"
)

// Listen keeps a dedicated PostgreSQL connection LISTENing on Channel and
// delivers what arrives to b, until ctx ends. When the connection drops it
// reconnects (backing off up to 2 s) and then resyncs every subscription,
// since notes sent meanwhile are lost. ready is closed once the first
// LISTEN is in place.
func Listen(ctx context.Context, url string, b *Bus, log *slog.Logger, ready chan<- struct{}) {
	wait := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := listenOnce(ctx, url, b, func() {
			if first {
				close(ready)
				first = false
			} else {
				// Whatever was noted while no one listened is re-read.
				b.Resync()
				log.Info("notification listener reconnected; subscribers resync")
			}
			wait = 100 * time.Millisecond
		})
		if ctx.Err() != nil {
			return
		}
		log.Warn("notification listener lost its connection; reconnecting", "error", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, 2*time.Second)
	}
}

func listenOnce(ctx context.Context, url string, b *Bus, listening func()) error {
	return postgres.ListenOnce(ctx, url, Channel, listening, func(payload string) {
		if notes := received(b, payload); len(notes) > 0 {
			b.DeliverNotes(notes)
		}
	})
}
