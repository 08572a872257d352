package tenants

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

// Environment rules, as the platform applies them (the consequences
// SetTenantEnvironment reports):
//   - development: agent profiles (API key bindings, the profile fetch)
//     and order webhooks may be http and on loopback or private
//     addresses — agents and receivers on the operator's machine
//     (checkProfileURL; services/edge/agentprofile; orders'
//     checkWebhookURL).
//   - sandbox and production: agent profiles and order webhooks must be
//     https on public addresses. The two differ only in the go-live
//     checklist, which wants a public domain in production.
//   - Payment handlers keep their own environment (sandbox: the PSP
//     simulator's test money; production: the merchant's PSP or Stripe)
//     whatever the merchant's.

// SetTenantEnvironment moves a tenant to another environment and says
// what that means for its set-up.
func (s *Service) SetTenantEnvironment(ctx context.Context, req *connect.Request[tenantsv1.SetTenantEnvironmentRequest]) (*connect.Response[tenantsv1.SetTenantEnvironmentResponse], error) {
	if req.Msg.GetEnvironment() == tenantsv1.Environment_ENVIRONMENT_UNSPECIFIED {
		return nil, apperr.Invalid("environment", "invalid_environment", "environment must be production, sandbox or development")
	}
	env, err := envToDB(req.Msg.GetEnvironment())
	if err != nil {
		return nil, err
	}
	id, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	ctx = tenancy.With(ctx, id)
	var (
		before   string
		handlers []tenantsdb.TenantsPaymentHandler
		profiles []string
	)
	err = pgstore.InTenant(ctx, s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		row, err := q.GetTenantByID(ctx, id)
		if err != nil {
			return err
		}
		before = row.Environment
		if before != env {
			if _, err := q.SetTenantEnvironment(ctx, tenantsdb.SetTenantEnvironmentParams{TenantID: id, Environment: env}); err != nil {
				return err
			}
		}
		if handlers, err = q.ListPaymentHandlers(ctx, id); err != nil {
			return err
		}
		profiles, err = q.ListLiveAPIKeyProfiles(ctx, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("tenant_not_found", "no tenant %s", id)
	}
	if err != nil {
		return nil, err
	}
	t, err := s.loadTenant(ctx, id)
	if err != nil {
		return nil, err
	}
	if before != env {
		s.log.InfoContext(ctx, "tenant environment changed", "tenant_id", id, "from", before, "to", env)
	}
	return connect.NewResponse(&tenantsv1.SetTenantEnvironmentResponse{Tenant: t, Consequences: consequences(before, env, t, handlers, profiles)}), nil
}

// consequences are what an environment means for a merchant's set-up.
func consequences(before, env string, t *tenantsv1.Tenant, handlers []tenantsdb.TenantsPaymentHandler, profiles []string) []string {
	var out []string
	if before == env {
		out = append(out, "the store was already in "+env+": nothing changed")
	}
	if env == "development" {
		out = append(out, "agent profiles (API key bindings, profile fetches) and order webhooks may now use http and loopback or private addresses: agents on this machine can buy; never use it for a public store")
	} else {
		out = append(out, "agent profiles and order webhooks must use https on public addresses: http, loopback and private ones are refused")
		n := 0
		for _, p := range profiles {
			if checkProfileURL(p, false) != "" {
				n++
			}
		}
		if n > 0 {
			out = append(out, plural(n, "live API key is bound to an http agent profile", "live API keys are bound to http agent profiles")+
				": agents using them are refused; revoke them (bcpctl apikey revoke) and create keys for https profiles")
		}
	}
	sandbox := 0
	for _, h := range handlers {
		if h.Environment == "sandbox" {
			sandbox++
		}
	}
	if env == "production" {
		if sandbox > 0 {
			out = append(out, fmt.Sprintf("%s in sandbox: payments there are test money at the PSP simulator, never real; set production ones (bcpctl handler set --preset pix-psp or stripe-card)", plural(sandbox, "payment handler is", "payment handlers are")))
		}
		if d := t.GetPrimaryDomain(); DevOnlyDomain(d) {
			out = append(out, "the primary domain "+d+" only resolves on this machine: add the store's public domain (bcpctl domain add --primary)")
		}
	} else if len(handlers) > sandbox {
		out = append(out, "payment handlers keep their own environment: production handlers still take real money")
	}
	return out
}

// Password links (bcpctl user invite): a user invited with one chooses a
// password on the admin's /admin/senha page. Only the SHA-256 of the
// token is stored; it works once and for PasswordLinkLifetime.

// PasswordLinkLifetime is how long an invitation's link works.
const PasswordLinkLifetime = 72 * time.Hour

// minPasswordLen is the shortest password a link sets.
const minPasswordLen = 10

// noPassword is the password_hash of a user invited with a link who has
// not chosen a password yet: not a PHC string, so no password matches it.
const noPassword = "!"

func hashLinkToken(token string) []byte {
	s := sha256.Sum256([]byte("bcp/password-link/" + token))
	return s[:]
}

// newPasswordLink stores a link for user and returns its token.
func newPasswordLink(ctx context.Context, q *tenantsdb.Queries, tid uuid.UUID, user string, now time.Time) (string, time.Time, error) {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token := base64.RawURLEncoding.EncodeToString(raw)
	exp := now.Add(PasswordLinkLifetime).Truncate(time.Microsecond) // as PostgreSQL keeps it
	if err := q.UseUserPasswordLinks(ctx, tenantsdb.UseUserPasswordLinksParams{TenantID: tid, UserID: user}); err != nil {
		return "", time.Time{}, err
	}
	err := q.InsertPasswordLink(ctx, tenantsdb.InsertPasswordLinkParams{TenantID: tid, TokenHash: hashLinkToken(token), UserID: user, ExpiresAt: exp})
	return token, exp, err
}

// inviteWithLink creates the user without a password (or, for a user who
// never signed in, keeps it) and gives a new link.
func (s *Service) inviteWithLink(ctx context.Context, tid uuid.UUID, email, role string) (*tenantsv1.InviteMerchantUserResponse, error) {
	out := &tenantsv1.InviteMerchantUserResponse{}
	err := pgstore.InTenant(tenancy.With(ctx, tid), s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		u, err := q.GetMerchantUserByEmail(ctx, tenantsdb.GetMerchantUserByEmailParams{TenantID: tid, Email: email})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if u, err = q.InsertMerchantUser(ctx, tenantsdb.InsertMerchantUserParams{
				TenantID: tid, ID: newUserID(), Email: email, PasswordHash: noPassword, Role: role,
			}); err != nil {
				return err
			}
		case err != nil:
			return err
		case u.LastLoginAt != nil || u.DisabledAt != nil:
			return apperr.New(apperr.KindAlreadyExists, "duplicate_user", "%s is already a user of this merchant", email)
		}
		token, exp, err := newPasswordLink(ctx, q, tid, u.ID, time.Now())
		if err != nil {
			return err
		}
		out.User, out.PasswordToken, out.PasswordTokenExpireTime = userToProto(u), token, timestamppb.New(exp)
		out.User.InvitationPending, out.User.InvitationExpireTime = true, timestamppb.New(exp)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Service) CheckPasswordLink(ctx context.Context, req *connect.Request[tenantsv1.CheckPasswordLinkRequest]) (*connect.Response[tenantsv1.CheckPasswordLinkResponse], error) {
	tid, err := tenantIDArg(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	tok := req.Msg.GetToken()
	if tok == "" || len(tok) > 128 {
		return nil, errNoLink
	}
	var row tenantsdb.GetPasswordLinkRow
	err = pgstore.InTenant(tenancy.With(ctx, tid), s.pool, func(tx pgx.Tx) error {
		row, err = tenantsdb.New(tx).GetPasswordLink(ctx, tenantsdb.GetPasswordLinkParams{TenantID: tid, TokenHash: hashLinkToken(tok)})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoLink
	}
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.CheckPasswordLinkResponse{Email: row.Email, ExpireTime: timestamppb.New(row.ExpiresAt)}), nil
}

var errNoLink = apperr.NotFound("password_link_not_found", "this link does not work: it was used, it expired, or it never existed")

func (s *Service) SetPasswordWithLink(ctx context.Context, req *connect.Request[tenantsv1.SetPasswordWithLinkRequest]) (*connect.Response[tenantsv1.SetPasswordWithLinkResponse], error) {
	tid, err := tenantIDArg(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	tok, pw := req.Msg.GetToken(), req.Msg.GetPassword()
	if tok == "" || len(tok) > 128 {
		return nil, errNoLink
	}
	if n := len([]rune(pw)); n < minPasswordLen || len(pw) > maxPasswordLen {
		return nil, apperr.Invalid("password", "weak_password", "the password needs %d to %d characters", minPasswordLen, maxPasswordLen)
	}
	hash := HashPassword(pw) // before the transaction: argon2id takes a while
	var u tenantsdb.TenantsMerchantUser
	err = pgstore.InTenant(tenancy.With(ctx, tid), s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		user, err := q.UsePasswordLink(ctx, tenantsdb.UsePasswordLinkParams{TenantID: tid, TokenHash: hashLinkToken(tok)})
		if err != nil {
			return err
		}
		if err := q.UseUserPasswordLinks(ctx, tenantsdb.UseUserPasswordLinksParams{TenantID: tid, UserID: user}); err != nil {
			return err
		}
		u, err = q.SetMerchantUserPassword(ctx, tenantsdb.SetMerchantUserPasswordParams{PasswordHash: hash, TenantID: tid, ID: user})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoLink
	}
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "merchant user set a password through a link", "tenant_id", tid, "user", u.ID)
	return connect.NewResponse(&tenantsv1.SetPasswordWithLinkResponse{User: userToProto(u)}), nil
}
