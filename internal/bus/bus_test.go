package bus

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Observers see every delivery and every resync (nil), while
// subscriptions get their wake; publishers never block (run with -race).
func TestObserveAndDeliver(t *testing.T) {
	b := New()
	var mu sync.Mutex
	var seen [][]string
	b.Observe(func(topics []string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, slices.Clone(topics))
	})
	sub := b.Subscribe(User("u1"))
	defer sub.Close()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				b.Deliver(User("u1"), Cluster("c"))
			}
		})
	}
	wg.Wait()
	select {
	case <-sub.C:
	default:
		t.Fatal("the subscription was not woken")
	}
	b.Resync()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 401 {
		t.Fatalf("observed %d deliveries, want 401", len(seen))
	}
	if seen[400] != nil {
		t.Errorf("a resync was observed as %v, want nil", seen[400])
	}
	if !slices.Equal(seen[0], []string{User("u1"), Cluster("c")}) {
		t.Errorf("first delivery observed as %v", seen[0])
	}
}

// A function subscription is called once per delivery of its topics and
// per resync, never for other topics, and not after Close.
func TestSubscribeFunc(t *testing.T) {
	b := New()
	calls := 0
	sub := b.SubscribeFunc(func() { calls++ }, Cluster("a"), Cluster("b")) // under the bus's lock
	b.Deliver(Cluster("a"))
	b.Deliver(Cluster("b"), Cluster("other"))
	b.Deliver(Cluster("other"))
	b.Resync()
	if calls != 3 {
		t.Errorf("called %d times, want 3 (two deliveries, one resync)", calls)
	}
	if n := b.Following(Cluster("a")); n != 1 {
		t.Errorf("%d follow cluster a, want 1", n)
	}
	sub.Close()
	b.Deliver(Cluster("a"))
	b.Resync()
	if calls != 3 {
		t.Errorf("called after Close: %d calls", calls)
	}
	if n := b.Subscriptions(); n != 0 {
		t.Errorf("%d subscriptions after Close, want 0", n)
	}
}

// A replica's own notes come back from PostgreSQL marked with its origin
// and are passed over (they were delivered at commit); another replica's,
// and those of a replica that marks none, are delivered without the mark.
// Every payload stays under maxPayload and carries the mark.
func TestPayloadOrigins(t *testing.T) {
	self, other := New(), New()
	if self.origin == other.origin || self.origin == "" {
		t.Fatalf("origins %q and %q: want two distinct ones", self.origin, other.origin)
	}
	topics := []Note{{Topic: Deployment("d1"), Hint: `{"events":[1]}`}, {Topic: Cluster("c1")}}
	ps := payloads(originLine(self.origin), topics)
	if len(ps) != 1 {
		t.Fatalf("got %d payloads for two topics", len(ps))
	}
	if got := received(self, ps[0]); got != nil {
		t.Errorf("its own note came back as %v, want nothing", got)
	}
	if got := received(other, ps[0]); !slices.Equal(got, topics) {
		t.Errorf("another replica got %v, want %v", got, topics)
	}
	if got := received(other, payloads("", topics)[0]); !slices.Equal(got, topics) {
		t.Errorf("an unmarked note gave %v, want %v", got, topics)
	}

	var many []Note
	for i := range 500 {
		many = append(many, Note{Topic: Deployment(fmt.Sprintf("%026d", i)), Hint: fmt.Sprintf(`{"n":%d}`, i)})
	}
	var back []Note
	for _, p := range payloads(originLine(self.origin), many) {
		if len(p) > maxPayload {
			t.Errorf("a payload of %d bytes, over %d", len(p), maxPayload)
		}
		back = append(back, received(other, p)...)
		if received(self, p) != nil {
			t.Errorf("a payload without its origin: %.40q…", p)
		}
	}
	if !slices.Equal(back, many) {
		t.Errorf("split into payloads, %d topics came back as %d", len(many), len(back))
	}
}

// A hint goes with its topic when it fits and holds no line break or tab;
// otherwise the topic goes alone (its followers read), and the notes after
// it keep theirs.
func TestPayloadHints(t *testing.T) {
	other := New()
	notes := []Note{
		{Topic: Deployment("big"), Hint: `"` + strings.Repeat("x", maxPayload) + `"`},
		{Topic: Deployment("nl"), Hint: "a\nb"},
		{Topic: Deployment("tab"), Hint: "a\tb"},
		{Topic: Deployment("ok"), Hint: `{"m":"a\\nb"}`},
		{Topic: Cluster("c")},
	}
	var back []Note
	for _, p := range payloads("from:x", notes) {
		if len(p) > maxPayload {
			t.Errorf("a payload of %d bytes, over %d", len(p), maxPayload)
		}
		back = append(back, received(other, p)...)
	}
	want := []Note{{Topic: Deployment("big")}, {Topic: Deployment("nl")}, {Topic: Deployment("tab")}, notes[3], notes[4]}
	if !slices.Equal(back, want) {
		t.Errorf("got %q, want %q", back, want)
	}

	// A hinted subscription gets each note's hint, and "" for a note
	// without one and for a resync; a plain one is woken as before.
	b := New()
	var hints []string
	sub := b.SubscribeHints(func(h string) { hints = append(hints, h) }, Deployment("ok"))
	defer sub.Close()
	plain := b.Subscribe(Deployment("ok"))
	defer plain.Close()
	b.DeliverNotes(notes)
	b.Deliver(Deployment("ok"))
	b.Resync()
	if !slices.Equal(hints, []string{notes[3].Hint, "", ""}) {
		t.Errorf("hints %q", hints)
	}
	select {
	case <-plain.C:
	default:
		t.Error("a plain subscription was not woken by a hinted note")
	}
}
