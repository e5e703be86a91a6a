package apitest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Container logs and events are kept for the retention (7 days): the jobs
// create the day partitions ahead and, past the retention, drop whole
// days on PostgreSQL — once across two replicas running them at the same
// moment — and delete old rows on SQLite; lines within it stay.
func TestLogRetention(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		env := NewEnv(t, OpenSQLite(t))
		checkRetention(t, false, env, env)
	})
	t.Run("postgres, two replicas", func(t *testing.T) {
		r := newReplicas(t)
		checkRetention(t, true, r.a, r.b)
	})
}

func checkRetention(t *testing.T, pg bool, a, b *Env) {
	ctx := context.Background()
	f := a.NewFixture(t)
	// runJobs runs the jobs of both replicas at once, three times each, and
	// adds up what they did.
	runJobs := func() (made, expired int) {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 6 {
			e := a
			if i%2 == 1 {
				e = b
			}
			wg.Go(func() {
				rep, err := e.Plane.RunJobsOnce(ctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				made, expired = made+rep.LogPartitions, expired+rep.LogsExpired
				mu.Unlock()
			})
		}
		wg.Wait()
		return made, expired
	}
	days := func() map[string]int {
		t.Helper()
		parts, err := store.LogPartitions(ctx, a.Store.Q())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, p := range parts {
			out[p.Day.Format(time.DateOnly)]++
		}
		return out
	}
	now := a.Clock.Now()
	today := now.UTC().Truncate(24 * time.Hour)
	made, _ := runJobs()
	if pg {
		// 7 days back, today and 2 ahead: 10 days of 2 tables, made once.
		if made != 20 || len(days()) != 10 || days()[today.Add(48*time.Hour).Format(time.DateOnly)] != 2 {
			t.Errorf("the first runs made %d partitions: %v", made, days())
		}
	} else if made != 0 || len(days()) != 0 {
		t.Errorf("SQLite has partitions: %d %v", made, days())
	}

	svcID, _ := gid.Decode[model.ServiceID](gid.Service, f.ServiceID)
	envID, _ := gid.Decode[model.EnvironmentID](gid.Environment, f.EnvironmentID)
	svc, err := store.Services.Get(ctx, a.Store.Q(), svcID)
	if err != nil {
		t.Fatal(err)
	}
	line := func(at time.Time, text string) model.LogLine {
		return model.LogLine{At: at, TenantID: svc.TenantID, ProjectID: svc.ProjectID, EnvironmentID: envID,
			ServiceID: svc.ID, ReleaseID: "r", ClusterID: "c", Process: "web", Pod: "web-1", Container: "app", Stream: model.LogStdout, Line: text}
	}
	old, kept := line(today.Add(-time.Hour), "yesterday, late"), line(today.Add(12*time.Hour), "today, noon")
	if _, err := store.AppendLogLines(ctx, a.Store.Q(), []model.LogLine{old, kept}); err != nil {
		t.Fatal(err)
	}
	ev := model.KubeEvent{At: today.Add(-time.Hour), FirstAt: today.Add(-time.Hour), TenantID: svc.TenantID, ClusterID: "c",
		UID: "e-old", Count: 1, Type: "Warning", Reason: "BackOff", ObjectKind: "Pod", ObjectName: "web-1"}
	if _, err := store.AppendKubeEvents(ctx, a.Store.Q(), []model.KubeEvent{ev}); err != nil {
		t.Fatal(err)
	}

	// Seven days and six hours after today began: yesterday is past the
	// retention, today is not.
	a.Clock.Advance(today.Add(7*24*time.Hour + 6*time.Hour).Sub(now))
	made, expired := runJobs()
	if pg {
		// Days -7..-1 dropped (7 × 2); days +3..+9 made (7 × 2).
		if expired != 14 || made != 14 {
			t.Errorf("after 7 days the jobs dropped %d and made %d partitions, want 14 and 14 (each once)", expired, made)
		}
		d := days()
		if d[today.Add(-24*time.Hour).Format(time.DateOnly)] != 0 || d[today.Format(time.DateOnly)] != 2 ||
			d[today.Add(9*24*time.Hour).Format(time.DateOnly)] != 2 || len(d) != 10 {
			t.Errorf("partitions after 7 days: %v", d)
		}
	} else if expired != 2 {
		t.Errorf("after 7 days the jobs deleted %d rows, want the old line and the old event", expired)
	}
	lines, err := store.LogLinesOf(ctx, a.Store.Q(), store.LogQuery{EnvironmentID: old.EnvironmentID, ServiceID: old.ServiceID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].Line != "today, noon" {
		t.Errorf("lines after the retention: %+v", lines)
	}
	evs, err := store.KubeEventsOf(ctx, a.Store.Q(), store.EventQuery{ClusterID: "c", Limit: 10})
	if err != nil || len(evs) != 0 {
		t.Errorf("events after the retention: %+v %v", evs, err)
	}
}
