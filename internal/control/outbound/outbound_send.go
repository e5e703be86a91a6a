package outbound

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/internal/egress"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The sender. Every replica runs one. A message is leased before it is
// sent (store.DueMessages: one replica at a time has it, on PostgreSQL
// with SKIP LOCKED), each endpoint's messages go one at a time in the
// order they were made, and every attempt is recorded in its own
// transaction with what came back. A replica that dies mid-send leaves a
// lease that runs out: another sends the message again, with the same
// webhook-id, which is what receivers deduplicate by (Standard Webhooks).

// OutboundReport says what one pass of the sender did: messages
// delivered, and messages that failed for good.
type OutboundReport struct {
	Delivered, Failed int
}

// RunOutbound delivers messages as they fall due until ctx ends: at once
// when a change on this replica made one, else every Poll.
func (p *Outbound) RunOutbound(ctx context.Context) {
	t := time.NewTicker(p.Settings.Outbound.Poll)
	defer t.Stop()
	client := egress.Client(p.Settings.Outbound.Timeout, p.Settings.Outbound.AllowPrivate)
	for {
		_, more, err := p.deliverDue(ctx, client)
		if err != nil && ctx.Err() == nil {
			p.Log().Warn("delivering webhooks", "error", err)
		}
		if more && err == nil {
			continue // a full batch: there may be more due
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.SenderWake():
		}
	}
}

// DeliverOutbound makes one pass: every message due now is sent once.
func (p *Outbound) DeliverOutbound(ctx context.Context) (OutboundReport, error) {
	client := egress.Client(p.Settings.Outbound.Timeout, p.Settings.Outbound.AllowPrivate)
	var all OutboundReport
	for {
		rep, more, err := p.deliverDue(ctx, client)
		all.Delivered, all.Failed = all.Delivered+rep.Delivered, all.Failed+rep.Failed
		if err != nil || !more {
			return all, err
		}
	}
}

// deliverDue leases a batch of due messages and sends them at once, one
// per endpoint; more tells whether the batch was full.
func (p *Outbound) deliverDue(ctx context.Context, client *http.Client) (OutboundReport, bool, error) {
	ctx = core.As(ctx, core.SystemSender)
	var rep OutboundReport
	batch := p.Settings.Outbound.Concurrency
	var due []*model.Message
	eps := map[model.EndpointID]*model.Endpoint{}
	err := p.InTx(ctx, func(q *core.Txn) error {
		now := p.Now()
		var err error
		due, err = store.DueMessages(ctx, q, now, now.Add(p.Settings.Outbound.Timeout+30*time.Second), batch)
		if err != nil || len(due) == 0 {
			return err
		}
		ids := make([]model.EndpointID, len(due))
		for i, m := range due {
			ids[i] = m.EndpointID
		}
		eps, err = store.Endpoints.ByIDs(ctx, q, ids)
		return err
	})
	if err != nil || len(due) == 0 {
		return rep, false, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for _, m := range due {
		e := eps[m.EndpointID]
		if e == nil {
			continue // deleted meanwhile: its messages went with it
		}
		wg.Go(func() {
			a := p.attempt(ctx, client, e, m)
			// What was sent is recorded even when the replica is stopping:
			// else a delivered message would go out again once its lease ran
			// out.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			outcome, err := p.recordAttempt(rctx, m, a)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			switch outcome {
			case model.MessageDelivered:
				rep.Delivered++
			case model.MessageFailed:
				rep.Failed++
			}
		})
	}
	wg.Wait()
	return rep, len(due) == batch, errors.Join(errs...)
}

// attempt sends a message once and says what came of it.
func (p *Outbound) attempt(ctx context.Context, client *http.Client, e *model.Endpoint, m *model.Message) *model.Attempt {
	now := p.Now()
	a := &model.Attempt{ID: core.NewID[model.AttemptID](), MessageID: m.ID, EndpointID: e.ID, TenantID: m.TenantID, At: now,
		Redelivery: m.Redelivery}
	sig, err := p.sign(e, m, now)
	if err != nil {
		a.Error = err.Error()
		return a
	}
	ctx, cancel := context.WithTimeout(ctx, p.Settings.Outbound.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(m.Payload))
	if err != nil {
		a.Error = "the endpoint's URL cannot be requested: " + err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", p.Settings.Outbound.UserAgent)
	req.Header.Set("webhook-id", "msg_"+string(m.ID))
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	start := time.Now()
	resp, err := client.Do(req)
	a.Latency = time.Since(start)
	if err != nil {
		a.Error = attemptError(err)
		return a
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	a.StatusCode, a.Response = resp.StatusCode, excerpt(body)
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		a.Error = fmt.Sprintf("redirected (HTTP %d to %q): redirects are not followed", resp.StatusCode, resp.Header.Get("Location"))
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		a.Error = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return a
}

// sign is the webhook-signature header: HMAC-SHA256 of
// "id.timestamp.body" under the endpoint's secret (and, during a
// rotation's overlap, under the old one too), as Standard Webhooks say.
func (p *Outbound) sign(e *model.Endpoint, m *model.Message, at time.Time) (string, error) {
	secrets := []string{e.Secret}
	if e.OldSecret != "" && e.OldSecretUntil != nil && at.Before(*e.OldSecretUntil) {
		secrets = append(secrets, e.OldSecret)
	}
	content := "msg_" + string(m.ID) + "." + strconv.FormatInt(at.Unix(), 10) + "." + string(m.Payload)
	var out []string
	for _, sealed := range secrets {
		plain, err := p.Box().Open(sealed, e.Binding())
		if err != nil {
			return "", fmt.Errorf("the endpoint's secret cannot be opened with this control plane's master keys: %w", err)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(string(plain), "whsec_"))
		if err != nil {
			return "", errors.New("the endpoint's secret is not a whsec_ secret")
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(content))
		out = append(out, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(out, " "), nil
}

// attemptError says why a request got no answer, without the request's
// details (no header, no secret).
func attemptError(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, egress.ErrPrivateAddress):
		return "refused: the endpoint's address is loopback, private or link-local (NEBULA_WEBHOOK_ALLOW_PRIVATE_NETWORKS allows it)"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op + ": " + op.Err.Error()
	}
	return err.Error()
}

// excerpt is the start of an answer, as valid text.
func excerpt(b []byte) string {
	s := strings.ToValidUTF8(string(b), "�")
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// recordAttempt stores an attempt and moves its message on: DELIVERED; or
// tried again later, backing off; or, past the retry window, FAILED with
// its endpoint disabled (audited as the control plane's own change).
func (p *Outbound) recordAttempt(ctx context.Context, m *model.Message, a *model.Attempt) (model.MessageStatus, error) {
	var status model.MessageStatus
	err := p.InTx(ctx, func(q *core.Txn) error {
		cur, err := store.Messages.GetForUpdate(ctx, q, m.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil // its endpoint was deleted meanwhile
		}
		if err != nil {
			return err
		}
		if err := store.Attempts.Insert(ctx, q, a); err != nil {
			return err
		}
		now := p.Now()
		cur.Attempts++
		cur.LeaseUntil, cur.Redelivery = nil, false
		switch {
		case a.Delivered():
			cur.Status, cur.DeliveredAt = model.MessageDelivered, &now
		case now.Sub(cur.CreatedAt) >= p.Settings.Outbound.RetryWindow && !m.Redelivery:
			cur.Status = model.MessageFailed
			if err := p.disableFailing(ctx, q, cur, a); err != nil {
				return err
			}
		case m.Redelivery:
			// A redelivery a manager asked for is tried once.
			cur.Status = model.MessageFailed
		default:
			cur.NextAttemptAt = now.Add(p.backoff(cur.Attempts))
		}
		status = cur.Status
		return store.UpdateMessage(ctx, q, cur)
	})
	return status, err
}

// backoff is the wait before attempt n+1: doubling from BackoffMin to
// BackoffMax, then jittered to between half and all of it, so that many
// endpoints failing together do not retry together.
func (p *Outbound) backoff(n int) time.Duration {
	d := p.Settings.Outbound.BackoffMin << min(n-1, 30)
	if d <= 0 || d > p.Settings.Outbound.BackoffMax {
		d = p.Settings.Outbound.BackoffMax
	}
	return d/2 + rand.N(d/2+1)
}

// disableFailing disables an endpoint every attempt of whose message
// failed for the retry window.
func (p *Outbound) disableFailing(ctx context.Context, q *core.Txn, m *model.Message, a *model.Attempt) error {
	e, err := store.Endpoints.GetForUpdate(ctx, q, m.EndpointID)
	if err != nil {
		return err
	}
	if !e.Enabled {
		return nil
	}
	now := p.Now()
	e.Enabled, e.DisabledAt = false, &now
	e.DisabledReason = fmt.Sprintf("every attempt to deliver message msg_%s failed for %s (%d attempts; the last: %s)",
		m.ID, p.Settings.Outbound.RetryWindow, m.Attempts, a.Error)
	e.UpdatedAt = now
	q.EndpointsChanged()
	if err := store.UpdateEndpoint(ctx, q, e); err != nil {
		return err
	}
	ev := &core.Audit{AuditEvent: &model.AuditEvent{TenantID: e.TenantID, ClientAddress: "webhook sender", CreatedAt: now,
		Details: map[string]any{"reason": e.DisabledReason, "messageId": string(m.ID), "url": e.URL}}}
	core.Target(ev, ActEndpointFailing, "WebhookEndpoint", string(e.ID))
	return store.InsertAudit(ctx, q, ev.AuditEvent)
}
