package people

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/seal"
	"github.com/nebulactrl/nebula/internal/store"
)

// The CLI's sign-in through the browser (nebula login --web), a device
// authorization as RFC 8628 has it: the CLI starts it and shows a short
// code and a link; a person signed in to the console confirms the code,
// which makes a personal API token for them in the tenant they choose;
// the CLI, polling with a secret only it holds, picks the token up once.

const (
	// CLILoginPrefix starts the secret the CLI polls with.
	CLILoginPrefix = "nbd_"
	// CLILoginTTL is how long a started sign-in waits for its person.
	CLILoginTTL = 10 * time.Minute
	// cliLoginsPerAddress bounds the sign-ins waiting from one address.
	cliLoginsPerAddress = 10
	// cliTokenTTL is how long a token made this way works.
	cliTokenTTL = 90 * 24 * time.Hour
	// codeLetters are the code's: no vowels (no words), no look-alikes.
	codeLetters = "BCDFGHJKLMNPQRSTVWXZ"
)

var (
	// ErrCLILoginPending: nobody confirmed the code yet; poll again.
	ErrCLILoginPending = errors.New("waiting for the code to be confirmed in the console")
	// ErrCLILoginGone: unknown, expired, or its token was picked up.
	ErrCLILoginGone = errors.New("this sign-in is over: it expired, or its token was picked up; start again")
)

// ActCLILoginApprove: a person confirmed a CLI's sign-in; a personal
// token was made for them.
var ActCLILoginApprove = core.Action{Name: "cli_login.approve", KeepsState: true}

// CLILoginStarted is what the CLI is told when it starts a sign-in.
type CLILoginStarted struct {
	Code, Secret string
	ExpiresAt    time.Time
}

// newCode is eight letters of codeLetters, as XXXX-XXXX.
func newCode() string {
	var b strings.Builder
	for i := range 8 {
		if i == 4 {
			b.WriteByte('-')
		}
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(codeLetters))))
		b.WriteByte(codeLetters[n.Int64()])
	}
	return b.String()
}

// StartCLILogin starts a CLI's sign-in from a client; its secret is
// returned here only.
func (p *People) StartCLILogin(ctx context.Context, from Client) (*CLILoginStarted, error) {
	ctx = core.As(ctx, core.SystemAuthenticator)
	secret, _, hash := core.NewSecret(CLILoginPrefix)
	now := p.Now()
	l := &model.CLILogin{ID: core.NewID[model.CLILoginID](), Code: newCode(), SecretHash: hash, ClientAddress: core.ClipText(from.Address, 100),
		AddressKey: core.ClipText(limitKey(from.Address), 100), UserAgent: core.ClipText(from.UserAgent, 300), CreatedAt: now, ExpiresAt: now.Add(CLILoginTTL)}
	err := p.InTx(ctx, func(q *core.Txn) error {
		// Counting and adding are one step: concurrent starts from one
		// address cannot all see room.
		if err := store.LockSubject(ctx, q, "cli-start:"+l.AddressKey); err != nil {
			return err
		}
		if _, err := store.DeleteExpiredCLILogins(ctx, q, now); err != nil {
			return err
		}
		n, err := store.CountCLILoginsFrom(ctx, q, l.AddressKey, now)
		if err != nil {
			return err
		}
		if n >= cliLoginsPerAddress {
			return RateLimited{RetryAfter: CLILoginTTL, Reason: fmt.Sprintf("%d CLI sign-ins from this address are already waiting for their code to be confirmed", cliLoginsPerAddress)}
		}
		return store.CLILogins.Insert(ctx, q, l)
	})
	if err != nil {
		return nil, err
	}
	return &CLILoginStarted{Code: l.Code, Secret: secret, ExpiresAt: l.ExpiresAt}, nil
}

// normalCode is a code as typed: any case, with or without its dash.
func normalCode(code string) string {
	c := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(code), "-", ""))
	if len(c) != 8 {
		return ""
	}
	return c[:4] + "-" + c[4:]
}

// Codes that match no waiting sign-in, per session and per address, in
// the sign-in window (RFC 8628 §5.1: a user code is short, so guessing
// must be slow); past them, code lookups are refused for a while.
const (
	cliCodeSessionLimit = 10
	cliCodeAddressLimit = 30
)

// CLILogin reads a waiting sign-in by its code, for the person about to
// confirm it (signed in to the console); one that is over is not found. A
// code that matches nothing counts against the caller's limits (each
// alias of a query too).
func (p *People) CLILogin(ctx context.Context, code string) (*model.CLILogin, error) {
	if err := p.cliConfirmer(ctx); err != nil {
		return nil, err
	}
	matched, err := p.cliCodeAttempt(ctx)
	if err != nil {
		return nil, err
	}
	l, err := store.CLILoginByCode(ctx, p.Querier(ctx), normalCode(code))
	if err != nil {
		return nil, err
	}
	if l.ApprovedAt != nil || !p.Now().Before(l.ExpiresAt) {
		return nil, store.ErrNotFound
	}
	return l, matched()
}

// cliCodeAttempt counts a lookup of a CLI sign-in code against the
// caller's limits before it is made (RateLimited past them); matched
// forgets it, for a code that matched.
func (p *People) cliCodeAttempt(ctx context.Context) (matched func() error, err error) {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	now := p.Now()
	session, address := "clicode-session:"+string(a.Session.ID), "clicode-address:"+limitKey(a.Origin)
	var room bool
	err = p.InTx(ctx, func(q *core.Txn) error {
		room, err = store.ReserveSignin(ctx, q, []store.SigninLimit{{Subject: session, Max: cliCodeSessionLimit},
			{Subject: address, Max: cliCodeAddressLimit}}, now, now.Add(-signinWindow))
		return err
	})
	if err != nil {
		return nil, err
	}
	if !room {
		return nil, RateLimited{RetryAfter: signinWindow, Reason: "too many CLI sign-in codes that match nothing"}
	}
	return func() error {
		return p.InTx(ctx, func(q *core.Txn) error {
			for _, s := range []string{session, address} {
				if err := store.ForgetSigninAttempt(ctx, q, s, now); err != nil {
					return err
				}
			}
			return nil
		})
	}, nil
}

// cliConfirmer checks the caller is a person in a browser: a CLI's
// sign-in is confirmed from a session, never with an API token (which
// could otherwise mint itself a successor).
func (p *People) cliConfirmer(ctx context.Context) error {
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return err
	}
	if a.Session == nil {
		return fmt.Errorf("%w: a CLI's sign-in is confirmed by a person signed in to the console, not with an API token", authz.ErrForbidden)
	}
	return nil
}

// ApproveCLILogin confirms a CLI's sign-in by its code: a personal API
// token of the caller in tenant (90 days) is made, sealed for the CLI to
// pick up once. It returns the token (never its secret).
func (p *People) ApproveCLILogin(ctx context.Context, code string, tenant model.TenantID) (*model.APIToken, error) {
	if err := p.cliConfirmer(ctx); err != nil {
		return nil, err
	}
	if err := p.Authorizer().CheckCtx(ctx, authz.TenantRead, model.Scope{Tenant: tenant}); err != nil {
		return nil, err
	}
	matched, err := p.cliCodeAttempt(ctx)
	if err != nil {
		return nil, err
	}
	a, _ := authz.ActorFrom(ctx)
	var tok *model.APIToken
	err = p.Change(ctx, tenant, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		l, err := store.CLILoginByCode(ctx, q, normalCode(code))
		if errors.Is(err, store.ErrNotFound) || err == nil && (l.ApprovedAt != nil || !p.Now().Before(l.ExpiresAt)) {
			return core.Invalid("no CLI sign-in waits with this code: it may have expired (10 minutes); start `nebula login --web` again", "input", "code")
		}
		if err != nil {
			return err
		}
		exp := p.Now().Add(cliTokenTTL)
		var secret string
		tok, secret, err = p.insertToken(ctx, q, tenant, a.User.ID, core.ClipText("nebula CLI from "+l.ClientAddress, 100), &exp, false)
		if err != nil {
			return err
		}
		sealed, err := p.Box().Seal([]byte(secret), l.Binding())
		if errors.Is(err, seal.ErrNoKey) {
			return core.Invalid("the CLI cannot sign in through the browser here: this control plane has no master key to keep its token until it is picked up (the operator sets NEBULA_MASTER_KEY); make a token on the Account page instead")
		}
		if err != nil {
			return err
		}
		now := p.Now()
		l.TenantID, l.UserID, l.TokenID, l.SealedToken, l.ApprovedAt = &tenant, &a.User.ID, &tok.ID, sealed, &now
		ok, err := store.ApproveCLILogin(ctx, q, l)
		if err != nil {
			return err
		}
		if !ok {
			return core.Invalid("this CLI sign-in was confirmed already", "input", "code")
		}
		core.Target(ev, ActCLILoginApprove, "ApiToken", string(tok.ID))
		ev.Details["prefix"], ev.Details["cliAddress"], ev.Details["cliUserAgent"] = tok.Prefix, l.ClientAddress, l.UserAgent
		ev.Details["userId"] = string(a.User.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tok, matched()
}

// PollCLILogin is the CLI asking with its secret whether its sign-in was
// confirmed: ErrCLILoginPending until it is; then the token's secret and
// tenant, once (the sign-in is over after).
func (p *People) PollCLILogin(ctx context.Context, secret string) (string, model.TenantID, error) {
	ctx = core.As(ctx, core.SystemAuthenticator)
	if !strings.HasPrefix(secret, CLILoginPrefix) || len(secret) > 200 {
		return "", "", ErrCLILoginGone
	}
	var token string
	var tenant model.TenantID
	err := p.InTx(ctx, func(q *core.Txn) error {
		l, err := store.CLILoginBySecret(ctx, q, core.HashToken(secret))
		if errors.Is(err, store.ErrNotFound) {
			return ErrCLILoginGone
		}
		if err != nil {
			return err
		}
		if !p.Now().Before(l.ExpiresAt) {
			return ErrCLILoginGone
		}
		if l.ApprovedAt == nil {
			return ErrCLILoginPending
		}
		plain, err := p.Box().Open(l.SealedToken, l.Binding())
		if err != nil {
			return fmt.Errorf("opening the CLI's token: %w", err)
		}
		token, tenant = string(plain), *l.TenantID
		return store.CLILogins.Delete(ctx, q, l.ID)
	})
	return token, tenant, err
}
