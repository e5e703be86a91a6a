package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// The life of a deployment as the API shows it: the stages the control
// plane moves it through without an agent (none is connected in these
// tests, so a released deployment stays DELIVERING, blocked on delivery),
// approvals in a protected environment, cancelling, superseding, redeploys
// and rollbacks.

// depFields is the selection the tests read a deployment with.
const depFields = `id stage blocker message approvalExpiresAt createdAt
	requestedBy { id } release { id number } cluster { id }
	approvals { decision comment user { id } }
	events { nodes { cursor sequence stage blocker message at } }`

// depView is a deployment as depFields reads it.
type depView struct {
	ID                string  `json:"id"`
	Stage             string  `json:"stage"`
	Blocker           *string `json:"blocker"`
	Message           string  `json:"message"`
	ApprovalExpiresAt *string `json:"approvalExpiresAt"`
	CreatedAt         string  `json:"createdAt"`
	RequestedBy       *struct {
		ID string `json:"id"`
	} `json:"requestedBy"`
	Release struct {
		ID     string `json:"id"`
		Number int    `json:"number"`
	} `json:"release"`
	Cluster struct {
		ID string `json:"id"`
	} `json:"cluster"`
	Approvals []struct {
		Decision string `json:"decision"`
		Comment  string `json:"comment"`
		User     *struct {
			ID string `json:"id"`
		} `json:"user"`
	} `json:"approvals"`
	Events depEvents `json:"events"`
}

// depEvents reads a deployment's events (a connection) as its nodes.
type depEvents []depEvent

func (e *depEvents) UnmarshalJSON(b []byte) error {
	var c struct {
		Nodes []depEvent `json:"nodes"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	*e = c.Nodes
	return nil
}

type depEvent struct {
	Cursor   string  `json:"cursor"`
	Sequence int     `json:"sequence"`
	Stage    string  `json:"stage"`
	Blocker  *string `json:"blocker"`
	Message  string  `json:"message"`
	At       string  `json:"at"`
}

func (d depView) blocker() string {
	if d.Blocker == nil {
		return "<null>"
	}
	return *d.Blocker
}

func (e depEvent) blocker() string {
	if e.Blocker == nil {
		return "<null>"
	}
	return *e.Blocker
}

// same compares two events by value.
func (e depEvent) same(o depEvent) bool {
	return e.Cursor == o.Cursor && e.Sequence == o.Sequence && e.Stage == o.Stage &&
		e.blocker() == o.blocker() && e.Message == o.Message && e.At == o.At
}

func (d depView) stages() []string {
	out := make([]string, len(d.Events))
	for i, e := range d.Events {
		out[i] = e.Stage
	}
	return out
}

func (d depView) sequences() []int {
	out := make([]int, len(d.Events))
	for i, e := range d.Events {
		out[i] = e.Sequence
	}
	return out
}

// newPM adds a tenant member holding PROJECT_MANAGER in the fixture
// project, distinct from the matrix's callers.
func newPM(t *testing.T, f *Fixture, name string) *Caller {
	t.Helper()
	c := f.NewCaller(t, name, "MEMBER")
	c.ProjectMemberID = f.GrantProjectRole(t, f.ProjectID, c.UserID, "PROJECT_MANAGER")
	return c
}

// deployTo deploys a fresh digest of a service to an environment with the
// token and returns the new deployment; it fails on any error.
func deployTo(t *testing.T, f *Fixture, token, service, env string) depView {
	t.Helper()
	res := f.Env.MustDo(t, token, `mutation($s: ID!, $e: ID!, $d: String!) {
		deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { `+depFields+` } `+ue+` } }`,
		map[string]any{"s": service, "e": env, "d": Digest(f.Env.Next())})
	return decodeInto[depView](t, res.Get("deploy.deployment"))
}

// readDep reads a deployment as the owner.
func readDep(t *testing.T, f *Fixture, id string) depView {
	t.Helper()
	n := f.Node(t, id, `... on Deployment { `+depFields+` }`)
	if n == nil {
		t.Fatalf("deployment %s not found", id)
	}
	return decodeInto[depView](t, n)
}

// decide runs approveDeployment or rejectDeployment with the token.
func decide(t *testing.T, f *Fixture, token, field, id, comment string) Response {
	t.Helper()
	res := f.Env.Do(t, token, `mutation($d: ID!, $c: String) { `+field+`(input: {deploymentId: $d, comment: $c}) {
		deployment { `+depFields+` } `+ue+` } }`, map[string]any{"d": id, "c": comment})
	if res.Status != http.StatusOK || len(res.Errors) > 0 {
		t.Fatalf("%s: HTTP %d, errors %s", field, res.Status, res.errorList())
	}
	return res
}

// cancelDep runs cancelDeployment with the token.
func cancelDep(t *testing.T, f *Fixture, token, id, reason string) Response {
	t.Helper()
	return f.Env.Do(t, token, `mutation($d: ID!, $r: String) { cancelDeployment(input: {deploymentId: $d, reason: $r}) {
		deployment { `+depFields+` } `+ue+` } }`, map[string]any{"d": id, "r": reason})
}

// wantUserError checks that the mutation's payload holds exactly one user
// error, of the code on the field, whose message contains every fragment.
func wantUserError(t *testing.T, res Response, mutation, code string, field []string, fragments ...string) {
	t.Helper()
	if len(res.Errors) > 0 {
		t.Fatalf("%s: top-level errors %s, want a %s user error", mutation, res.errorList(), code)
	}
	ues := res.UserErrors(mutation)
	if len(ues) != 1 {
		t.Fatalf("%s: userErrors %+v, want one %s", mutation, ues, code)
	}
	u := ues[0]
	if u.Code != code {
		t.Errorf("%s: userError code %s (%q), want %s", mutation, u.Code, u.Message, code)
	}
	if !slices.Equal(u.Field, field) {
		t.Errorf("%s: userError field %v, want %v", mutation, u.Field, field)
	}
	for _, s := range fragments {
		if !strings.Contains(u.Message, s) {
			t.Errorf("%s: userError message %q, want it to mention %q", mutation, u.Message, s)
		}
	}
}

func parseTime(t *testing.T, what, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s: %q is not an RFC 3339 time: %v", what, s, err)
	}
	return at
}

// desiredRelease reads the fixture cluster's desired state as the owner and
// returns its revision and the release number it runs for the named
// service (0 when the service is not in it).
func desiredRelease(t *testing.T, f *Fixture, service string) (revision, release int) {
	t.Helper()
	n := f.Node(t, f.ClusterID, `... on Cluster { desiredRevision desiredState }`)
	if n == nil {
		t.Fatalf("cluster %s not found", f.ClusterID)
	}
	rev, _ := n["desiredRevision"].(float64)
	st := decodeInto[shownState](t, n["desiredState"])
	if st.Revision != int64(rev) {
		t.Errorf("desiredState is of revision %d, desiredRevision %v", st.Revision, rev)
	}
	for _, ns := range st.Namespaces {
		for _, s := range ns.Services {
			if s.Name == service {
				if release != 0 {
					t.Errorf("service %s is in the desired state twice", service)
				}
				release = s.Release
			}
		}
	}
	return int(rev), release
}

// A deployment to an unprotected environment is queued, then delivered;
// with no agent connected it stays DELIVERING, blocked on delivery. Its
// events page by cursor.
func TestDeploymentDeliveryBlocker(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		start := time.Now()
		d := deployTo(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID)

		// The fixture delivered release 1; this is release 2.
		if d.Release.Number != 2 {
			t.Errorf("release number %d, want 2", d.Release.Number)
		}
		if d.Stage != "DELIVERING" || d.blocker() != "DELIVERY" {
			t.Errorf("stage %s, blocker %s; want DELIVERING blocked on delivery", d.Stage, d.blocker())
		}
		wantMsg := "release 2 waits for cluster prod-eu, whose agent is not connected"
		if d.Message != wantMsg {
			t.Errorf("message %q, want %q", d.Message, wantMsg)
		}
		if d.ApprovalExpiresAt != nil {
			t.Errorf("approvalExpiresAt %q in an unprotected environment, want null", *d.ApprovalExpiresAt)
		}
		if len(d.Approvals) != 0 {
			t.Errorf("approvals %+v, want none", d.Approvals)
		}
		if d.RequestedBy == nil || d.RequestedBy.ID != f.Owner.UserID {
			t.Errorf("requestedBy %+v, want the owner %s", d.RequestedBy, f.Owner.UserID)
		}
		if d.Cluster.ID != f.ClusterID {
			t.Errorf("cluster %s, want %s", d.Cluster.ID, f.ClusterID)
		}

		// The payload and a later read agree.
		got := readDep(t, f, d.ID)
		if got.Stage != d.Stage || got.Message != d.Message || got.blocker() != d.blocker() {
			t.Errorf("read back as %s/%s/%q, the payload said %s/%s/%q", got.Stage, got.blocker(), got.Message, d.Stage, d.blocker(), d.Message)
		}
		evs := got.Events
		if !slices.Equal(got.stages(), []string{"QUEUED", "DELIVERING"}) || !slices.Equal(got.sequences(), []int{1, 2}) {
			t.Fatalf("events %+v, want QUEUED (1) then DELIVERING (2)", evs)
		}
		if evs[0].Blocker != nil || evs[0].Message != "release 2 requested by admin@acme.test" {
			t.Errorf("event 1: blocker %s, message %q; want no blocker, %q", evs[0].blocker(), evs[0].Message, "release 2 requested by admin@acme.test")
		}
		if evs[1].blocker() != "DELIVERY" || evs[1].Message != wantMsg {
			t.Errorf("event 2: blocker %s, message %q; want delivery, %q", evs[1].blocker(), evs[1].Message, wantMsg)
		}
		at1, at2 := parseTime(t, "event 1 at", evs[0].At), parseTime(t, "event 2 at", evs[1].At)
		if at2.Before(at1) {
			t.Errorf("event 2 at %s is before event 1 at %s", at2, at1)
		}
		if at1.Before(start.Add(-time.Minute)) || at2.After(time.Now().Add(time.Minute)) {
			t.Errorf("events at %s and %s, want them around now (%s)", at1, at2, start)
		}
		if evs[0].Cursor == "" || evs[0].Cursor == evs[1].Cursor {
			t.Errorf("cursors %q and %q, want two different ones", evs[0].Cursor, evs[1].Cursor)
		}

		// The events page both ways; an edge's cursor is its event's.
		const pageQuery = `query($id: ID!, $first: Int, $after: String, $last: Int, $before: String) { node(id: $id) { ... on Deployment {
			events(first: $first, after: $after, last: $last, before: $before) { edges { cursor node { cursor } }
				nodes { cursor sequence stage blocker message at } pageInfo { hasNextPage hasPreviousPage } } } } }`
		page := func(vars map[string]any) ([]depEvent, Response) {
			t.Helper()
			vars["id"] = d.ID
			r := env.MustDo(t, f.Owner.Token, pageQuery, vars)
			for _, e := range r.List("node.events.edges") {
				if dig(e, "cursor") != dig(e, "node.cursor") {
					t.Errorf("an edge's cursor %v is not its event's %v", dig(e, "cursor"), dig(e, "node.cursor"))
				}
			}
			return decodeInto[[]depEvent](t, r.Get("node.events.nodes")), r
		}
		if p, _ := page(map[string]any{"after": evs[0].Cursor}); len(p) != 1 || !p[0].same(evs[1]) {
			t.Errorf("events after event 1: %+v, want only event 2 %+v", p, evs[1])
		}
		if p, _ := page(map[string]any{"after": evs[1].Cursor}); len(p) != 0 {
			t.Errorf("events after event 2: %+v, want none", p)
		}
		if p, r := page(map[string]any{"first": 1}); len(p) != 1 || !p[0].same(evs[0]) || r.Get("node.events.pageInfo.hasNextPage") != true {
			t.Errorf("first 1 event: %+v (%s), want only event 1 %+v, and more", p, r.Body, evs[0])
		}
		if p, r := page(map[string]any{"last": 1}); len(p) != 1 || !p[0].same(evs[1]) || r.Get("node.events.pageInfo.hasPreviousPage") != true {
			t.Errorf("last 1 event: %+v (%s), want only event 2 %+v, and more before", p, r.Body, evs[1])
		}
		if p, r := page(map[string]any{"last": 5, "before": evs[1].Cursor}); len(p) != 1 || !p[0].same(evs[0]) ||
			r.Get("node.events.pageInfo.hasPreviousPage") != false {
			t.Errorf("the events before event 2: %+v (%s), want only event 1 %+v", p, r.Body, evs[0])
		}
		if p, _ := page(map[string]any{"after": evs[0].Cursor, "before": evs[1].Cursor}); len(p) != 0 {
			t.Errorf("the events between 1 and 2: %+v, want none", p)
		}
		// An edge's cursor resumes the subscription: what follows event 1.
		sub := subscribeOn(t, env, f.Owner.Token, `subscription($d: ID!, $a: String) { deploymentEvents(deploymentId: $d, after: $a) { stage } }`,
			map[string]any{"d": d.ID, "a": evs[0].Cursor})
		sub.waitValues(t, "deploymentEvents.stage", []string{"DELIVERING"})

		for _, bad := range []map[string]any{{"after": "not-a-cursor"}, {"after": "ZXZlbnQ6LTE" /* event:-1 */}, {"after": evs[0].Cursor + "!"},
			{"before": "MQ" /* 1, not an event's */}, {"first": 1, "last": 1}, {"first": 1001}, {"last": -1}} {
			bad["id"] = d.ID
			r := env.Do(t, f.Owner.Token, pageQuery, bad)
			if codes := r.ErrorCodes(); !slices.Equal(codes, []string{"BAD_USER_INPUT"}) {
				t.Errorf("events(%v): error codes %v (%s), want [BAD_USER_INPUT]", bad, codes, r.Body)
			}
			if r.Get("node") != nil {
				t.Errorf("events(%v): node %v, want null", bad, r.Get("node"))
			}
		}
		if r := env.Do(t, f.Owner.Token, pageQuery, map[string]any{"id": d.ID, "first": 1000}); len(r.ErrorCodes()) != 0 {
			t.Errorf("events(first: 1000): %s, want the events", r.Body)
		}
	})
}

// A requester may not approve their own deployment; another project
// manager may, and the deployment is then delivered.
func TestDeploymentSelfApprovalRefused(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		pm, reviewer := newPM(t, f, "pm-requester"), newPM(t, f, "pm-reviewer")

		d := deployTo(t, f, pm.Token, f.ServiceID, f.ProtectedEnvironmentID)
		if d.Stage != "AWAITING_APPROVAL" || d.blocker() != "APPROVAL" {
			t.Fatalf("stage %s, blocker %s; want AWAITING_APPROVAL blocked on approval", d.Stage, d.blocker())
		}
		// Release numbers count per environment: the protected one had none.
		if d.Release.Number != 1 {
			t.Errorf("release number %d, want 1 (the protected environment's first)", d.Release.Number)
		}
		if d.RequestedBy == nil || d.RequestedBy.ID != pm.UserID {
			t.Errorf("requestedBy %+v, want the requester %s", d.RequestedBy, pm.UserID)
		}
		if !strings.Contains(d.Message, "production-gated is protected") || !strings.Contains(d.Message, "approve release 1") {
			t.Errorf("message %q, want it to say the environment is protected and release 1 waits for approval", d.Message)
		}
		if d.ApprovalExpiresAt == nil {
			t.Fatalf("approvalExpiresAt is null while awaiting approval")
		}
		exp := parseTime(t, "approvalExpiresAt", *d.ApprovalExpiresAt)
		created := parseTime(t, "createdAt", d.CreatedAt)
		if w := exp.Sub(created); w < 24*time.Hour || w > 24*time.Hour+time.Minute {
			t.Errorf("approvalExpiresAt %s is %s after createdAt %s, want 24h", exp, w, created)
		}
		if w := time.Until(exp); w < 23*time.Hour+58*time.Minute || w > 24*time.Hour+time.Minute {
			t.Errorf("approvalExpiresAt %s is %s from now, want about 24h", exp, w)
		}
		if !slices.Equal(d.stages(), []string{"QUEUED", "AWAITING_APPROVAL"}) || !slices.Equal(d.sequences(), []int{1, 2}) {
			t.Errorf("events %+v, want QUEUED (1) then AWAITING_APPROVAL (2)", d.Events)
		} else if d.Events[1].blocker() != "APPROVAL" {
			t.Errorf("event 2 blocker %s, want approval", d.Events[1].blocker())
		}

		// The requester tries to approve their own deployment.
		audit := f.AuditCount(t)
		res := decide(t, f, pm.Token, "approveDeployment", d.ID, "self")
		wantUserError(t, res, "approveDeployment", "CONFLICT", []string{"input", "deploymentId"}, "you requested this deployment")
		if res.Get("approveDeployment.deployment") != nil {
			t.Errorf("refused approval returned a deployment: %s", res.Body)
		}
		if got := f.AuditCount(t); got != audit {
			t.Errorf("refused approval wrote %d audit events, want none", got-audit)
		}
		after := readDep(t, f, d.ID)
		if after.Stage != "AWAITING_APPROVAL" || after.blocker() != "APPROVAL" {
			t.Errorf("after refused self-approval: stage %s, blocker %s; want AWAITING_APPROVAL, approval", after.Stage, after.blocker())
		}
		if len(after.Approvals) != 0 {
			t.Errorf("after refused self-approval: approvals %+v, want none", after.Approvals)
		}
		if len(after.Events) != 2 {
			t.Errorf("after refused self-approval: %d events, want 2", len(after.Events))
		}

		// Another project manager approves.
		res = decide(t, f, reviewer.Token, "approveDeployment", d.ID, "looks good to me")
		if ue := res.UserErrors("approveDeployment"); len(ue) > 0 {
			t.Fatalf("approval by another project manager: userErrors %+v", ue)
		}
		if got := f.AuditCount(t); got != audit+1 {
			t.Errorf("approval wrote %d audit events, want 1", got-audit)
		}
		for name, got := range map[string]depView{
			"payload": decodeInto[depView](t, res.Get("approveDeployment.deployment")),
			"read":    readDep(t, f, d.ID),
		} {
			if got.Stage != "DELIVERING" || got.blocker() != "DELIVERY" {
				t.Errorf("%s after approval: stage %s, blocker %s; want DELIVERING, delivery", name, got.Stage, got.blocker())
			}
			if got.ApprovalExpiresAt != nil {
				t.Errorf("%s after approval: approvalExpiresAt %q, want null once it no longer awaits approval", name, *got.ApprovalExpiresAt)
			}
			if len(got.Approvals) != 1 {
				t.Errorf("%s after approval: approvals %+v, want one", name, got.Approvals)
			} else if a := got.Approvals[0]; a.Decision != "APPROVED" || a.Comment != "looks good to me" || a.User == nil || a.User.ID != reviewer.UserID {
				t.Errorf("%s after approval: approval %+v, want APPROVED, %q, by %s", name, a, "looks good to me", reviewer.UserID)
			}
		}
		got := readDep(t, f, d.ID)
		if !slices.Equal(got.sequences(), []int{1, 2, 3, 4}) {
			t.Fatalf("events %+v, want sequences 1-4", got.Events)
		}
		wantApproved := fmt.Sprintf("approved by %s: looks good to me", reviewer.Email)
		if e := got.Events[1]; e.Stage != "AWAITING_APPROVAL" {
			t.Errorf("event 2: %+v, want AWAITING_APPROVAL", e)
		}
		if e := got.Events[2]; e.Message != wantApproved || e.Stage != "AWAITING_APPROVAL" {
			t.Errorf("event 3: stage %s, message %q; want the approval %q, still AWAITING_APPROVAL", e.Stage, e.Message, wantApproved)
		}
		if e := got.Events[3]; e.Stage != "DELIVERING" || e.blocker() != "DELIVERY" {
			t.Errorf("event 4: stage %s, blocker %s; want DELIVERING, delivery", e.Stage, e.blocker())
		}

		// Deciding again is a conflict: it no longer awaits approval.
		res = decide(t, f, f.Owner.Token, "rejectDeployment", d.ID, "too late")
		wantUserError(t, res, "rejectDeployment", "CONFLICT", []string{"input", "deploymentId"}, "DELIVERING", "not awaiting approval")
	})
}

// A rejected deployment ends CANCELLED, and says who rejected it and why.
func TestDeploymentReject(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		pm := newPM(t, f, "pm")
		d := deployTo(t, f, pm.Token, f.ServiceID, f.ProtectedEnvironmentID)
		if d.Stage != "AWAITING_APPROVAL" {
			t.Fatalf("stage %s, want AWAITING_APPROVAL", d.Stage)
		}
		rev, _ := desiredRelease(t, f, "api")
		audit := f.AuditCount(t)

		res := decide(t, f, f.Owner.Token, "rejectDeployment", d.ID, "not during the sale")
		if ue := res.UserErrors("rejectDeployment"); len(ue) > 0 {
			t.Fatalf("reject: userErrors %+v", ue)
		}
		if got := f.AuditCount(t); got != audit+1 {
			t.Errorf("reject wrote %d audit events, want 1", got-audit)
		}
		wantMsg := "rejected by admin@acme.test: not during the sale"
		for name, got := range map[string]depView{
			"payload": decodeInto[depView](t, res.Get("rejectDeployment.deployment")),
			"read":    readDep(t, f, d.ID),
		} {
			if got.Stage != "CANCELLED" || got.Blocker != nil {
				t.Errorf("%s: stage %s, blocker %s; want CANCELLED, none", name, got.Stage, got.blocker())
			}
			if got.Message != wantMsg {
				t.Errorf("%s: message %q, want %q", name, got.Message, wantMsg)
			}
			if got.ApprovalExpiresAt != nil {
				t.Errorf("%s: approvalExpiresAt %q, want null", name, *got.ApprovalExpiresAt)
			}
			if len(got.Approvals) != 1 {
				t.Errorf("%s: approvals %+v, want one", name, got.Approvals)
			} else if a := got.Approvals[0]; a.Decision != "REJECTED" || a.Comment != "not during the sale" || a.User == nil || a.User.ID != f.Owner.UserID {
				t.Errorf("%s: approval %+v, want REJECTED, %q, by the owner", name, a, "not during the sale")
			}
		}
		got := readDep(t, f, d.ID)
		if !slices.Equal(got.stages(), []string{"QUEUED", "AWAITING_APPROVAL", "CANCELLED"}) || !slices.Equal(got.sequences(), []int{1, 2, 3}) {
			t.Errorf("events %+v, want QUEUED, AWAITING_APPROVAL, CANCELLED numbered 1-3", got.Events)
		} else if got.Events[2].Message != wantMsg {
			t.Errorf("last event message %q, want %q", got.Events[2].Message, wantMsg)
		}
		// A rejected request was never released: the cluster keeps what it had.
		if after, _ := desiredRelease(t, f, "api"); after != rev {
			t.Errorf("desiredRevision moved from %d to %d on a rejection", rev, after)
		}
		// It cannot be approved afterwards.
		res = decide(t, f, f.Owner.Token, "approveDeployment", d.ID, "changed my mind")
		wantUserError(t, res, "approveDeployment", "CONFLICT", []string{"input", "deploymentId"}, "CANCELLED")
	})
}

// An approval is only good within its window (24 hours by default).
// Each store gets its own control plane, since the test moves its clock.
func TestDeploymentApprovalExpiry(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		pm := newPM(t, f, "pm")
		worker := f.NewService(t, f.ProjectID, "worker")
		late := deployTo(t, f, pm.Token, f.ServiceID, f.ProtectedEnvironmentID)
		inTime := deployTo(t, f, pm.Token, worker, f.ProtectedEnvironmentID)
		for _, d := range []depView{late, inTime} {
			if d.Stage != "AWAITING_APPROVAL" || d.ApprovalExpiresAt == nil {
				t.Fatalf("deployment %s: stage %s, approvalExpiresAt %v; want AWAITING_APPROVAL with a window", d.ID, d.Stage, d.ApprovalExpiresAt)
			}
		}

		// Within the window an approval works.
		env.Clock.Advance(23 * time.Hour)
		res := decide(t, f, f.Owner.Token, "approveDeployment", inTime.ID, "in time")
		if ue := res.UserErrors("approveDeployment"); len(ue) > 0 {
			t.Fatalf("approval 23h after the request: userErrors %+v, want none", ue)
		}
		if got := res.Str("approveDeployment.deployment.stage"); got != "DELIVERING" {
			t.Errorf("approved 23h after the request: stage %s, want DELIVERING", got)
		}

		// After it, the approval is refused.
		env.Clock.Advance(2 * time.Hour)
		audit := f.AuditCount(t)
		res = decide(t, f, f.Owner.Token, "approveDeployment", late.ID, "too late")
		closed := parseTime(t, "approvalExpiresAt", *late.ApprovalExpiresAt).UTC().Format(time.RFC3339)
		wantUserError(t, res, "approveDeployment", "CONFLICT", []string{"input", "deploymentId"},
			"approval window closed at "+closed, "deploy again")
		if got := f.AuditCount(t); got != audit {
			t.Errorf("refused approval wrote %d audit events, want none", got-audit)
		}
		got := readDep(t, f, late.ID)
		if got.Stage != "AWAITING_APPROVAL" || len(got.Approvals) != 0 || len(got.Events) != 2 {
			t.Errorf("after a late approval: stage %s, approvals %+v, %d events; want AWAITING_APPROVAL, none, 2",
				got.Stage, got.Approvals, len(got.Events))
		}
		// Rejecting is refused the same way.
		res = decide(t, f, f.Owner.Token, "rejectDeployment", late.ID, "too late")
		wantUserError(t, res, "rejectDeployment", "CONFLICT", []string{"input", "deploymentId"}, "approval window closed")
	})
}

// Cancelling a delivered deployment takes it back: the cluster's desired
// state returns to the release before it, at a new revision.
func TestDeploymentCancel(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		first := deployTo(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID)
		second := deployTo(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID)
		n := first.Release.Number
		if second.Release.Number != n+1 || second.Stage != "DELIVERING" {
			t.Fatalf("second deployment: release %d, stage %s; want %d, DELIVERING", second.Release.Number, second.Stage, n+1)
		}
		rev, rel := desiredRelease(t, f, "api")
		if rel != n+1 {
			t.Fatalf("before the cancel the desired state runs release %d, want %d", rel, n+1)
		}

		// A viewer reads the deployment but may not cancel it.
		audit := f.AuditCount(t)
		res := cancelDep(t, f, f.Users[Viewer].Token, second.ID, "viewer says no")
		if res.Status != http.StatusOK || len(res.Errors) != 1 {
			t.Fatalf("viewer cancel: HTTP %d, errors %s; want one FORBIDDEN", res.Status, res.errorList())
		}
		if e := res.Errors[0]; e.Code() != "FORBIDDEN" || e.Message != "forbidden: your role does not allow this" || e.PathString() != "cancelDeployment" {
			t.Errorf("viewer cancel: %s at %s (%q), want FORBIDDEN at cancelDeployment", e.Code(), e.PathString(), e.Message)
		}
		if res.Get("cancelDeployment") != nil {
			t.Errorf("viewer cancel returned a payload: %s", res.Body)
		}
		if got := f.AuditCount(t); got != audit {
			t.Errorf("viewer cancel wrote %d audit events, want none", got-audit)
		}
		if got := readDep(t, f, second.ID); got.Stage != "DELIVERING" {
			t.Errorf("after a viewer's cancel: stage %s, want DELIVERING", got.Stage)
		}

		// The owner cancels.
		res = cancelDep(t, f, f.Owner.Token, second.ID, "wrong image")
		if len(res.Errors) > 0 || len(res.UserErrors("cancelDeployment")) > 0 {
			t.Fatalf("cancel: errors %s, userErrors %+v", res.errorList(), res.UserErrors("cancelDeployment"))
		}
		if got := f.AuditCount(t); got != audit+1 {
			t.Errorf("cancel wrote %d audit events, want 1", got-audit)
		}
		wantMsg := "cancelled by admin@acme.test: wrong image"
		got := readDep(t, f, second.ID)
		if p := res.Str("cancelDeployment.deployment.stage"); p != "CANCELLED" || got.Stage != "CANCELLED" {
			t.Errorf("after cancel: payload stage %s, read stage %s; want CANCELLED", p, got.Stage)
		}
		if got.Message != wantMsg || got.Blocker != nil {
			t.Errorf("after cancel: message %q, blocker %s; want %q, none", got.Message, got.blocker(), wantMsg)
		}
		if !slices.Equal(got.stages(), []string{"QUEUED", "DELIVERING", "CANCELLED"}) {
			t.Errorf("events %v, want QUEUED, DELIVERING, CANCELLED", got.stages())
		}
		after, rel := desiredRelease(t, f, "api")
		if after <= rev {
			t.Errorf("desiredRevision %d after the cancel, want more than %d", after, rev)
		}
		if rel != n {
			// schema.graphqls, cancelDeployment: "One already delivered is taken
			// back: the cluster returns to the release before it."
			t.Errorf("after cancelling release %d the desired state runs release %d (0: the service is gone), want the release before it, %d", n+1, rel, n)
		}

		// Cancelling again is a conflict, and changes nothing.
		audit = f.AuditCount(t)
		res = cancelDep(t, f, f.Owner.Token, second.ID, "again")
		wantUserError(t, res, "cancelDeployment", "CONFLICT", []string{"input", "deploymentId"}, "already ended", "CANCELLED")
		if got := f.AuditCount(t); got != audit {
			t.Errorf("second cancel wrote %d audit events, want none", got-audit)
		}
		if again, _ := desiredRelease(t, f, "api"); again != after {
			t.Errorf("second cancel moved desiredRevision from %d to %d", after, again)
		}
	})
}

// A newer deployment of the same service and environment supersedes an
// older one still on its way.
func TestDeploymentSupersede(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)

		t.Run("unprotected", func(t *testing.T) {
			a := deployTo(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID)
			b := deployTo(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID)
			if b.Release.Number != a.Release.Number+1 || b.Stage != "DELIVERING" {
				t.Errorf("B: release %d, stage %s; want %d, DELIVERING", b.Release.Number, b.Stage, a.Release.Number+1)
			}
			got := readDep(t, f, a.ID)
			want := fmt.Sprintf("superseded by the deployment of release %d", b.Release.Number)
			if got.Stage != "SUPERSEDED" || got.Message != want || got.Blocker != nil {
				t.Errorf("A: stage %s, blocker %s, message %q; want SUPERSEDED, none, %q", got.Stage, got.blocker(), got.Message, want)
			}
			if !slices.Equal(got.stages(), []string{"QUEUED", "DELIVERING", "SUPERSEDED"}) {
				t.Errorf("A's events %v, want QUEUED, DELIVERING, SUPERSEDED", got.stages())
			}
			if got := readDep(t, f, b.ID); got.Stage != "DELIVERING" {
				t.Errorf("B after A was superseded: stage %s, want DELIVERING", got.Stage)
			}
			if _, rel := desiredRelease(t, f, "api"); rel != b.Release.Number {
				t.Errorf("desired state runs release %d, want B's %d", rel, b.Release.Number)
			}
			// A superseded deployment has ended.
			res := cancelDep(t, f, f.Owner.Token, a.ID, "")
			wantUserError(t, res, "cancelDeployment", "CONFLICT", []string{"input", "deploymentId"}, "SUPERSEDED")
		})

		t.Run("protected", func(t *testing.T) {
			pm := newPM(t, f, "pm")
			a := deployTo(t, f, pm.Token, f.ServiceID, f.ProtectedEnvironmentID)
			b := deployTo(t, f, pm.Token, f.ServiceID, f.ProtectedEnvironmentID)
			if a.Stage != "AWAITING_APPROVAL" || b.Stage != "AWAITING_APPROVAL" {
				t.Fatalf("A %s, B %s; want both AWAITING_APPROVAL when requested", a.Stage, b.Stage)
			}
			got := readDep(t, f, a.ID)
			if got.Stage != "SUPERSEDED" || got.Blocker != nil || got.ApprovalExpiresAt != nil {
				t.Errorf("A: stage %s, blocker %s, approvalExpiresAt %v; want SUPERSEDED, none, null", got.Stage, got.blocker(), got.ApprovalExpiresAt)
			}
			if want := fmt.Sprintf("superseded by the deployment of release %d", b.Release.Number); !strings.HasPrefix(got.Message, want) {
				t.Errorf("A: message %q, want it to start %q", got.Message, want)
			}
			if got := readDep(t, f, b.ID); got.Stage != "AWAITING_APPROVAL" {
				t.Errorf("B: stage %s, want AWAITING_APPROVAL", got.Stage)
			}
			audit := f.AuditCount(t)
			res := decide(t, f, f.Owner.Token, "approveDeployment", a.ID, "the old one")
			wantUserError(t, res, "approveDeployment", "CONFLICT", []string{"input", "deploymentId"}, "SUPERSEDED", "not awaiting approval")
			if got := f.AuditCount(t); got != audit {
				t.Errorf("refused approval wrote %d audit events, want none", got-audit)
			}
			if got := readDep(t, f, a.ID); got.Stage != "SUPERSEDED" || len(got.Approvals) != 0 {
				t.Errorf("A after a refused approval: stage %s, approvals %+v; want SUPERSEDED, none", got.Stage, got.Approvals)
			}
			// B is still the one to decide on.
			res = decide(t, f, f.Owner.Token, "approveDeployment", b.ID, "the new one")
			if ue := res.UserErrors("approveDeployment"); len(ue) > 0 {
				t.Fatalf("approving B: userErrors %+v", ue)
			}
			if got := res.Str("approveDeployment.deployment.stage"); got != "DELIVERING" {
				t.Errorf("B approved: stage %s, want DELIVERING", got)
			}
		})
	})
}

// redeploy deploys a deployment's release again; rollback deploys an
// earlier release by number. Neither makes a new release.
func TestDeploymentRedeployAndRollback(t *testing.T) {
	t.Parallel()
	EachStoreParallel(t, func(t *testing.T, env *Env) {
		f := env.NewFixture(t)
		releases := func() []string {
			t.Helper()
			return f.Values(t, f.ServiceID, `... on Service { releases(first: 100) { nodes { id } } }`, "releases.nodes", "id")
		}
		b := deployTo(t, f, f.Owner.Token, f.ServiceID, f.EnvironmentID)
		if b.Release.Number != 2 {
			t.Fatalf("B: release %d, want 2", b.Release.Number)
		}
		before := releases()
		if len(before) != 2 {
			t.Fatalf("releases %v, want 2", before)
		}

		res := f.MustDo(t, `mutation($d: ID!) { redeploy(input: {deploymentId: $d}) { deployment { `+depFields+` } `+ue+` } }`,
			map[string]any{"d": b.ID})
		re := decodeInto[depView](t, res.Get("redeploy.deployment"))
		if re.ID == "" || re.ID == b.ID {
			t.Errorf("redeploy: deployment %q, want a new one (not %s)", re.ID, b.ID)
		}
		if re.Release.ID != b.Release.ID || re.Release.Number != 2 {
			t.Errorf("redeploy: release %+v, want B's %s (number 2)", re.Release, b.Release.ID)
		}
		if re.Stage != "DELIVERING" || re.blocker() != "DELIVERY" {
			t.Errorf("redeploy: stage %s, blocker %s; want DELIVERING, delivery", re.Stage, re.blocker())
		}
		if len(re.Events) == 0 || re.Events[0].Message != "redeploy of release 2 requested by admin@acme.test" {
			t.Errorf("redeploy: events %+v, want the first to say %q", re.Events, "redeploy of release 2 requested by admin@acme.test")
		}
		if got := readDep(t, f, b.ID); got.Stage != "SUPERSEDED" {
			t.Errorf("B after its redeploy: stage %s, want SUPERSEDED", got.Stage)
		}

		res = f.MustDo(t, `mutation($s: ID!, $e: ID!) { rollback(input: {serviceId: $s, environmentId: $e, releaseNumber: 1}) {
			deployment { `+depFields+` } `+ue+` } }`, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID})
		rb := decodeInto[depView](t, res.Get("rollback.deployment"))
		if rb.ID == "" || rb.ID == f.DeploymentID || rb.ID == re.ID {
			t.Errorf("rollback: deployment %q, want a new one", rb.ID)
		}
		if rb.Release.Number != 1 || rb.Release.ID != f.ReleaseID {
			t.Errorf("rollback: release %+v, want number 1 (%s)", rb.Release, f.ReleaseID)
		}
		if rb.Stage != "DELIVERING" || rb.blocker() != "DELIVERY" {
			t.Errorf("rollback: stage %s, blocker %s; want DELIVERING, delivery", rb.Stage, rb.blocker())
		}
		if len(rb.Events) == 0 || rb.Events[0].Message != "rollback to release 1 requested by admin@acme.test" {
			t.Errorf("rollback: events %+v, want the first to say %q", rb.Events, "rollback to release 1 requested by admin@acme.test")
		}
		if got := readDep(t, f, re.ID); got.Stage != "SUPERSEDED" {
			t.Errorf("the redeploy after the rollback: stage %s, want SUPERSEDED", got.Stage)
		}
		if _, rel := desiredRelease(t, f, "api"); rel != 1 {
			t.Errorf("after rolling back the desired state runs release %d, want 1", rel)
		}

		audit := f.AuditCount(t)
		res = env.Do(t, f.Owner.Token, `mutation($s: ID!, $e: ID!) { rollback(input: {serviceId: $s, environmentId: $e, releaseNumber: 99}) {
			deployment { id } `+ue+` } }`, map[string]any{"s": f.ServiceID, "e": f.EnvironmentID})
		wantUserError(t, res, "rollback", "BAD_USER_INPUT", []string{"input", "releaseNumber"}, "no release 99")
		if res.Get("rollback.deployment") != nil {
			t.Errorf("refused rollback returned a deployment: %s", res.Body)
		}
		if got := f.AuditCount(t); got != audit {
			t.Errorf("refused rollback wrote %d audit events, want none", got-audit)
		}
		if after := releases(); !slices.Equal(after, before) {
			t.Errorf("releases after redeploy and rollback: %v, want the same %v", after, before)
		}
	})
}
