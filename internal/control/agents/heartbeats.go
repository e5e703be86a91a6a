package agents

import (
	"context"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// heartbeatWindow is how long the first of a round of agents' reports
// waits for others before the round is written in one statement. Each
// report still returns only once it is stored; at 5,000 agents on 15 s
// heartbeats (333 a second) a round holds about 17, where one statement
// and one commit each were most of what heartbeats cost the database and
// a quarter of what they cost the control plane.
const heartbeatWindow = 50 * time.Millisecond

// heartbeats gathers the reports of a replica's agent sessions into
// rounds: the first report of a round waits heartbeatWindow, then writes
// the round's reports together and tells each its outcome.
type heartbeats struct {
	mu   sync.Mutex
	open *heartbeatRound // the round still taking reports; nil between rounds
	// writing is held by the round being written: rounds are written one
	// after the other, so a cluster's reports land in the order given.
	writing sync.Mutex
}

type heartbeatRound struct {
	q     store.Querier // its first caller's: every caller is an agent's side
	beats []store.Heartbeat
	done  chan struct{} // closed once written; err is then set
	err   error
}

// record stores h within the next round and returns the round's outcome,
// or ctx's error if ctx ends first (the round is written all the same).
func (hb *heartbeats) record(ctx context.Context, q store.Querier, h store.Heartbeat) error {
	hb.mu.Lock()
	r, first := hb.open, hb.open == nil
	if first {
		r = &heartbeatRound{q: q, done: make(chan struct{})}
		hb.open = r
	}
	r.beats = append(r.beats, h)
	hb.mu.Unlock()
	if first {
		// The round's writer: its own caller's report, and every other
		// one that arrives within the window. It writes even if its own
		// caller gives up: the others wait on it.
		time.Sleep(heartbeatWindow)
		hb.mu.Lock()
		hb.open = nil
		hb.mu.Unlock()
		hb.writing.Lock()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_, r.err = store.RecordHeartbeats(wctx, r.q, latestPerCluster(r.beats))
		cancel()
		hb.writing.Unlock()
		close(r.done)
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// latestPerCluster keeps each cluster's last report: one statement
// updates a row once.
func latestPerCluster(beats []store.Heartbeat) []store.Heartbeat {
	if len(beats) < 2 {
		return beats
	}
	at := make(map[model.ClusterID]int, len(beats))
	out := beats[:0:0]
	for _, h := range beats {
		if i, ok := at[h.Cluster]; ok {
			out[i] = h
			continue
		}
		at[h.Cluster] = len(out)
		out = append(out, h)
	}
	return out
}
