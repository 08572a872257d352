package tenants

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/argon2"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/tenancy"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/tenants/tenantsdb"
)

// Merchant sign-in policy.
const (
	// SessionLifetime is the absolute lifetime of an admin session.
	SessionLifetime = 12 * time.Hour
	// SessionIdle ends a session nobody used for this long.
	SessionIdle = 2 * time.Hour
	// LockoutThreshold failures in a row lock the user; each further
	// failure doubles the lock, from LockoutBase up to LockoutMax.
	LockoutThreshold = 5
	LockoutBase      = 30 * time.Second
	LockoutMax       = 15 * time.Minute
	maxPasswordLen   = 1024
)

// argon2id parameters (RFC 9106 second recommended option, lowered memory:
// 64 MiB, 3 passes, 1 lane is OWASP's "m=47104 t=1" class or better).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// HashPassword returns the argon2id PHC string of password.
func HashPassword(password string) string {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// CheckPassword verifies password against a PHC string in constant time;
// rehash says the stored parameters are older than the current ones.
func CheckPassword(phc, password string) (ok, rehash bool) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return false, false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || t == 0 || p == 0 || m > 1<<21 || t > 32 {
		return false, false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 128 {
		return false, false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	ok = subtle.ConstantTimeCompare(got, want) == 1
	return ok, ok && (m != argonMemory || t != argonTime || p != argonThreads || len(want) != argonKeyLen)
}

// dummyHash is checked against when the email is unknown, so a wrong email
// costs the same time as a wrong password.
var dummyHash = HashPassword("bcp-dummy-password")

// lockFor is how long the user stays locked after failures failures in a row.
func lockFor(failures int32) time.Duration {
	if failures < LockoutThreshold {
		return 0
	}
	d := LockoutBase
	for i := int32(LockoutThreshold); i < failures && d < LockoutMax; i++ {
		d *= 2
	}
	return min(d, LockoutMax)
}

// HashSessionToken is what the sessions table stores for a cookie value.
func HashSessionToken(token string) []byte {
	s := sha256.Sum256([]byte(token))
	return s[:]
}

func normalizeEmail(raw string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(raw))
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || len(e) > 254 || !strings.Contains(e[strings.LastIndexByte(e, '@'):], ".") {
		return "", apperr.Invalid("email", "invalid_email", "a valid e-mail address is required")
	}
	return e, nil
}

func userToProto(u tenantsdb.TenantsMerchantUser) *tenantsv1.MerchantUser {
	out := &tenantsv1.MerchantUser{Id: u.ID, TenantId: u.TenantID.String(), Email: u.Email, Role: u.Role, CreateTime: timestamppb.New(u.CreatedAt)}
	if u.LastLoginAt != nil {
		out.LastLoginTime = timestamppb.New(*u.LastLoginAt)
	}
	if u.LockedUntil != nil && u.LockedUntil.After(time.Now()) {
		out.LockedUntil = timestamppb.New(*u.LockedUntil)
	}
	// Invited by link, no password chosen yet (ListMerchantUsers also
	// marks a user who never signed in and has a link not used).
	out.InvitationPending = u.PasswordHash == noPassword && u.LastLoginAt == nil
	return out
}

func newUserID() string { return ids.New("usr") }

// InviteMerchantUser creates a user with a random initial password, or
// with a one-time link to choose one (password_link; onboarding.go).
func (s *Service) InviteMerchantUser(ctx context.Context, req *connect.Request[tenantsv1.InviteMerchantUserRequest]) (*connect.Response[tenantsv1.InviteMerchantUserResponse], error) {
	tid, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	email, err := normalizeEmail(req.Msg.GetEmail())
	if err != nil {
		return nil, err
	}
	role := req.Msg.GetRole()
	switch role {
	case "":
		role = "admin"
	case "admin", "staff":
	default:
		return nil, apperr.Invalid("role", "invalid_role", "role is admin or staff")
	}
	if req.Msg.GetPasswordLink() {
		out, err := s.inviteWithLink(ctx, tid, email, role)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(out), nil
	}
	raw := make([]byte, 15)
	_, _ = rand.Read(raw)
	password := base64.RawURLEncoding.EncodeToString(raw) // 20 characters, 120 bits
	var row tenantsdb.TenantsMerchantUser
	err = pgstore.InTenant(tenancy.With(ctx, tid), s.pool, func(tx pgx.Tx) error {
		var err error
		row, err = tenantsdb.New(tx).InsertMerchantUser(ctx, tenantsdb.InsertMerchantUserParams{
			TenantID: tid, ID: newUserID(), Email: email, PasswordHash: HashPassword(password), Role: role,
		})
		return err
	})
	if constraint(err) == "merchant_users_email" {
		return nil, apperr.New(apperr.KindAlreadyExists, "duplicate_user", "%s is already a user of this merchant", email)
	}
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.InviteMerchantUserResponse{User: userToProto(row), InitialPassword: password}), nil
}

// ListMerchantUsers lists a tenant's users.
func (s *Service) ListMerchantUsers(ctx context.Context, req *connect.Request[tenantsv1.ListMerchantUsersRequest]) (*connect.Response[tenantsv1.ListMerchantUsersResponse], error) {
	tid, err := s.resolveRef(ctx, req.Msg.GetTenant())
	if err != nil {
		return nil, err
	}
	out := &tenantsv1.ListMerchantUsersResponse{}
	err = pgstore.InTenant(tenancy.With(ctx, tid), s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		rows, err := q.ListMerchantUsers(ctx, tid)
		if err != nil {
			return err
		}
		links, err := q.ListOpenPasswordLinks(ctx, tid)
		if err != nil {
			return err
		}
		expires := make(map[string]time.Time, len(links))
		for _, l := range links { // newest first: keep the first
			if _, ok := expires[l.UserID]; !ok {
				expires[l.UserID] = l.ExpiresAt
			}
		}
		for _, r := range rows {
			u := userToProto(r)
			if exp, ok := expires[r.ID]; ok && r.LastLoginAt == nil {
				u.InvitationPending, u.InvitationExpireTime = true, timestamppb.New(exp)
			}
			out.Users = append(out.Users, u)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

func tenantIDArg(raw string) (uuid.UUID, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, apperr.Invalid("tenant_id", "invalid_tenant_id", "tenant_id must be a tenant UUID")
	}
	return id, nil
}

var errInvalidCredentials = apperr.New(apperr.KindUnauthenticated, "invalid_credentials", "wrong e-mail or password")

// SignInMerchantUser checks the password and opens a session. Failures in a
// row lock the user with a growing delay; a locked user is refused without
// checking the password (so guessing during a lock teaches nothing).
func (s *Service) SignInMerchantUser(ctx context.Context, req *connect.Request[tenantsv1.SignInMerchantUserRequest]) (*connect.Response[tenantsv1.SignInMerchantUserResponse], error) {
	tid, err := tenantIDArg(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	password := req.Msg.GetPassword()
	if len(password) > maxPasswordLen {
		return nil, errInvalidCredentials
	}
	email := strings.ToLower(strings.TrimSpace(req.Msg.GetEmail()))
	now := time.Now()
	var (
		out      *tenantsv1.SignInMerchantUserResponse
		denied   error
		lockedTo time.Time
	)
	err = pgstore.InTenant(tenancy.With(ctx, tid), s.pool, func(tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		u, err := q.GetMerchantUserByEmail(ctx, tenantsdb.GetMerchantUserByEmailParams{TenantID: tid, Email: email})
		if errors.Is(err, pgx.ErrNoRows) {
			CheckPassword(dummyHash, password)
			denied = errInvalidCredentials
			return nil
		}
		if err != nil {
			return err
		}
		if u.DisabledAt != nil {
			CheckPassword(dummyHash, password)
			denied = errInvalidCredentials
			return nil
		}
		if u.LockedUntil != nil && u.LockedUntil.After(now) {
			lockedTo = *u.LockedUntil
			return nil
		}
		ok, rehash := CheckPassword(u.PasswordHash, password)
		if !ok {
			var until *time.Time
			if d := lockFor(u.FailedAttempts + 1); d > 0 {
				t := now.Add(d)
				until = &t
				lockedTo = t
			}
			_, err := q.RecordMerchantLoginFailure(ctx, tenantsdb.RecordMerchantLoginFailureParams{LockedUntil: until, TenantID: tid, ID: u.ID})
			if lockedTo.IsZero() {
				denied = errInvalidCredentials
			}
			return err
		}
		hash := u.PasswordHash
		if rehash {
			hash = HashPassword(password)
		}
		if err := q.RecordMerchantLoginSuccess(ctx, tenantsdb.RecordMerchantLoginSuccessParams{PasswordHash: hash, TenantID: tid, ID: u.ID}); err != nil {
			return err
		}
		if _, err := q.DeleteExpiredMerchantSessions(ctx, tid); err != nil {
			return err
		}
		raw := make([]byte, 32)
		_, _ = rand.Read(raw)
		token := base64.RawURLEncoding.EncodeToString(raw)
		exp := now.Add(SessionLifetime)
		if err := q.InsertMerchantSession(ctx, tenantsdb.InsertMerchantSessionParams{TenantID: tid, TokenHash: HashSessionToken(token), UserID: u.ID, ExpiresAt: exp}); err != nil {
			return err
		}
		u.LastLoginAt, u.LockedUntil = &now, nil
		out = &tenantsv1.SignInMerchantUserResponse{User: userToProto(u), SessionToken: token, ExpireTime: timestamppb.New(exp)}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case !lockedTo.IsZero():
		// Committed: the failure is recorded before the refusal.
		return nil, apperr.New(apperr.KindPermissionDenied, "locked", "too many failed sign-ins; try again after %s", lockedTo.UTC().Format(time.RFC3339))
	case denied != nil:
		return nil, denied
	}
	return connect.NewResponse(out), nil
}

// GetMerchantSession returns the user of a live session and keeps it alive.
func (s *Service) GetMerchantSession(ctx context.Context, req *connect.Request[tenantsv1.GetMerchantSessionRequest]) (*connect.Response[tenantsv1.GetMerchantSessionResponse], error) {
	tid, err := tenantIDArg(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	tok := req.Msg.GetSessionToken()
	if tok == "" || len(tok) > 128 {
		return nil, apperr.NotFound("session_not_found", "no such session")
	}
	var row tenantsdb.TouchMerchantSessionRow
	err = pgstore.InTenant(tenancy.With(ctx, tid), s.pool, func(tx pgx.Tx) error {
		var err error
		row, err = tenantsdb.New(tx).TouchMerchantSession(ctx, tenantsdb.TouchMerchantSessionParams{
			TenantID: tid, TokenHash: HashSessionToken(tok), IdleSeconds: SessionIdle.Seconds(),
		})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("session_not_found", "no such session")
	}
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.GetMerchantSessionResponse{
		User:       &tenantsv1.MerchantUser{Id: row.ID, TenantId: tid.String(), Email: row.Email, Role: row.Role},
		ExpireTime: timestamppb.New(row.ExpiresAt),
	}), nil
}

// EndMerchantSession deletes a session; ending an unknown one is fine.
func (s *Service) EndMerchantSession(ctx context.Context, req *connect.Request[tenantsv1.EndMerchantSessionRequest]) (*connect.Response[tenantsv1.EndMerchantSessionResponse], error) {
	tid, err := tenantIDArg(req.Msg.GetTenantId())
	if err != nil {
		return nil, err
	}
	err = pgstore.InTenant(tenancy.With(ctx, tid), s.pool, func(tx pgx.Tx) error {
		_, err := tenantsdb.New(tx).DeleteMerchantSession(ctx, tenantsdb.DeleteMerchantSessionParams{TenantID: tid, TokenHash: HashSessionToken(req.Msg.GetSessionToken())})
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&tenantsv1.EndMerchantSessionResponse{}), nil
}
