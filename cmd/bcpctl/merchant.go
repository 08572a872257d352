package main

import (
	"context"
	"fmt"
	"os"

	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/tenancy"
	"github.com/bcpdev/bcp/services/merchantio"
)

// merchantClients are the services a merchant document spans.
func (c *cli) merchantClients() merchantio.Clients {
	return merchantio.Clients{Tenants: c.client, Catalog: c.catalog, Pricing: c.pricing, Orders: c.orders}
}

func (c *cli) merchantTenant(ctx context.Context, ref string) (uuid.UUID, error) {
	tctx, err := c.tenantContext(ctx, ref)
	if err != nil {
		return uuid.Nil, err
	}
	return tenancy.From(tctx)
}

// merchantExport writes the merchant document to stdout or --out.
func (c *cli) merchantExport(ctx context.Context, args []string) error {
	fs := newFS("merchant export")
	outFile := fs.String("out", "", "")
	p, err := parse(fs, args, 1, "<tenant>")
	if err != nil {
		return err
	}
	id, err := c.merchantTenant(ctx, p[0])
	if err != nil {
		return err
	}
	doc, err := merchantio.Export(ctx, c.merchantClients(), id)
	if err != nil {
		return err
	}
	b, err := merchantio.Marshal(doc)
	if err != nil {
		return err
	}
	if *outFile != "" {
		return os.WriteFile(*outFile, b, 0o600)
	}
	_, err = c.out.Write(b)
	return err
}

// merchantImport validates the whole document, then applies it; with any
// problem nothing is applied and every problem is listed (exit status 2).
func (c *cli) merchantImport(ctx context.Context, args []string) error {
	fs := newFS("merchant import")
	dryRun := fs.Bool("dry-run", false, "")
	p, err := parse(fs, args, 2, "<tenant> <file>")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p[1])
	if err != nil {
		return inputError{summary: "cannot read the merchant file", lines: []string{err.Error()}}
	}
	doc, problems := merchantio.Decode(b)
	if len(problems) > 0 {
		return problemsError(p[1], problems)
	}
	id, err := c.merchantTenant(ctx, p[0])
	if err != nil {
		return err
	}
	if *dryRun {
		problems, err := merchantio.Validate(ctx, c.merchantClients(), id, doc)
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			return problemsError(p[1], problems)
		}
		fmt.Fprintln(c.out, "valid (dry run: nothing changed)")
		return nil
	}
	rep, problems, err := merchantio.Import(ctx, c.merchantClients(), id, doc)
	if len(problems) > 0 {
		return problemsError(p[1], problems)
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(rep)
	}
	fmt.Fprintf(c.out, "catalog: %s\n", rep.Catalog)
	for _, s := range []struct {
		name string
		n    merchantio.Counts
	}{{"shipping rates", rep.ShippingRates}, {"pickup points", rep.PickupPoints}, {"discount codes", rep.DiscountCodes}, {"automatic discounts", rep.AutomaticDiscounts}} {
		fmt.Fprintf(c.out, "%s: created %d, updated %d, unchanged %d\n", s.name, s.n.Created, s.n.Updated, s.n.Unchanged)
	}
	fmt.Fprintf(c.out, "settings: %s\n", rep.Settings)
	return nil
}

func problemsError(file string, ps []merchantio.Problem) error {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return inputError{summary: fmt.Sprintf("%s: %d error(s), nothing imported:", file, len(ps)), lines: lines}
}
