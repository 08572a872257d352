package tenants_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// An invitation by link (issue 34): the user cannot sign in until the
// password is chosen; the link works once, only until it expires, and
// only its hash is stored; a second invitation replaces the first link.
func TestPasswordLinks(t *testing.T) {
	internal, operator, superURL, _ := rateEnv(t)
	ctx := context.Background()
	r, err := operator.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Loja Link", Domains: []string{"link.localhost"}}))
	if err != nil {
		t.Fatal(err)
	}
	tid := r.Msg.GetTenant().GetId()
	invite := func() *tenantsv1.InviteMerchantUserResponse {
		t.Helper()
		inv, err := operator.InviteMerchantUser(ctx, connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: tid, Email: "Dona@Link.com.br", PasswordLink: true}))
		if err != nil {
			t.Fatal(err)
		}
		return inv.Msg
	}
	first := invite()
	if first.GetInitialPassword() != "" || len(first.GetPasswordToken()) != 43 || first.GetUser().GetEmail() != "dona@link.com.br" || first.GetUser().GetRole() != "admin" {
		t.Fatalf("invite: %+v", first)
	}
	if d := first.GetPasswordTokenExpireTime().AsTime().Sub(first.GetUser().GetCreateTime().AsTime()).Hours(); d < 71.9 || d > 72.1 {
		t.Fatalf("the link lasts %.2f h, want 72", d)
	}
	if u := first.GetUser(); !u.GetInvitationPending() || !u.GetInvitationExpireTime().AsTime().Equal(first.GetPasswordTokenExpireTime().AsTime()) {
		t.Fatalf("invited user: %+v", u)
	}
	// The list marks the pending invitation with its link's expiry.
	listed := func(email string) *tenantsv1.MerchantUser {
		t.Helper()
		l, err := operator.ListMerchantUsers(ctx, connect.NewRequest(&tenantsv1.ListMerchantUsersRequest{Tenant: tid}))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range l.Msg.GetUsers() {
			if u.GetEmail() == email {
				return u
			}
		}
		t.Fatalf("%s is not listed", email)
		return nil
	}
	wantPending := func(email string, exp *timestamppb.Timestamp) {
		t.Helper()
		u := listed(email)
		if exp == nil {
			if u.GetInvitationPending() || u.GetInvitationExpireTime() != nil {
				t.Fatalf("%s: still pending: %+v", email, u)
			}
			return
		}
		if !u.GetInvitationPending() || !u.GetInvitationExpireTime().AsTime().Equal(exp.AsTime()) {
			t.Fatalf("%s: pending %v until %v, want until %v", email, u.GetInvitationPending(), u.GetInvitationExpireTime().AsTime(), exp.AsTime())
		}
	}
	wantPending("dona@link.com.br", first.GetPasswordTokenExpireTime())
	signIn := func(pw string) error {
		_, err := internal.SignInMerchantUser(ctx, connect.NewRequest(&tenantsv1.SignInMerchantUserRequest{TenantId: tid, Email: "dona@link.com.br", Password: pw}))
		return err
	}
	for _, pw := range []string{"", "!", first.GetPasswordToken()} {
		wantCode(t, signIn(pw), apperr.KindUnauthenticated, "invalid_credentials")
	}
	check := func(tok string) (*tenantsv1.CheckPasswordLinkResponse, error) {
		c, err := internal.CheckPasswordLink(ctx, connect.NewRequest(&tenantsv1.CheckPasswordLinkRequest{TenantId: tid, Token: tok}))
		if err != nil {
			return nil, err
		}
		return c.Msg, nil
	}
	set := func(tok, pw string) error {
		_, err := internal.SetPasswordWithLink(ctx, connect.NewRequest(&tenantsv1.SetPasswordWithLinkRequest{TenantId: tid, Token: tok, Password: pw}))
		return err
	}
	if c, err := check(first.GetPasswordToken()); err != nil || c.GetEmail() != "dona@link.com.br" || !c.GetExpireTime().AsTime().Equal(first.GetPasswordTokenExpireTime().AsTime()) {
		t.Fatalf("check: %+v %v", c, err)
	}

	// Only the token's hash is in the table.
	conn, err := pgx.Connect(ctx, superURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var stored []byte
	if err := conn.QueryRow(ctx, `SELECT token_hash FROM tenants.password_links WHERE tenant_id = $1 AND used_at IS NULL`, tid).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if h := sha256.Sum256([]byte("bcp/password-link/" + first.GetPasswordToken())); !bytes.Equal(stored, h[:]) {
		t.Fatal("the stored hash is not the token's")
	}

	// A second invitation of a user who never signed in: a new link, the
	// first one stops working.
	second := invite()
	if second.GetUser().GetId() != first.GetUser().GetId() || second.GetPasswordToken() == first.GetPasswordToken() {
		t.Fatalf("second invite: %+v", second)
	}
	wantPending("dona@link.com.br", second.GetPasswordTokenExpireTime())
	_, err = check(first.GetPasswordToken())
	wantCode(t, err, apperr.KindNotFound, "password_link_not_found")
	wantCode(t, set(first.GetPasswordToken(), "uma-senha-boa"), apperr.KindNotFound, "password_link_not_found")

	wantCode(t, set(second.GetPasswordToken(), "curta"), apperr.KindInvalidArgument, "weak_password")
	if err := set(second.GetPasswordToken(), "uma-senha-boa"); err != nil {
		t.Fatal(err)
	}
	wantPending("dona@link.com.br", nil)
	wantCode(t, set(second.GetPasswordToken(), "outra-senha-boa"), apperr.KindNotFound, "password_link_not_found")
	_, err = check(second.GetPasswordToken())
	wantCode(t, err, apperr.KindNotFound, "password_link_not_found")
	wantCode(t, signIn("outra-senha-boa"), apperr.KindUnauthenticated, "invalid_credentials")
	if err := signIn("uma-senha-boa"); err != nil {
		t.Fatalf("sign-in with the chosen password: %v", err)
	}
	// Signed in once: inviting again is a duplicate.
	_, err = operator.InviteMerchantUser(ctx, connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: tid, Email: "dona@link.com.br", PasswordLink: true}))
	wantCode(t, err, apperr.KindAlreadyExists, "duplicate_user")

	// An expired link does not work.
	other, err := operator.InviteMerchantUser(ctx, connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: tid, Email: "caixa@link.com.br", Role: "staff", PasswordLink: true}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE tenants.password_links SET expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND used_at IS NULL`, tid); err != nil {
		t.Fatal(err)
	}
	_, err = check(other.Msg.GetPasswordToken())
	wantCode(t, err, apperr.KindNotFound, "password_link_not_found")
	// Still pending, with the link's (past) expiry: invite again.
	var lapsed time.Time
	if err := conn.QueryRow(ctx, `SELECT expires_at FROM tenants.password_links WHERE tenant_id = $1 AND used_at IS NULL`, tid).Scan(&lapsed); err != nil {
		t.Fatal(err)
	}
	wantPending("caixa@link.com.br", timestamppb.New(lapsed))
	if u := listed("caixa@link.com.br"); !u.GetInvitationExpireTime().AsTime().Before(time.Now()) {
		t.Fatalf("expired link listed as %v", u.GetInvitationExpireTime().AsTime())
	}
	wantCode(t, set(other.Msg.GetPasswordToken(), "uma-senha-boa"), apperr.KindNotFound, "password_link_not_found")

	// Another tenant's id finds nothing.
	_, err = internal.CheckPasswordLink(ctx, connect.NewRequest(&tenantsv1.CheckPasswordLinkRequest{TenantId: uuid.NewString(), Token: second.GetPasswordToken()}))
	wantCode(t, err, apperr.KindNotFound, "password_link_not_found")
}

// Connection tests are recorded by the payments service only (the
// internal token), are forgotten when the handler changes, and make the
// checklist's payment item; without catalog and pricing clients their
// items are UNKNOWN, never done.
func TestChecklistInTheRegistry(t *testing.T) {
	internal, operator, _, _ := rateEnv(t)
	ctx := context.Background()
	r, err := operator.CreateTenant(ctx, connect.NewRequest(&tenantsv1.CreateTenantRequest{Name: "Loja Lista", Domains: []string{"lista.com.br"},
		Environment: tenantsv1.Environment_ENVIRONMENT_SANDBOX}))
	if err != nil {
		t.Fatal(err)
	}
	tid := r.Msg.GetTenant().GetId()
	checklist := func() *tenantsv1.GoLiveChecklist {
		t.Helper()
		c, err := internal.GetGoLiveChecklist(ctx, connect.NewRequest(&tenantsv1.GetGoLiveChecklistRequest{Tenant: "lista.com.br"}))
		if err != nil {
			t.Fatal(err)
		}
		return c.Msg.GetChecklist()
	}
	states := func(c *tenantsv1.GoLiveChecklist) map[string]tenantsv1.ChecklistState {
		m := map[string]tenantsv1.ChecklistState{}
		for _, it := range c.GetItems() {
			m[it.GetKey()] = it.GetState()
		}
		return m
	}
	const (
		done    = tenantsv1.ChecklistState_CHECKLIST_STATE_DONE
		missing = tenantsv1.ChecklistState_CHECKLIST_STATE_MISSING
		unknown = tenantsv1.ChecklistState_CHECKLIST_STATE_UNKNOWN
		na      = tenantsv1.ChecklistState_CHECKLIST_STATE_NOT_REQUIRED
	)
	c := checklist()
	want := map[string]tenantsv1.ChecklistState{"domain": done, "payment_handler": missing, "product": unknown, "shipping": unknown, "agent_access": missing, "ap2": na}
	if got := states(c); len(got) != 6 || c.GetDone() != 1 || c.GetRequired() != 5 || c.GetReady() {
		t.Fatalf("checklist %v (%d/%d)", got, c.GetDone(), c.GetRequired())
	} else {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", k, got[k], v)
			}
		}
	}

	setPix := func() {
		t.Helper()
		if _, err := operator.SetPaymentHandler(ctx, connect.NewRequest(&tenantsv1.SetPaymentHandlerRequest{Tenant: tid,
			Handler: &tenantsv1.PaymentHandler{Id: "pix", Name: "br.dev.bcp.pix", AvailableInstrumentsJson: `[{"type":"pix"}]`}})); err != nil {
			t.Fatal(err)
		}
	}
	setPix()
	record := func(c interface {
		RecordPaymentHandlerTest(context.Context, *connect.Request[tenantsv1.RecordPaymentHandlerTestRequest]) (*connect.Response[tenantsv1.RecordPaymentHandlerTestResponse], error)
	}, handler string, ok bool) error {
		_, err := c.RecordPaymentHandlerTest(ctx, connect.NewRequest(&tenantsv1.RecordPaymentHandlerTestRequest{TenantId: tid, HandlerId: handler, Ok: ok, Code: "invalid_client", Message: "o PSP recusou o client_id"}))
		return err
	}
	wantCode(t, record(operator, "pix", true), apperr.KindPermissionDenied, "internal_only")
	wantCode(t, record(internal, "nenhum", true), apperr.KindNotFound, "handler_not_found")
	if err := record(internal, "pix", false); err != nil {
		t.Fatal(err)
	}
	it := checklist().GetItems()[1]
	if it.GetState() != missing || it.GetCommand() != "bcpctl handler test loja-lista pix" || it.GetDoneTime() != nil ||
		it.GetDetail() == "" || !bytes.Contains([]byte(it.GetDetail()), []byte("(invalid_client): o PSP recusou o client_id")) {
		t.Fatalf("after a failed test: %+v", it)
	}
	if err := record(internal, "pix", true); err != nil {
		t.Fatal(err)
	}
	if it := checklist().GetItems()[1]; it.GetState() != done || it.GetDoneTime() == nil || it.GetAdminPath() != "/admin/pagamentos/pix" {
		t.Fatalf("after a passing test: %+v", it)
	}
	setPix()
	if it := checklist().GetItems()[1]; it.GetState() != missing {
		t.Fatalf("a changed handler keeps its old test: %+v", it)
	}

	// The signature policy is agent access without API keys.
	pol := tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_SIGNATURE
	if _, err := operator.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{Tenant: tid, Policy: pol})); err != nil {
		t.Fatal(err)
	}
	if got := states(checklist())["agent_access"]; got != done {
		t.Fatalf("agent access with the signature policy: %v", got)
	}

	// A suspended store: an item of its own, first, while it lasts.
	if _, err := operator.SetTenantStatus(ctx, connect.NewRequest(&tenantsv1.SetTenantStatusRequest{Tenant: tid, Status: tenantsv1.TenantStatus_TENANT_STATUS_SUSPENDED})); err != nil {
		t.Fatal(err)
	}
	if c := checklist(); len(c.GetItems()) != 7 || c.GetItems()[0].GetKey() != "active" || c.GetItems()[0].GetState() != missing ||
		c.GetItems()[0].GetCommand() != "bcpctl tenant resume loja-lista" || c.GetRequired() != 6 {
		t.Fatalf("suspended: %+v", c)
	}
	if _, err := operator.SetTenantStatus(ctx, connect.NewRequest(&tenantsv1.SetTenantStatusRequest{Tenant: tid, Status: tenantsv1.TenantStatus_TENANT_STATUS_ACTIVE})); err != nil {
		t.Fatal(err)
	}
	if c := checklist(); len(c.GetItems()) != 6 || c.GetItems()[0].GetKey() != "domain" {
		t.Fatalf("resumed: %+v", c)
	}

	// The console's batch: operator only, in request order, unknown ids
	// left out, at most 100.
	ids := []string{uuid.NewString(), tid}
	_, err = internal.ListGoLiveChecklists(ctx, connect.NewRequest(&tenantsv1.ListGoLiveChecklistsRequest{TenantIds: ids}))
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("internal token: %v", err)
	}
	l, err := operator.ListGoLiveChecklists(ctx, connect.NewRequest(&tenantsv1.ListGoLiveChecklistsRequest{TenantIds: ids}))
	if err != nil || len(l.Msg.GetChecklists()) != 1 || l.Msg.GetChecklists()[0].GetTenantId() != tid {
		t.Fatalf("list: %v %v", l, err)
	}
	_, err = operator.ListGoLiveChecklists(ctx, connect.NewRequest(&tenantsv1.ListGoLiveChecklistsRequest{TenantIds: make([]string, 101)}))
	wantCode(t, err, apperr.KindInvalidArgument, "too_many_tenants")

	// The environment: the operator's only, and a real one.
	_, err = internal.SetTenantEnvironment(ctx, connect.NewRequest(&tenantsv1.SetTenantEnvironmentRequest{Tenant: tid, Environment: tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT}))
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("internal token: %v", err)
	}
	_, err = operator.SetTenantEnvironment(ctx, connect.NewRequest(&tenantsv1.SetTenantEnvironmentRequest{Tenant: tid}))
	wantCode(t, err, apperr.KindInvalidArgument, "invalid_environment")
	env, err := operator.SetTenantEnvironment(ctx, connect.NewRequest(&tenantsv1.SetTenantEnvironmentRequest{Tenant: tid, Environment: tenantsv1.Environment_ENVIRONMENT_PRODUCTION}))
	if err != nil || env.Msg.GetTenant().GetEnvironment() != tenantsv1.Environment_ENVIRONMENT_PRODUCTION || len(env.Msg.GetConsequences()) != 2 ||
		env.Msg.GetConsequences()[1] != "1 payment handler is in sandbox: payments there are test money at the PSP simulator, never real; set production ones (bcpctl handler set --preset pix-psp or stripe-card)" {
		t.Fatalf("to production: %v %v", env, err)
	}
}
