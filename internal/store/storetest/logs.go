package storetest

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// testLogQueries covers container logs and Kubernetes events: numbering,
// the filters, deduplication, and retention (partitions on PostgreSQL,
// batches on SQLite).
func testLogQueries(t *testing.T, s *store.Store) {
	ctx := t.Context()
	g := newGraph(t, s)
	other := newService(t, s, g.project)
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	pg := s.Q().Dialect().Name == "postgres"

	created, err := store.EnsureLogPartitions(ctx, s.Q(), day.Add(-24*time.Hour), day.Add(24*time.Hour))
	wantNoErr(t, "creating partitions", err)
	if want := map[bool]int{true: 6, false: 0}[pg]; created != want {
		t.Errorf("EnsureLogPartitions created %d partitions, want %d", created, want)
	}
	again, err := store.EnsureLogPartitions(ctx, s.Q(), day, day)
	wantNoErr(t, "creating partitions again", err)
	if again != 0 {
		t.Errorf("EnsureLogPartitions made %d partitions that existed", again)
	}

	line := func(svc model.ServiceID, at time.Time, pod string, stream model.LogStream, text string) model.LogLine {
		return model.LogLine{At: at, TenantID: g.tenant.ID, ProjectID: g.project.ID, EnvironmentID: g.env.ID, ServiceID: svc,
			ReleaseID: g.release.ID, ClusterID: g.cluster.ID, Process: "web", Pod: pod, Container: "app", Stream: stream, Line: text}
	}
	t.Run("lines are numbered per service and read back with filters", func(t *testing.T) {
		first := []model.LogLine{
			line(g.service.ID, day.Add(-time.Hour), "web-1", model.LogStdout, "listening on :8080"),
			line(other.ID, day.Add(-time.Hour), "worker-1", model.LogStdout, "worker up"),
			line(g.service.ID, day.Add(time.Hour), "web-2", model.LogStderr, "panic: nil map"),
		}
		first, err := store.AppendLogLines(ctx, s.Q(), first)
		wantNoErr(t, "appending", err)
		if first[0].Seq != 1 || first[1].Seq != 1 || first[2].Seq != 2 {
			t.Errorf("seqs %d %d %d, want 1 1 2", first[0].Seq, first[1].Seq, first[2].Seq)
		}
		var more []model.LogLine
		for i := range 5 {
			more = append(more, line(g.service.ID, day.Add(2*time.Hour+time.Duration(i)*time.Second), "web-1", model.LogStdout,
				fmt.Sprintf("GET /items/%d 200", i)))
		}
		// A resend of what is stored, then two lines at one moment.
		resent := append([]model.LogLine{first[0]}, more...)
		more, err = store.AppendLogLines(ctx, s.Q(), resent)
		wantNoErr(t, "appending more", err)
		if len(more) != 5 || more[0].Seq != 3 || more[4].Seq != 7 {
			t.Errorf("the second batch stored %d lines numbered %d..%d, want 5, 3..7", len(more), more[0].Seq, more[len(more)-1].Seq)
		}
		again, err := store.AppendLogLines(ctx, s.Q(), resent)
		wantNoErr(t, "appending it again", err)
		if len(again) != 0 {
			t.Errorf("a resend stored %d lines again", len(again))
		}
		same := line(g.service.ID, day.Add(3*time.Hour), "web-1", model.LogStdout, "two lines")
		twice, err := store.AppendLogLines(ctx, s.Q(), []model.LogLine{same, same})
		wantNoErr(t, "appending two lines of one moment", err)
		if len(twice) != 2 || twice[1].Seq != 9 {
			t.Errorf("two lines printed at one moment: stored %+v", twice)
		}
		read := func(lq store.LogQuery) []int64 {
			t.Helper()
			lq.EnvironmentID, lq.ServiceID = g.env.ID, g.service.ID
			if lq.Limit == 0 {
				lq.Limit = 100
			}
			got, err := store.LogLinesOf(ctx, s.Q(), lq)
			wantNoErr(t, "reading lines", err)
			return collect(got, func(l model.LogLine) int64 { return l.Seq })
		}
		stderr := model.LogStderr
		for _, c := range []struct {
			name string
			q    store.LogQuery
			want []int64
		}{
			{"all", store.LogQuery{}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}},
			{"after", store.LogQuery{After: 5}, []int64{6, 7, 8, 9}},
			{"before, last 2", store.LogQuery{Before: 6, Limit: 2, Last: true}, []int64{4, 5}},
			{"between 3 and 7", store.LogQuery{After: 3, Before: 7}, []int64{4, 5, 6}},
			{"between 3 and 7, last 2", store.LogQuery{After: 3, Before: 7, Limit: 2, Last: true}, []int64{5, 6}},
			{"the last 2", store.LogQuery{Limit: 2, Last: true}, []int64{8, 9}},
			{"first 2", store.LogQuery{Limit: 2}, []int64{1, 2}},
			{"since", store.LogQuery{Since: day}, []int64{2, 3, 4, 5, 6, 7, 8, 9}},
			{"until", store.LogQuery{Until: day.Add(2 * time.Hour)}, []int64{1, 2}},
			{"a pod", store.LogQuery{Pod: "web-2"}, []int64{2}},
			{"stderr", store.LogQuery{Stream: &stderr}, []int64{2}},
			{"text", store.LogQuery{Text: "/items/3"}, []int64{6}},
			{"text is case-sensitive", store.LogQuery{Text: "get /items"}, nil},
			{"a release", store.LogQuery{Release: model.ReleaseID(newID())}, nil},
		} {
			if got := read(c.q); !slices.Equal(got, c.want) {
				t.Errorf("%s: seqs %v, want %v", c.name, got, c.want)
			}
		}
		got, err := store.LogLinesOf(ctx, s.Q(), store.LogQuery{EnvironmentID: g.env.ID, ServiceID: g.service.ID, After: 1, Limit: 1})
		wantNoErr(t, "reading a line", err)
		want := first[2]
		want.At = want.At.UTC()
		assertEqual(t, "line", got, []model.LogLine{want})
	})

	t.Run("where each source's stored log ends", func(t *testing.T) {
		key := func(pod string, stream model.LogStream) store.LogSourceKey {
			return store.LogSourceKey{EnvironmentID: g.env.ID, ServiceID: g.service.ID, ClusterID: g.cluster.ID,
				Pod: pod, Container: "app", Stream: stream}
		}
		otherCluster := key("web-1", model.LogStdout)
		otherCluster.ClusterID = model.ClusterID(newID())
		otherService := key("web-1", model.LogStdout)
		otherService.ServiceID = other.ID
		got, err := store.LastLogTimes(ctx, s.Q(), []store.LogSourceKey{key("web-1", model.LogStdout), key("web-2", model.LogStderr),
			key("web-2", model.LogStdout), otherCluster, otherService, key("web-9", model.LogStdout)})
		wantNoErr(t, "reading where sources end", err)
		want := []time.Time{day.Add(3 * time.Hour), day.Add(time.Hour), {}, {}, {}, {}}
		assertEqual(t, "last times", got, want)
	})

	t.Run("events are stored once per occurrence", func(t *testing.T) {
		ev := model.KubeEvent{At: day.Add(time.Hour), FirstAt: day.Add(-time.Hour), TenantID: g.tenant.ID, ClusterID: g.cluster.ID,
			ProjectID: g.project.ID, EnvironmentID: g.env.ID, ServiceID: g.service.ID, UID: "e-1", Count: 1, Type: "Warning",
			Reason: "BackOff", Message: "Back-off restarting failed container", Namespace: "shop-prod", ObjectKind: "Pod",
			ObjectName: "web-1", Source: "kubelet"}
		again := ev
		again.Count, again.At = 2, day.Add(2*time.Hour)
		normal := ev
		normal.UID, normal.Type, normal.Reason, normal.ServiceID = "e-2", "Normal", "Scheduled", ""
		stored, err := store.AppendKubeEvents(ctx, s.Q(), []model.KubeEvent{ev, again, normal})
		wantNoErr(t, "appending events", err)
		if len(stored) != 3 || stored[0].ID == 0 || stored[1].ID <= stored[0].ID {
			t.Fatalf("stored %+v", stored)
		}
		dup, err := store.AppendKubeEvents(ctx, s.Q(), []model.KubeEvent{again, ev})
		wantNoErr(t, "appending the same again", err)
		if len(dup) != 0 {
			t.Errorf("stored %d occurrences twice", len(dup))
		}
		read := func(eq store.EventQuery) []string {
			t.Helper()
			eq.Limit = 10
			got, err := store.KubeEventsOf(ctx, s.Q(), eq)
			wantNoErr(t, "reading events", err)
			return collect(got, func(e model.KubeEvent) string { return fmt.Sprintf("%s/%d", e.UID, e.Count) })
		}
		for _, c := range []struct {
			name string
			q    store.EventQuery
			want []string
		}{
			{"a cluster, newest first", store.EventQuery{ClusterID: g.cluster.ID}, []string{"e-2/1", "e-1/2", "e-1/1"}},
			{"a service", store.EventQuery{EnvironmentID: g.env.ID, ServiceID: g.service.ID}, []string{"e-1/2", "e-1/1"}},
			{"warnings", store.EventQuery{ClusterID: g.cluster.ID, Type: "Warning"}, []string{"e-1/2", "e-1/1"}},
			{"after", store.EventQuery{ClusterID: g.cluster.ID, After: stored[0].ID}, []string{"e-1/2", "e-2/1"}},
			{"oldest first", store.EventQuery{ClusterID: g.cluster.ID, Oldest: true}, []string{"e-1/1", "e-1/2", "e-2/1"}},
			{"before", store.EventQuery{ClusterID: g.cluster.ID, Before: stored[2].ID}, []string{"e-1/2", "e-1/1"}},
			{"since", store.EventQuery{ClusterID: g.cluster.ID, Since: day.Add(90 * time.Minute)}, []string{"e-1/2"}},
		} {
			if got := read(c.q); !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
		got, err := store.KubeEventsOf(ctx, s.Q(), store.EventQuery{ClusterID: g.cluster.ID, After: stored[0].ID, Limit: 1})
		wantNoErr(t, "reading an event", err)
		want := stored[1]
		want.At, want.FirstAt = want.At.UTC(), want.FirstAt.UTC()
		assertEqual(t, "event", got, []model.KubeEvent{want})
		if _, err := store.KubeEventsOf(ctx, s.Q(), store.EventQuery{Limit: 1}); err == nil {
			t.Error("reading events of nothing in particular did not fail")
		}
	})

	t.Run("drifts round-trip, newest first", func(t *testing.T) {
		mk := func(kind, name string, svc model.ServiceID) *model.Drift {
			return &model.Drift{TenantID: g.tenant.ID, ClusterID: g.cluster.ID, ProjectID: g.project.ID, EnvironmentID: g.env.ID,
				ServiceID: svc, Kind: kind, Namespace: "shop-prod", Name: name, Fields: []string{"spec.replicas"},
				Managers: []string{"kubectl-edit"}, DetectedAt: day.Add(time.Minute)}
		}
		a, b := mk("Deployment", "api-web-r1", g.service.ID), mk("Service", "worker", other.ID)
		b.Fields, b.Managers = []string{"spec.selector", "metadata.labels"}, []string{}
		wantNoErr(t, "recording", store.InsertDrift(ctx, s.Q(), a))
		wantNoErr(t, "recording", store.InsertDrift(ctx, s.Q(), b))
		if a.ID == 0 || b.ID <= a.ID {
			t.Fatalf("ids %d %d", a.ID, b.ID)
		}
		got, err := store.DriftsOf(ctx, s.Q(), g.cluster.ID, "", "", store.PageArgs{First: 10})
		wantNoErr(t, "reading the cluster's", err)
		assertEqual(t, "the cluster's drifts", got, store.Page[model.Drift]{Items: []*model.Drift{b, a}})
		got, err = store.DriftsOf(ctx, s.Q(), "", g.env.ID, g.service.ID, store.PageArgs{First: 10})
		wantNoErr(t, "reading the service's", err)
		assertEqual(t, "the service's drifts", got, store.Page[model.Drift]{Items: []*model.Drift{a}})

		// Paged by id, newest first: forwards to older ones, backwards
		// to newer ones, and between two ids.
		c, d := mk("ConfigMap", "settings", g.service.ID), mk("Secret", "tls", g.service.ID)
		wantNoErr(t, "recording", store.InsertDrift(ctx, s.Q(), c))
		wantNoErr(t, "recording", store.InsertDrift(ctx, s.Q(), d))
		id := func(x *model.Drift) string { return strconv.FormatInt(x.ID, 10) }
		for _, tc := range []struct {
			name string
			pg   store.PageArgs
			want store.Page[model.Drift]
		}{
			{"the newest two", store.PageArgs{First: 2}, store.Page[model.Drift]{Items: []*model.Drift{d, c}, HasNext: true}},
			{"older than c", store.PageArgs{First: 2, After: id(c)}, store.Page[model.Drift]{Items: []*model.Drift{b, a}}},
			{"the oldest two, from the end", store.PageArgs{First: 2, FromEnd: true}, store.Page[model.Drift]{Items: []*model.Drift{b, a}, HasPrevious: true}},
			{"newer than b, backwards", store.PageArgs{First: 1, Before: id(b), FromEnd: true}, store.Page[model.Drift]{Items: []*model.Drift{c}, HasPrevious: true}},
			{"between d and a", store.PageArgs{First: 10, After: id(d), Before: id(a)}, store.Page[model.Drift]{Items: []*model.Drift{c, b}}},
			{"between d and a, the last one", store.PageArgs{First: 1, After: id(d), Before: id(a), FromEnd: true}, store.Page[model.Drift]{Items: []*model.Drift{b}, HasPrevious: true}},
			{"without the row past the page", store.PageArgs{First: 1, NoNext: true}, store.Page[model.Drift]{Items: []*model.Drift{d}}},
			{"none", store.PageArgs{First: 0}, store.Page[model.Drift]{Items: []*model.Drift{}, HasNext: true}},
		} {
			got, err := store.DriftsOf(ctx, s.Q(), g.cluster.ID, "", "", tc.pg)
			wantNoErr(t, tc.name, err)
			assertEqual(t, tc.name, got, tc.want)
		}
		_, err = store.DriftsOf(ctx, s.Q(), g.cluster.ID, "", "", store.PageArgs{First: 1, After: "not a number"})
		if err == nil {
			t.Error("a cursor that is not a drift's id: no error")
		}
	})

	t.Run("retention removes what is older and keeps the rest", func(t *testing.T) {
		// Lines at day-1h (the day before) and later; expire everything
		// before day.
		r, err := store.ExpireLogs(ctx, s.Q(), day, 1)
		wantNoErr(t, "expiring", err)
		if pg {
			if r.Partitions != 2 || r.Rows != 0 {
				t.Errorf("ExpireLogs = %+v, want the day before's 2 partitions dropped", r)
			}
			parts, err := store.LogPartitions(ctx, s.Q())
			wantNoErr(t, "listing partitions", err)
			for _, p := range parts {
				if p.Day.Before(day) {
					t.Errorf("partition %s of %s is still there", p.Table, p.Day.Format(time.DateOnly))
				}
			}
			if len(parts) != 4 {
				t.Errorf("%d partitions left, want 4: %v", len(parts), parts)
			}
		} else {
			// Two old lines, no old event; a batch of one row per table
			// and run.
			total, runs := r.Rows, 1
			for r.Rows > 0 {
				if r.Rows > 1 {
					t.Errorf("a run in batches of 1 deleted %d rows", r.Rows)
				}
				r, err = store.ExpireLogs(ctx, s.Q(), day, 1)
				wantNoErr(t, "expiring", err)
				total, runs = total+r.Rows, runs+1
			}
			if total != 2 || runs != 3 {
				t.Errorf("ExpireLogs deleted %d rows in %d runs, want 2 in 3 (the last deleting none)", total, runs)
			}
			parts, err := store.LogPartitions(ctx, s.Q())
			if err != nil || parts != nil {
				t.Errorf("SQLite has partitions: %v %v", parts, err)
			}
		}
		lines, err := store.LogLinesOf(ctx, s.Q(), store.LogQuery{EnvironmentID: g.env.ID, ServiceID: other.ID, Limit: 10})
		wantNoErr(t, "reading the other service", err)
		if len(lines) != 0 {
			t.Errorf("an expired line is still there: %+v", lines)
		}
		kept, err := store.LogLinesOf(ctx, s.Q(), store.LogQuery{EnvironmentID: g.env.ID, ServiceID: g.service.ID, Limit: 10})
		wantNoErr(t, "reading the service", err)
		if got := collect(kept, func(l model.LogLine) int64 { return l.Seq }); !slices.Equal(got, []int64{2, 3, 4, 5, 6, 7, 8, 9}) {
			t.Errorf("lines kept %v, want 2..9", got)
		}
		evs, err := store.KubeEventsOf(ctx, s.Q(), store.EventQuery{ClusterID: g.cluster.ID, Limit: 10})
		wantNoErr(t, "reading events", err)
		if len(evs) != 3 {
			t.Errorf("%d events after retention, want the 3 of the day", len(evs))
		}
	})
}

func collect[T, K any](items []T, f func(T) K) []K {
	var out []K
	for _, it := range items {
		out = append(out, f(it))
	}
	return out
}
