package outbound_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/controltest"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/control/outbound"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The rules of outbound webhooks, tested on the embedded store without the
// API: what an endpoint may be given, who may make one, that its secret is
// shown once, and that a change's message reaches its endpoint signed.

func shop(t *testing.T, settings func(*core.OutboundSettings)) *controltest.Shop {
	t.Helper()
	os := core.DefaultOutboundSettings
	if settings != nil {
		settings(&os)
	}
	return controltest.Sealed(t, core.WithOutbound(os))
}

func endpoints(t *testing.T, s *controltest.Shop) []*model.Endpoint {
	t.Helper()
	es, err := s.P.Outbound.EndpointsOfTenant(s.Admin, s.Boot.Tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestEndpointRules(t *testing.T) {
	s := shop(t, nil)
	events := []model.EventKind{model.EventDeploymentEnded}
	for _, url := range []string{"", "ftp://hooks.example.com/x", "http://127.0.0.1:9/hook", "http://[::1]/hook",
		"http://169.254.169.254/latest", "https://hooks.example.com/" + strings.Repeat("x", 5000)} {
		_, secret, err := s.P.Outbound.CreateEndpoint(s.Admin, outbound.EndpointInput{Tenant: s.Boot.Tenant.ID, URL: url, Events: events})
		if _, ok := core.AsProblems(err); !ok {
			t.Errorf("an endpoint at %.60q: %v, want a problem with the input", url, err)
		}
		if secret != "" {
			t.Errorf("a refused endpoint at %.60q handed out a secret", url)
		}
	}
	if _, _, err := s.P.Outbound.CreateEndpoint(s.Admin, outbound.EndpointInput{Tenant: s.Boot.Tenant.ID,
		URL: "https://93.184.215.14/x"}); err == nil {
		t.Error("an endpoint for no events was made")
	}
	if es := endpoints(t, s); len(es) != 0 {
		t.Fatalf("refused inputs stored %d endpoints", len(es))
	}

	// A member who is no admin may not make one.
	member := s.Person(t, "dev@acme.test", model.TenantMember, "")
	if _, _, err := s.P.Outbound.CreateEndpoint(member, outbound.EndpointInput{Tenant: s.Boot.Tenant.ID,
		URL: "https://93.184.215.14/x", Events: events}); !errors.Is(err, authz.ErrForbidden) {
		t.Errorf("a member made a tenant endpoint: %v, want forbidden", err)
	}

	e, secret, err := s.P.Outbound.CreateEndpoint(s.Admin, outbound.EndpointInput{Tenant: s.Boot.Tenant.ID,
		URL: "https://93.184.215.14/x", Events: events})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the new endpoint's secret is %q, want a whsec_ secret", secret)
	}
	// Read back, the endpoint carries its secret in no form.
	read, err := s.P.Outbound.Endpoint(s.Admin, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(read)
	key := strings.TrimPrefix(secret, "whsec_")
	for _, form := range []string{secret, key, base64.RawStdEncoding.EncodeToString([]byte(secret))} {
		if strings.Contains(string(raw), form) {
			t.Fatalf("the endpoint read back holds its secret: %s", raw)
		}
	}
}

// A deploy writes its messages in its own transaction; the sender delivers
// them once, signed under the endpoint's secret as Standard Webhooks say.
func TestChangeMessageDeliveredSigned(t *testing.T) {
	type delivery struct {
		header http.Header
		body   []byte
	}
	got := make(chan delivery, 100)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), body}
	}))
	defer rc.Close()
	s := shop(t, func(o *core.OutboundSettings) { o.AllowPrivate = true })
	_, secret, err := s.P.Outbound.CreateEndpoint(s.Admin, outbound.EndpointInput{Tenant: s.Boot.Tenant.ID,
		URL: rc.URL + "/hooks", Events: []model.EventKind{model.EventDeploymentStage}})
	if err != nil {
		t.Fatal(err)
	}
	s.Deploy(t, 1)
	// The sender sends an endpoint's messages in order, a pass at a time,
	// until none is due.
	delivered := 0
	for pass := 0; ; pass++ {
		rep, err := s.P.Outbound.DeliverOutbound(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed != 0 {
			t.Fatalf("pass %d failed %d deliveries", pass, rep.Failed)
		}
		if rep.Delivered == 0 {
			break
		}
		if pass == 20 {
			t.Fatal("messages still due after 20 passes")
		}
		delivered += rep.Delivered
	}
	e := endpoints(t, s)[0]
	msgs, err := s.P.Outbound.EndpointMessages(s.Admin, e, nil, store.PageArgs{First: 100})
	if err != nil {
		t.Fatal(err)
	}
	if delivered == 0 || delivered != len(msgs.Items) {
		t.Fatalf("%d deliveries of %d messages, want each once", delivered, len(msgs.Items))
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for range delivered {
		d := <-got
		if ids[d.header.Get("webhook-id")] {
			t.Errorf("message %s delivered twice", d.header.Get("webhook-id"))
		}
		ids[d.header.Get("webhook-id")] = true
		var payload struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(d.body, &payload); err != nil || payload.Type != string(model.EventDeploymentStage) {
			t.Errorf("a delivery of %q (%v), want a %s event", d.body, err, model.EventDeploymentStage)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(d.header.Get("webhook-id") + "." + d.header.Get("webhook-timestamp") + "." + string(d.body)))
		if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); d.header.Get("webhook-signature") != want {
			t.Errorf("signature %q, want %q", d.header.Get("webhook-signature"), want)
		}
	}
}
