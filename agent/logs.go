package agent

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/protocol"
)

// Container logs (logs.v1): the agent follows the log of every container
// of the pods it manages through the API server's pods/log (with
// timestamps) and sends the lines in batches. The Kubernetes log API
// merges a container's stdout and stderr, so every line is sent as
// stdout.
//
// Memory is bounded: the followers hand lines to one sender through a
// bounded queue, and a follower whose line does not fit waits, reading no
// more of its stream (the API server's connection applies the
// back-pressure), while the control plane is slow or away. Each pod may
// send LogRate lines a second (bursts of LogBurst); lines past it are
// dropped and counted, and the next line sent says so (a gap). A line is
// cut at LogLineBytes. A stream read again (a new session, a follower
// that restarted) starts at the second of the last line sent, or at the
// start of the log; the control plane skips the lines it stored already,
// so nothing is stored twice.

// Defaults of the log settings.
const (
	DefaultLogRate      = 200
	DefaultLogBurst     = 2000
	DefaultLogLineBytes = 16 << 10
)

// streamKey names a container's stream and what it belongs to.
type streamKey struct {
	namespace, pod, container string
	env, service, process     string
	release                   int
}

// logItem is a line to send, or a gap before the next ones.
type logItem struct {
	key  streamKey
	line protocol.LogLine
	gap  string
}

// logFollower runs one session's followers.
type logFollower struct {
	kube kubernetes.Interface
	log  *slog.Logger
	send func(protocol.Logs) error
	// targets lists the containers to follow, as the cache and the desired
	// state say now; nil when that is not known.
	targets func() map[streamKey]*corev1.Pod
	// since remembers, across sessions, the time of the last line sent of
	// each stream.
	since *logSince

	poll       time.Duration
	batchEvery time.Duration
	batchLines int
	rate       float64
	burst      int
	lineBytes  int

	queue   chan logItem
	mu      sync.Mutex
	follows map[streamKey]context.CancelFunc
}

// logSince is the time of the last line sent per stream, kept by the agent
// for its next session.
type logSince struct {
	mu sync.Mutex
	at map[streamKey]time.Time
}

func (s *logSince) get(k streamKey) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at[k]
}

func (s *logSince) set(k streamKey, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[streamKey]time.Time{}
	}
	if t.After(s.at[k]) {
		s.at[k] = t
	}
}

func (s *logSince) forget(k streamKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, k)
}

func newLogFollower(kube kubernetes.Interface, log *slog.Logger, since *logSince, targets func() map[streamKey]*corev1.Pod,
	send func(protocol.Logs) error) *logFollower {
	return &logFollower{kube: kube, log: log, send: send, targets: targets, since: since,
		poll: 2 * time.Second, batchEvery: 500 * time.Millisecond, batchLines: 2000,
		rate: DefaultLogRate, burst: DefaultLogBurst, lineBytes: DefaultLogLineBytes,
		queue: make(chan logItem, 4000), follows: map[streamKey]context.CancelFunc{}}
}

// run follows the containers until ctx ends: a follower for each new one,
// every poll; a container whose pod is gone loses its follower, and the
// control plane a marker saying its lines may stop short.
func (f *logFollower) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { f.sender(ctx) })
	defer wg.Wait()
	t := time.NewTicker(f.poll)
	defer t.Stop()
	for {
		want := f.targets()
		if want == nil { // not known now (no state or cache yet)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			continue
		}
		f.mu.Lock()
		for k := range want {
			if _, ok := f.follows[k]; ok {
				continue
			}
			fctx, cancel := context.WithCancel(ctx)
			f.follows[k] = cancel
			wg.Go(func() { f.follow(fctx, k) })
		}
		var gone []streamKey
		for k, cancel := range f.follows {
			if _, ok := want[k]; !ok {
				cancel()
				delete(f.follows, k)
				f.since.forget(k)
				gone = append(gone, k)
			}
		}
		f.mu.Unlock()
		for _, k := range gone {
			select {
			case f.queue <- logItem{key: k, gap: "the pod went away: lines it printed after the last one here may be missing"}:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// follow reads a container's log until ctx ends, again after the stream
// ends (a container restarted, the API server closed it).
func (f *logFollower) follow(ctx context.Context, k streamKey) {
	var tokens = float64(f.burst)
	last := time.Now()
	dropped := 0
	for ctx.Err() == nil {
		opts := &corev1.PodLogOptions{Container: k.container, Follow: true, Timestamps: true}
		since := f.since.get(k)
		if !since.IsZero() {
			t := metav1.NewTime(since.Truncate(time.Second))
			opts.SinceTime = &t
		}
		err := func() error {
			rc, err := f.kube.CoreV1().Pods(k.namespace).GetLogs(k.pod, opts).Stream(ctx)
			if err != nil {
				return err
			}
			defer rc.Close()
			sc := bufio.NewScanner(rc)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			for sc.Scan() {
				l := logLine(sc.Text())
				if !l.At.After(since) {
					continue // sent before
				}
				now := time.Now()
				tokens = min(float64(f.burst), tokens+now.Sub(last).Seconds()*f.rate)
				last = now
				if tokens < 1 {
					dropped++
					continue
				}
				tokens--
				item := logItem{key: k, line: l}
				if dropped > 0 {
					item.gap = fmt.Sprintf("the agent's rate cap (%g lines a second) dropped %d lines", f.rate, dropped)
					dropped = 0
				}
				if len(item.line.Text) > f.lineBytes {
					item.line.Text = item.line.Text[:f.lineBytes] + " [line cut at " + strconv.Itoa(f.lineBytes) + " bytes]"
				}
				select {
				case f.queue <- item: // waits while the queue is full
				case <-ctx.Done():
					return nil
				}
				since = l.At
				f.since.set(k, l.At)
			}
			return sc.Err()
		}()
		if err != nil && ctx.Err() == nil {
			f.log.Debug("following a container's log", "pod", k.namespace+"/"+k.pod, "container", k.container, "error", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(f.poll):
		}
	}
}

// sender sends what the followers read, in batches.
func (f *logFollower) sender(ctx context.Context) {
	t := time.NewTicker(f.batchEvery)
	defer t.Stop()
	var batch []logItem
	flush := func() bool {
		if len(batch) == 0 {
			return true
		}
		m := logsOf(batch)
		batch = batch[:0]
		for _, part := range m {
			if err := f.send(part); err != nil {
				f.log.Warn("sending container logs", "error", err)
				return false
			}
		}
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case it := <-f.queue:
			batch = append(batch, it)
			if len(batch) >= f.batchLines && !flush() {
				return
			}
		case <-t.C:
			if !flush() {
				return
			}
		}
	}
}

// logsOf groups items by stream, in order, into messages within the
// protocol's bounds.
func logsOf(items []logItem) []protocol.Logs {
	var out []protocol.Logs
	var cur protocol.Logs
	lines := 0
	index := map[streamKey]int{}
	for _, it := range items {
		if lines >= protocol.MaxLogLines || len(cur.Streams) >= protocol.MaxLogStreams {
			out = append(out, cur)
			cur, lines, index = protocol.Logs{}, 0, map[streamKey]int{}
		}
		i, ok := index[it.key]
		if !ok || it.gap != "" {
			// A gap starts a stream entry of its own: it stands before
			// its lines.
			i = len(cur.Streams)
			index[it.key] = i
			k := it.key
			cur.Streams = append(cur.Streams, protocol.LogStream{Environment: k.env, Service: k.service, Release: k.release,
				Process: k.process, Namespace: k.namespace, Pod: k.pod, Container: k.container, Stream: "stdout", Gap: it.gap})
		}
		if !it.line.At.IsZero() { // not a gap alone
			cur.Streams[i].Lines = append(cur.Streams[i].Lines, it.line)
			lines++
		}
	}
	if len(cur.Streams) > 0 {
		out = append(out, cur)
	}
	return out
}

// logTargets lists the containers of the managed pods that run a release
// of a service of the desired state, with what they belong to.
func logTargets(st *desired.State, pods func(ns string, sel labels.Selector) []*corev1.Pod) map[streamKey]*corev1.Pod {
	if st == nil {
		return nil
	}
	out := map[streamKey]*corev1.Pod{}
	managed := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})
	for _, ns := range st.Namespaces {
		svcs := map[string]string{}
		for _, s := range ns.Services {
			svcs[s.Name] = string(s.ID)
		}
		for _, p := range pods(ns.Name, managed) {
			svc, ok := svcs[p.Labels[LabelService]]
			release, err := strconv.Atoi(p.Labels[LabelRelease])
			if !ok || err != nil || release < 1 || p.Status.Phase == corev1.PodPending || p.DeletionTimestamp != nil {
				continue
			}
			for _, c := range p.Spec.Containers {
				out[streamKey{namespace: p.Namespace, pod: p.Name, container: c.Name, env: string(ns.EnvID), service: svc,
					process: p.Labels[LabelProcess], release: release}] = p
			}
		}
	}
	return out
}

// logTargets are the containers to follow now: the managed pods in the
// cache that run a service of the newest desired state.
func (a *Agent) logTargets() map[streamKey]*corev1.Pod {
	a.mu.Lock()
	c, d := a.cache, a.state
	a.mu.Unlock()
	if c == nil || d == nil {
		return nil
	}
	return logTargets(&d.State, c.Pods)
}
