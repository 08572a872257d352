package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// userInvite creates a merchant admin-web user and prints a one-time link
// to choose the password (valid 72 h; the registry stores only its hash).
// Inviting again a user who never signed in gives a new link.
func (c *cli) userInvite(ctx context.Context, args []string) error {
	fs := newFS("user invite")
	role := fs.String("role", "admin", "")
	base := fs.String("base-url", "", "")
	p, err := parse(fs, args, 2, "<tenant> <email>")
	if err != nil {
		return err
	}
	if *role != "admin" && *role != "staff" {
		return usageError{"--role must be admin or staff"}
	}
	t, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: p[0]}))
	if err != nil {
		return err
	}
	r, err := c.client.InviteMerchantUser(ctx, connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: t.Msg.GetTenant().GetId(), Email: p[1], Role: *role, PasswordLink: true}))
	if err != nil {
		return err
	}
	link := adminOrigin(*base, c.dataDir, t.Msg.GetTenant()) + "/admin/senha?token=" + r.Msg.GetPasswordToken()
	exp := r.Msg.GetPasswordTokenExpireTime().AsTime().UTC().Format(time.RFC3339)
	if c.json {
		return c.printJSON(map[string]any{"user": r.Msg.GetUser(), "link": link, "expire_time": exp})
	}
	u := r.Msg.GetUser()
	fmt.Fprintf(c.out, "user %s (%s) invited, id %s\nlink to set the password (works once, until %s; send it to the user): %s\n",
		u.GetEmail(), u.GetRole(), u.GetId(), exp, link)
	return nil
}

func (c *cli) userList(ctx context.Context, args []string) error {
	p, err := parse(newFS("user list"), args, 1, "<tenant>")
	if err != nil {
		return err
	}
	r, err := c.client.ListMerchantUsers(ctx, connect.NewRequest(&tenantsv1.ListMerchantUsersRequest{Tenant: p[0]}))
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(r.Msg.GetUsers())
	}
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EMAIL\tROLE\tLAST LOGIN\tINVITATION\tCREATED\tID")
	now := time.Now()
	for _, u := range r.Msg.GetUsers() {
		last := "never"
		if u.GetLastLoginTime() != nil {
			last = u.GetLastLoginTime().AsTime().UTC().Format(time.RFC3339)
		}
		if u.GetLockedUntil() != nil && u.GetLockedUntil().AsTime().After(now) {
			last += " (locked)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.GetEmail(), u.GetRole(), last, invitationState(u, now), u.GetCreateTime().AsTime().UTC().Format(time.RFC3339), u.GetId())
	}
	return tw.Flush()
}

// invitationState is user list's INVITATION column: "pending until T"
// while the user's link works, "expired T" after (user invite again gives
// a new link), "-" once the user chose a password or signed in.
func invitationState(u *tenantsv1.MerchantUser, now time.Time) string {
	if !u.GetInvitationPending() {
		return "-"
	}
	exp := u.GetInvitationExpireTime()
	switch {
	case exp == nil:
		return "expired"
	case exp.AsTime().After(now):
		return "pending until " + exp.AsTime().UTC().Format(time.RFC3339)
	default:
		return "expired " + exp.AsTime().UTC().Format(time.RFC3339)
	}
}
