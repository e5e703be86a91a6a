package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/wake"
)

// Container logs (logs.v1): the agent follows the log of every container
// of the pods it manages through the API server's pods/log (with
// timestamps) and sends the lines in batches. The Kubernetes log API
// merges a container's stdout and stderr, so every line is sent as
// stdout.
//
// Following costs what it delivers. A container is followed once its pod's
// status (in the cache, which the watch keeps current) says it has started:
// asking for the log of a container that has not (ContainerCreating,
// Pending) is answered 400 by a kubelet. A stream that cannot open, or
// ends, is asked for again after a backoff of its own, doubling from
// LogBackoffMin to LogBackoffMax with jitter; a stream that delivered lines,
// or stayed open longer than LogBackoffMax, starts the backoff over, and so
// does the container starting again (its run in the status changed). At most LogStreams streams are open at once;
// the others wait for a slot without a request. The requests go through
// the logs client (Clients.Logs), whose rate limit is neither the writes'
// nor the other reads'.
//
// Memory is bounded: the followers hand lines to one sender through a
// bounded queue, and a follower whose line does not fit waits, reading no
// more of its stream (the API server's connection applies the
// back-pressure), while the control plane is slow or away. Each stream may
// send LogRate lines a second (bursts of LogBurst); lines past it are
// dropped and counted, and the next line sent says so (a gap). A line is
// cut at LogLineBytes, however long it is. A stream read again starts at
// the second of the last line this process sent of it; the first stream of
// a container this process has sent nothing of starts where the control
// plane's stored log of it ends (log-resume.v1: it is asked), or at the
// start of the log. The control plane skips the lines it stored already,
// so nothing is stored twice.

// Defaults of the log settings.
const (
	DefaultLogRate  = 200
	DefaultLogBurst = 2000
	// DefaultLogLineBytes is as long as the protocol lets a line be (with
	// room for saying it was cut): the control plane redacts whole lines,
	// then cuts them to what it keeps.
	DefaultLogLineBytes = protocol.MaxLogLineBytes - 64
	// DefaultLogStreams bounds the streams open at once: 1,500 pods of one
	// container each (the agent-at-scale benchmark) are all followed.
	DefaultLogStreams = 2000
	// A container's stream is asked for again after 1 s, doubling up to
	// 2 min while it cannot open or ends without a line: a container
	// whose log cannot be read costs one request every two minutes.
	DefaultLogBackoffMin = time.Second
	DefaultLogBackoffMax = 2 * time.Minute
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

// logSettings are the log follower's knobs (Config's Log* fields).
type logSettings struct {
	rate, burst, lineBytes int
	streams                int
	backoffMin, backoffMax time.Duration
}

// logFollower runs one session's followers.
type logFollower struct {
	kube    kubernetes.Interface
	log     *slog.Logger
	metrics *Metrics
	send    func(protocol.Logs) error
	// targets lists the started containers to follow, as the cache and
	// the desired state say now, each with its run (which changes when
	// the container starts again); nil when that is not known.
	targets func() map[streamKey]string
	// since remembers, across sessions, the time of the last line sent of
	// each stream.
	since *logSince
	// resume asks the control plane where its log of a stream ends; nil
	// when the session has no log-resume.v1.
	resume *logResume
	// redact takes the secret values of the desired state out of a line
	// the agent has to cut, before it cuts it: a secret the cut would
	// split leaves nothing of itself (nil: nothing to take out).
	redact func() *strings.Replacer

	poll       time.Duration
	batchEvery time.Duration
	batchLines int
	set        logSettings
	// after waits out a backoff (time.After; tests see the waits).
	after func(time.Duration) <-chan time.Time

	queue chan logItem
	slots chan struct{}
	mu    sync.Mutex
	// follows are the containers followed, by stream.
	follows map[streamKey]*following
}

// following is one container's follower: how to stop it, how to tell it
// the container's run changed, and that run ("" while the container waits
// to start again).
type following struct {
	cancel context.CancelFunc
	kick   wake.Signal
	run    string
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

func newLogFollower(kube kubernetes.Interface, log *slog.Logger, m *Metrics, set logSettings, since *logSince,
	targets func() map[streamKey]string, send func(protocol.Logs) error) *logFollower {
	return &logFollower{kube: kube, log: log, metrics: m, send: send, targets: targets, since: since,
		poll: 2 * time.Second, batchEvery: 500 * time.Millisecond, batchLines: 2000, set: set, after: time.After,
		queue: make(chan logItem, 4000), slots: make(chan struct{}, max(set.streams, 1)), follows: map[streamKey]*following{}}
}

// run follows the containers until ctx ends: every poll, a follower for
// each container that started, a kick for one that started again; a
// container whose pod is gone loses its follower, and the control plane,
// when it holds lines of it, a marker saying they may stop short. Finding
// the containers reads only the cache.
func (f *logFollower) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { f.sender(ctx) })
	if f.resume != nil {
		wg.Go(func() { f.resume.run(ctx) })
	}
	defer wg.Wait()
	t := time.NewTicker(f.poll)
	defer t.Stop()
	for {
		if want := f.targets(); want != nil { // nil: not known now (no state or cache yet)
			var gone []streamKey
			f.mu.Lock()
			for k, run := range want {
				if fl, ok := f.follows[k]; ok {
					if fl.run != run {
						fl.run = run // under f.mu, as runOf reads it
						fl.kick.Poke()
					}
					continue
				}
				fctx, cancel := context.WithCancel(ctx)
				fl := &following{cancel: cancel, kick: wake.New(), run: run}
				f.follows[k] = fl
				wg.Go(func() { f.follow(fctx, k, fl.kick) })
			}
			for k, fl := range f.follows {
				if _, ok := want[k]; !ok {
					fl.cancel()
					delete(f.follows, k)
					if !f.since.get(k).IsZero() { // lines of it are stored: say they may stop short
						gone = append(gone, k)
					}
					f.since.forget(k)
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
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// follow reads a container's log until ctx ends: again after each stream
// ends or fails to open, once its backoff has passed or the container
// started again. While the container waits to start again (after a crash)
// nothing is asked.
func (f *logFollower) follow(ctx context.Context, k streamKey, kick wake.Signal) {
	f.metrics.followed(1)
	defer f.metrics.followed(-1)
	since := f.startAt(ctx, k)
	lim := logCap{tokens: float64(f.set.burst), last: time.Now()}
	b := backoff{min: f.set.backoffMin, max: f.set.backoffMax}
	for again := false; ; again = true {
		for f.runOf(k) == "" {
			select {
			case <-ctx.Done():
				return
			case <-kick.C():
			}
		}
		if again {
			f.metrics.retried()
		}
		f.metrics.queued(1)
		select {
		case f.slots <- struct{}{}:
			f.metrics.queued(-1)
		case <-ctx.Done():
			f.metrics.queued(-1)
			return
		}
		opened := time.Now()
		sent, err := f.stream(ctx, k, &since, &lim)
		<-f.slots
		if ctx.Err() != nil {
			return
		}
		if sent > 0 || time.Since(opened) >= f.set.backoffMax {
			// It delivered, or it was open longer than the longest wait
			// (a quiet container a kubelet followed for hours): the next
			// stream is asked for soon.
			b.reset()
		}
		wait := b.next()
		if err != nil {
			f.log.Debug("following a container's log", "pod", k.namespace+"/"+k.pod, "container", k.container, "error", err,
				"again in", wait.Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-kick.C(): // the container started again: its new log is there now
			b.reset()
		case <-f.after(wait):
		}
	}
}

// runOf is the run of a followed container, "" while it waits to start
// again.
func (f *logFollower) runOf(k streamKey) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl := f.follows[k]; fl != nil {
		return fl.run
	}
	return ""
}

// startAt is where a container's first stream of this follower starts:
// after the last line this process sent of it, else after the last line
// the control plane stored of it, else at the start of its log.
func (f *logFollower) startAt(ctx context.Context, k streamKey) time.Time {
	if t := f.since.get(k); !t.IsZero() {
		f.metrics.resumed("memory")
		return t
	}
	if f.resume != nil {
		if t := f.resume.at(ctx, k); !t.IsZero() {
			f.metrics.resumed("control-plane")
			f.since.set(k, t)
			return t
		}
	}
	f.metrics.resumed("start")
	return time.Time{}
}

// logCap is a stream's rate cap: a token bucket of LogBurst lines filled at
// LogRate a second, and the lines it dropped since the last one sent.
type logCap struct {
	tokens  float64
	last    time.Time
	dropped int
}

// stream reads one stream of a container's log until it ends, sending the
// lines after since (which it moves on); it returns the lines sent.
func (f *logFollower) stream(ctx context.Context, k streamKey, since *time.Time, lim *logCap) (int, error) {
	opts := &corev1.PodLogOptions{Container: k.container, Follow: true, Timestamps: true}
	if !since.IsZero() {
		t := metav1.NewTime(since.Truncate(time.Second))
		opts.SinceTime = &t
	}
	rc, err := f.kube.CoreV1().Pods(k.namespace).GetLogs(k.pod, opts).Stream(ctx)
	f.metrics.opened(err == nil)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	f.metrics.open(1)
	defer f.metrics.open(-1)
	r := bufio.NewReaderSize(countedReader{rc, f.metrics}, 4<<10)
	sent := 0
	// A line is its timestamp (RFC 3339 with nanoseconds, 30 bytes and a
	// space at most) and its text, kept up to the cut.
	keep := f.set.lineBytes + 40
	for {
		raw, long, err := readLine(r, keep)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return sent, err
		}
		l := logLine(string(raw))
		if !l.At.After(*since) {
			continue // sent before
		}
		now := time.Now()
		lim.tokens = min(float64(f.set.burst), lim.tokens+now.Sub(lim.last).Seconds()*float64(f.set.rate))
		lim.last = now
		if lim.tokens < 1 {
			lim.dropped++
			f.metrics.dropped()
			continue
		}
		lim.tokens--
		item := logItem{key: k, line: l}
		if lim.dropped > 0 {
			item.gap = fmt.Sprintf("the agent's rate cap (%d lines a second) dropped %d lines", f.set.rate, lim.dropped)
			lim.dropped = 0
		}
		if long || len(item.line.Text) > f.set.lineBytes {
			text := item.line.Text
			if f.redact != nil {
				if r := f.redact(); r != nil {
					text = r.Replace(text)
				}
			}
			if long || len(text) > f.set.lineBytes {
				text = text[:min(len(text), f.set.lineBytes)] + " [line cut at " + strconv.Itoa(f.set.lineBytes) + " bytes]"
			}
			item.line.Text = text
		}
		select {
		case f.queue <- item: // waits while the queue is full
		case <-ctx.Done():
			return sent, nil
		}
		sent++
		*since = l.At
		f.since.set(k, l.At)
	}
}

// readLine reads one line (without its newline), keeping at most keep
// bytes of it and skipping the rest: long tells that some was skipped.
// A last line without a newline is a line; the read after it returns the
// reader's error.
func readLine(r *bufio.Reader, keep int) (line []byte, long bool, err error) {
	total := 0
	for {
		part, err := r.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if err == nil {
			part = part[:len(part)-1] // the newline
		}
		total += len(part)
		if room := keep - len(line); room > 0 {
			line = append(line, part[:min(len(part), room)]...)
		}
		switch {
		case full:
			continue
		case err != nil && total == 0:
			return nil, false, err
		}
		return line, total > keep, nil
	}
}

// countedReader counts the bytes read from the API server.
type countedReader struct {
	r io.Reader
	m *Metrics
}

func (c countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.m.read(n)
	return n, err
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

// logTargets lists the started containers of the managed pods that run a
// release of a service of the desired state, with what they belong to and
// their run. A container has started when its status shows it running or
// ended, now or before: one waiting to start again after a crash keeps its
// follower, which asks for nothing until it runs. A pod being deleted is
// not followed.
func logTargets(st *desired.State, pods func(ns string, sel labels.Selector) []*corev1.Pod) map[streamKey]string {
	if st == nil {
		return nil
	}
	out := map[streamKey]string{}
	managed := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})
	for _, ns := range st.Namespaces {
		svcs := map[string]string{}
		for _, s := range ns.Services {
			svcs[s.Name] = string(s.ID)
		}
		for _, p := range pods(ns.Name, managed) {
			svc, ok := svcs[p.Labels[LabelService]]
			release, err := strconv.Atoi(p.Labels[LabelRelease])
			if !ok || err != nil || release < 1 || p.DeletionTimestamp != nil {
				continue
			}
			for _, c := range p.Status.ContainerStatuses {
				run, started := containerRun(c)
				if !started {
					continue
				}
				out[streamKey{namespace: p.Namespace, pod: p.Name, container: c.Name, env: string(ns.EnvID), service: svc,
					process: p.Labels[LabelProcess], release: release}] = run
			}
		}
	}
	return out
}

// containerRun names a container's current run (its id, restarts and start
// time: a new run changes it), "" while it waits to start again after
// having run; started tells whether it has ever started.
func containerRun(c corev1.ContainerStatus) (run string, started bool) {
	var at time.Time
	switch s := c.State; {
	case s.Running != nil:
		at = s.Running.StartedAt.Time
	case s.Terminated != nil:
		at = s.Terminated.StartedAt.Time
	default:
		return "", c.LastTerminationState.Terminated != nil
	}
	return c.ContainerID + "/" + strconv.Itoa(int(c.RestartCount)) + "/" + at.UTC().Format(time.RFC3339Nano), true
}

// secretValues is a replacer of the secret values of the newest desired
// state, kept per revision.
func (a *Agent) secretValues() *strings.Replacer {
	a.mu.Lock()
	d := a.state
	a.mu.Unlock()
	if d == nil {
		return nil
	}
	a.redacting.mu.Lock()
	defer a.redacting.mu.Unlock()
	if a.redacting.r != nil && a.redacting.rev == d.Revision {
		return a.redacting.r
	}
	var values []string
	for _, ns := range d.State.Namespaces {
		for _, svc := range ns.Services {
			for _, e := range svc.Env {
				if e.Secret && len(e.Value) >= 4 {
					values = append(values, e.Value)
				}
			}
		}
	}
	// Longer values first, so that one inside another goes whole.
	slices.SortStableFunc(values, func(x, y string) int { return len(y) - len(x) })
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, "[redacted]")
	}
	a.redacting.r, a.redacting.rev = strings.NewReplacer(pairs...), d.Revision
	return a.redacting.r
}

// logTargets are the containers to follow now: the managed pods in the
// cache that run a service of the newest desired state.
func (a *Agent) logTargets() map[streamKey]string {
	a.mu.Lock()
	c, d := a.cache, a.state
	a.mu.Unlock()
	if c == nil || d == nil {
		return nil
	}
	return logTargets(&d.State, c.Pods)
}

// logResume asks the control plane where its log of streams ends
// (log-resume.v1), in batches: followers starting together (a new agent
// with 1,500 pods) make a few messages, not one each.
type logResume struct {
	send func(protocol.LogPositions) error
	// wait bounds how long a follower waits for the answer; past it, the
	// log is read from its start (and the control plane skips what it
	// holds).
	wait time.Duration
	// gather is how long asks are gathered before they are sent.
	gather time.Duration

	kick wake.Signal
	mu   sync.Mutex
	next int
	// asks are those not sent yet; sent those sent, by request id.
	asks []resumeAsk
	sent map[string]resumeSent
}

type resumeAsk struct {
	key   streamKey
	reply chan time.Time // buffered: an answer never blocks
}

type resumeSent struct {
	asks []resumeAsk
	at   time.Time
}

func newLogResume(send func(protocol.LogPositions) error) *logResume {
	return &logResume{send: send, wait: 10 * time.Second, gather: 50 * time.Millisecond, kick: wake.New(),
		sent: map[string]resumeSent{}}
}

// at is the time of the last line the control plane stored of a stream;
// zero when it holds none, or did not answer in time.
func (r *logResume) at(ctx context.Context, k streamKey) time.Time {
	reply := make(chan time.Time, 1)
	r.mu.Lock()
	r.asks = append(r.asks, resumeAsk{k, reply})
	r.mu.Unlock()
	r.kick.Poke()
	t := time.NewTimer(r.wait)
	defer t.Stop()
	select {
	case at := <-reply:
		return at
	case <-ctx.Done():
	case <-t.C:
	}
	return time.Time{}
}

// run sends the asks as they come, until ctx ends.
func (r *logResume) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick.C():
		}
		select { // let the followers starting with this one ask too
		case <-ctx.Done():
			return
		case <-time.After(r.gather):
		}
		r.mu.Lock()
		asks := r.asks
		r.asks = nil
		for id, s := range r.sent { // unanswered: their followers gave up
			if time.Since(s.at) > r.wait {
				delete(r.sent, id)
			}
		}
		r.mu.Unlock()
		for len(asks) > 0 {
			n := min(len(asks), protocol.MaxLogStreams)
			part := asks[:n]
			asks = asks[n:]
			m := protocol.LogPositions{Streams: make([]protocol.LogPosition, n)}
			for i, a := range part {
				m.Streams[i] = protocol.LogPosition{Environment: a.key.env, Service: a.key.service, Pod: a.key.pod, Container: a.key.container}
			}
			r.mu.Lock()
			r.next++
			m.ID = strconv.Itoa(r.next)
			r.sent[m.ID] = resumeSent{part, time.Now()}
			r.mu.Unlock()
			if err := r.send(m); err != nil {
				return // the session is ending; the followers' waits end with it
			}
		}
	}
}

// answer hands the control plane's answer to the followers that asked.
func (r *logResume) answer(m *protocol.LogPositions) {
	r.mu.Lock()
	s, ok := r.sent[m.ID]
	delete(r.sent, m.ID)
	r.mu.Unlock()
	if !ok {
		return // late, or not asked
	}
	for i, a := range s.asks {
		var at time.Time
		if i < len(m.Streams) {
			p := m.Streams[i]
			if p.At != nil && p.Environment == a.key.env && p.Service == a.key.service && p.Pod == a.key.pod &&
				p.Container == a.key.container {
				at = p.At.UTC()
			}
		}
		a.reply <- at
	}
}
