package control_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/store"
)

// notifications records what a transaction writes as its notification.
type notifications struct {
	bus.Memory
	mu     sync.Mutex
	writes [][]string // the topics of each
	notes  [][]bus.Note
}

// reset forgets what was recorded so far.
func (n *notifications) reset() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.writes, n.notes = nil, nil
}

func (n *notifications) InTx(_ context.Context, _ store.Querier, notes []bus.Note) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	topics := make([]string, len(notes))
	for i, note := range notes {
		topics[i] = note.Topic
	}
	n.writes = append(n.writes, topics)
	n.notes = append(n.notes, slices.Clone(notes))
	return nil
}

// A transaction's notes are written once, without repeats, however many
// times it noted them: a deploy that supersedes a deployment moves two
// deployments, each move noting the environment.
func TestTransactionNotesInOneNotification(t *testing.T) {
	b := bus.New()
	rec := &notifications{Memory: bus.Memory{B: b}}
	s := controltest.New(t, core.WithBus(b, rec))
	_, first := s.Deploy(t, 1)
	rec.reset()
	_, second := s.Deploy(t, 2)
	if len(rec.writes) != 1 {
		t.Fatalf("the deploy wrote %d notifications (%q), want 1", len(rec.writes), rec.writes)
	}
	got := rec.writes[0]
	for _, want := range []string{bus.Deployment(string(first.ID)), bus.Deployment(string(second.ID)), bus.Environment(string(s.Env.ID))} {
		if !slices.Contains(got, want) {
			t.Errorf("the notification %q lacks %s", got, want)
		}
	}
	if d := slices.Compact(slices.Sorted(slices.Values(got))); len(d) != len(got) {
		t.Errorf("the notification %q repeats topics", got)
	}
}

// A transaction reads a tenant's webhook endpoints once, and again after
// it wrote one.
func TestTransactionReadsEndpointsOnce(t *testing.T) {
	s := controltest.New(t)
	err := s.St.Tx(s.Admin, func(q store.Querier) error {
		cq := &countingQuerier{Querier: q}
		tx := &core.Txn{Querier: cq}
		read := func(want int) {
			t.Helper()
			before := cq.n
			if _, err := tx.EndpointsOf(s.Admin, s.Boot.Tenant.ID); err != nil {
				t.Fatal(err)
			}
			if n := cq.n - before; n != want {
				t.Errorf("reading the endpoints took %d statements, want %d", n, want)
			}
		}
		read(1)
		read(0)
		tx.EndpointsChanged()
		read(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countingQuerier counts the statements of one transaction.
type countingQuerier struct {
	store.Querier
	n int
}

func (c *countingQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	c.n++
	return c.Querier.Exec(ctx, sql, args...)
}

func (c *countingQuerier) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	c.n++
	return c.Querier.Query(ctx, sql, args...)
}
