package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// userInvite creates a merchant admin-web user; the initial password is
// printed once (the registry stores only its argon2id hash).
func (c *cli) userInvite(ctx context.Context, args []string) error {
	fs := newFS("user invite")
	role := fs.String("role", "admin", "")
	p, err := parse(fs, args, 2, "<tenant> <email>")
	if err != nil {
		return err
	}
	if *role != "admin" && *role != "staff" {
		return usageError{"--role must be admin or staff"}
	}
	r, err := c.client.InviteMerchantUser(ctx, connect.NewRequest(&tenantsv1.InviteMerchantUserRequest{Tenant: p[0], Email: p[1], Role: *role}))
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"user": r.Msg.GetUser(), "initial_password": r.Msg.GetInitialPassword()})
	}
	u := r.Msg.GetUser()
	fmt.Fprintf(c.out, "user %s (%s) invited, id %s\ninitial password (shown once, send it over a safe channel): %s\n",
		u.GetEmail(), u.GetRole(), u.GetId(), r.Msg.GetInitialPassword())
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
	fmt.Fprintln(tw, "EMAIL\tROLE\tLAST LOGIN\tCREATED\tID")
	for _, u := range r.Msg.GetUsers() {
		last := "never"
		if u.GetLastLoginTime() != nil {
			last = u.GetLastLoginTime().AsTime().UTC().Format(time.RFC3339)
		}
		if u.GetLockedUntil() != nil && u.GetLockedUntil().AsTime().After(time.Now()) {
			last += " (locked)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.GetEmail(), u.GetRole(), last, u.GetCreateTime().AsTime().UTC().Format(time.RFC3339), u.GetId())
	}
	return tw.Flush()
}
