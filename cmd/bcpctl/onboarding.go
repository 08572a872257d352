package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/catalogcsv"
	"github.com/bcpdev/bcp/internal/money"
	"github.com/bcpdev/bcp/internal/tenancy"
	pricingv1 "github.com/bcpdev/bcp/proto/gen/bcp/pricing/v1"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// Onboarding (issue 34): the go-live checklist, tenant update, shipping
// rates and pickup points, payment handler presets and invitations by
// link.

// handlerPreset is a payment handler an operator sets by name instead of
// typing its reverse-domain name and config.
type handlerPreset struct {
	id, name, instruments, config, environment, spec, schema string
	position                                                 int
	// needs are the flags the preset cannot do without (any one of each
	// group), and what to say when they are missing.
	needs [][]string
	hint  string
}

const cardInstruments = `[{"type":"card","constraints":{"brands":["visa","mastercard"]}}]`

// cardHandlerName is the delegated card handler the sandbox and the
// Stripe connection speak (the demo merchant's).
const cardHandlerName = "com.example.vendor.delegate_payment"

var handlerPresets = map[string]handlerPreset{
	"pix-sandbox": {id: "pix", name: bcpnames.PixHandler, instruments: `[{"type":"pix"}]`, config: `{"environment":"sandbox"}`,
		environment: "sandbox", spec: bcpnames.PixSpec, schema: bcpnames.PixSchema},
	"card-sandbox": {id: "cartao", name: cardHandlerName, instruments: cardInstruments, config: `{}`, environment: "sandbox", position: 1,
		spec: "https://example.vendor.com/specs/delegate-payment", schema: "https://example.vendor.com/schemas/delegate-payment-config.json"},
	"pix-psp": {id: "pix", name: bcpnames.PixHandler, instruments: `[{"type":"pix"}]`, config: `{}`, environment: "production",
		spec: bcpnames.PixSpec, schema: bcpnames.PixSchema,
		needs: [][]string{{"pix-key", "config"}, {"psp-base-url"}, {"psp-token-url"}, {"psp-client-id"}, {"psp-cert", "psp-pkcs12"}, {"psp-webhook-ca"}},
		hint:  "--pix-key KEY --psp-base-url URL --psp-token-url URL --psp-client-id ID --psp-client-secret-file FILE --psp-cert FILE --psp-key FILE (or --psp-pkcs12 FILE) --psp-webhook-ca FILE"},
	"stripe-card": {id: "cartao", name: cardHandlerName, instruments: cardInstruments, config: `{}`, environment: "production", position: 1,
		spec: "https://example.vendor.com/specs/delegate-payment", schema: "https://example.vendor.com/schemas/delegate-payment-config.json",
		needs: [][]string{{"stripe-key-file", "$BCP_STRIPE_SECRET_KEY"}}, hint: "--stripe-key-file FILE (or $BCP_STRIPE_SECRET_KEY)"},
}

func presetNames() string {
	names := make([]string, 0, len(handlerPresets))
	for n := range handlerPresets {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// check says which required settings are missing.
func (p handlerPreset) check(set map[string]bool) error {
	var missing []string
	for _, group := range p.needs {
		ok := false
		for _, f := range group {
			if set[f] || (strings.HasPrefix(f, "$") && os.Getenv(f[1:]) != "") {
				ok = true
			}
		}
		if !ok {
			missing = append(missing, "--"+group[0])
		}
	}
	if len(missing) > 0 {
		return usageError{fmt.Sprintf("this preset needs %s: %s", strings.Join(missing, ", "), p.hint)}
	}
	return nil
}

// ---- tenant status ----

type statusItem struct {
	Key       string `json:"key"`
	State     string `json:"state"`
	Label     string `json:"label"`
	Detail    string `json:"detail"`
	Command   string `json:"command,omitempty"`
	AdminPath string `json:"admin_path,omitempty"`
	DoneTime  string `json:"done_time,omitempty"`
}

type statusJSON struct {
	Tenant   string       `json:"tenant"`
	TenantID string       `json:"tenant_id"`
	Ready    bool         `json:"ready"`
	Done     int32        `json:"done"`
	Required int32        `json:"required"`
	Items    []statusItem `json:"items"`
}

func stateName(s tenantsv1.ChecklistState) string {
	switch s {
	case tenantsv1.ChecklistState_CHECKLIST_STATE_DONE:
		return "done"
	case tenantsv1.ChecklistState_CHECKLIST_STATE_MISSING:
		return "missing"
	case tenantsv1.ChecklistState_CHECKLIST_STATE_NOT_REQUIRED:
		return "n/a"
	}
	return "unknown"
}

func (c *cli) tenantStatus(ctx context.Context, args []string) error {
	p, err := parse(newFS("tenant status"), args, 1, "<tenant>")
	if err != nil {
		return err
	}
	t, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: p[0]}))
	if err != nil {
		return err
	}
	r, err := c.client.GetGoLiveChecklist(ctx, connect.NewRequest(&tenantsv1.GetGoLiveChecklistRequest{Tenant: t.Msg.GetTenant().GetId()}))
	if err != nil {
		return err
	}
	cl := r.Msg.GetChecklist()
	slug := t.Msg.GetTenant().GetSlug()
	if c.json {
		out := statusJSON{Tenant: slug, TenantID: cl.GetTenantId(), Ready: cl.GetReady(), Done: cl.GetDone(), Required: cl.GetRequired(), Items: []statusItem{}}
		for _, it := range cl.GetItems() {
			si := statusItem{Key: it.GetKey(), State: stateName(it.GetState()), Label: it.GetLabelEn(), Detail: it.GetDetailEn(), Command: it.GetCommand(), AdminPath: it.GetAdminPath()}
			if it.GetDoneTime() != nil {
				si.DoneTime = it.GetDoneTime().AsTime().UTC().Format(time.RFC3339)
			}
			out.Items = append(out.Items, si)
		}
		return c.printJSON(out)
	}
	if cl.GetReady() {
		fmt.Fprintf(c.out, "tenant %s: ready to sell (%d/%d)\n", slug, cl.GetDone(), cl.GetRequired())
	} else {
		fmt.Fprintf(c.out, "tenant %s: %d/%d ready\n", slug, cl.GetDone(), cl.GetRequired())
	}
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tITEM\tDETAIL\tFIX")
	for _, it := range cl.GetItems() {
		fix := it.GetCommand()
		if fix == "" && it.GetState() == tenantsv1.ChecklistState_CHECKLIST_STATE_MISSING && it.GetAdminPath() != "" {
			fix = "admin " + it.GetAdminPath()
		}
		row := stateName(it.GetState()) + "\t" + it.GetLabelEn() + "\t" + it.GetDetailEn()
		if fix != "" {
			row += "\t" + fix
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// ---- tenant update ----

func (c *cli) tenantUpdate(ctx context.Context, args []string) error {
	fs := newFS("tenant update")
	name := fs.String("name", "", "")
	envFlag := fs.String("environment", "", "")
	p, err := parse(fs, args, 1, "<tenant>")
	if err != nil {
		return err
	}
	if *name == "" && *envFlag == "" {
		return usageError{"tenant update needs --name and/or --environment"}
	}
	var env tenantsv1.Environment
	if *envFlag != "" {
		var ok bool
		if env, ok = environmentsByName[*envFlag]; !ok {
			return usageError{"--environment must be production, sandbox or development"}
		}
	}
	var t *tenantsv1.Tenant
	if *name != "" {
		r, err := c.client.SetTenantName(ctx, connect.NewRequest(&tenantsv1.SetTenantNameRequest{Tenant: p[0], Name: *name}))
		if err != nil {
			return err
		}
		t = r.Msg.GetTenant()
	}
	var consequences []string
	if *envFlag != "" {
		r, err := c.client.SetTenantEnvironment(ctx, connect.NewRequest(&tenantsv1.SetTenantEnvironmentRequest{Tenant: p[0], Environment: env}))
		if err != nil {
			return err
		}
		t, consequences = r.Msg.GetTenant(), r.Msg.GetConsequences()
	}
	if c.json {
		return c.printJSON(map[string]any{"tenant": t, "consequences": consequences})
	}
	if err := c.printTenant(connect.NewResponse(&tenantsv1.GetTenantResponse{Tenant: t}), nil); err != nil {
		return err
	}
	if len(consequences) > 0 {
		fmt.Fprintf(c.out, "environment %s:\n", envName(t.GetEnvironment()))
		for _, s := range consequences {
			fmt.Fprintf(c.out, "  - %s\n", s)
		}
	}
	return nil
}

var environmentsByName = map[string]tenantsv1.Environment{
	"production": tenantsv1.Environment_ENVIRONMENT_PRODUCTION, "sandbox": tenantsv1.Environment_ENVIRONMENT_SANDBOX,
	"development": tenantsv1.Environment_ENVIRONMENT_DEVELOPMENT,
}

// ---- shipping rates and pickup points ----

// inTenant resolves a tenant reference and returns a context carrying its
// id, for the tenant-scoped pricing procedures.
func (c *cli) inTenant(ctx context.Context, ref string) (context.Context, *tenantsv1.Tenant, error) {
	t, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: ref}))
	if err != nil {
		return nil, nil, err
	}
	id, err := uuid.Parse(t.Msg.GetTenant().GetId())
	if err != nil {
		return nil, nil, err
	}
	return tenancy.With(ctx, id), t.Msg.GetTenant(), nil
}

// price reads a price as the catalog import does: whole centavos (1890)
// or reais with a decimal comma (18,90 or "R$ 18,90").
func price(flagName, s string) (int64, error) {
	cents, code, _ := catalogcsv.ParsePrice(s)
	if code != "" {
		return 0, usageError{fmt.Sprintf("%s %q: use whole centavos (1890) or reais with a decimal comma (18,90)", flagName, s)}
	}
	return cents, nil
}

func (c *cli) shippingRate(ctx context.Context, verb string, args []string) error {
	switch verb {
	case "add":
		return c.shippingRateAdd(ctx, args)
	case "list":
		p, err := parse(newFS("shipping rate list"), args, 1, "<tenant>")
		if err != nil {
			return err
		}
		tctx, _, err := c.inTenant(ctx, p[0])
		if err != nil {
			return err
		}
		r, err := c.pricing.ListShippingRates(tctx, connect.NewRequest(&pricingv1.ListShippingRatesRequest{}))
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(r.Msg.GetRates())
		}
		tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTITLE\tPRICE\tFREE ABOVE\tDAYS\tWHERE\tACTIVE")
		for _, rt := range r.Msg.GetRates() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", rt.GetId(), rt.GetTitle(), money.FormatBRL(rt.GetPrice()), orDash(rt.GetFreeAbove()), days(rt.GetMinDays(), rt.GetMaxDays()), where(rt), yesNo(rt.GetActive()))
		}
		return tw.Flush()
	case "remove":
		p, err := parse(newFS("shipping rate remove"), args, 2, "<tenant> <rate-id>")
		if err != nil {
			return err
		}
		tctx, _, err := c.inTenant(ctx, p[0])
		if err != nil {
			return err
		}
		if _, err := c.pricing.DeleteShippingRate(tctx, connect.NewRequest(&pricingv1.DeleteShippingRateRequest{Id: p[1]})); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "removed shipping rate %s\n", p[1])
		return nil
	}
	return usageError{"unknown command shipping rate " + verb + " (add, list, remove)"}
}

func (c *cli) shippingRateAdd(ctx context.Context, args []string) error {
	fs := newFS("shipping rate add")
	title := fs.String("title", "", "")
	priceS := fs.String("price", "", "")
	carrier := fs.String("carrier", "", "")
	desc := fs.String("description", "", "")
	regions := fs.String("regions", "", "")
	var ceps multi
	fs.Var(&ceps, "cep", "")
	free := fs.String("free-above", "", "")
	minDays := fs.Int("min-days", 0, "")
	maxDays := fs.Int("max-days", 0, "")
	position := fs.Int("position", 0, "")
	inactive := fs.Bool("inactive", false, "")
	p, err := parse(fs, args, 1, "<tenant>")
	if err != nil {
		return err
	}
	if *title == "" || *priceS == "" {
		return usageError{"shipping rate add needs --title and --price"}
	}
	rt := &pricingv1.ShippingRate{Title: *title, Carrier: *carrier, Description: *desc, MinDays: int32(*minDays), MaxDays: int32(*maxDays),
		Active: !*inactive, Position: int32(*position)}
	if rt.Price, err = price("--price", *priceS); err != nil {
		return err
	}
	if *free != "" {
		if rt.FreeAbove, err = price("--free-above", *free); err != nil {
			return err
		}
	}
	for _, r := range strings.FieldsFunc(strings.ToUpper(*regions), func(r rune) bool { return r == ',' || r == ' ' }) {
		rt.Regions = append(rt.Regions, r)
	}
	for _, cr := range ceps {
		from, to, ok := strings.Cut(cr, ":")
		if !ok {
			return usageError{fmt.Sprintf("--cep %q: give a range as FROM:TO (01000000:09999999)", cr)}
		}
		rt.CepRanges = append(rt.CepRanges, &pricingv1.CepRange{From: strings.ReplaceAll(from, "-", ""), To: strings.ReplaceAll(to, "-", "")})
	}
	tctx, _, err := c.inTenant(ctx, p[0])
	if err != nil {
		return err
	}
	r, err := c.pricing.SetShippingRate(tctx, connect.NewRequest(&pricingv1.SetShippingRateRequest{Rate: rt}))
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(r.Msg.GetRate())
	}
	s := r.Msg.GetRate()
	fmt.Fprintf(c.out, "shipping rate %s added: %s, %s, %s, %s%s\n", s.GetId(), s.GetTitle(), money.FormatBRL(s.GetPrice()), where(s), days(s.GetMinDays(), s.GetMaxDays()), freeText(s.GetFreeAbove()))
	return nil
}

func (c *cli) pickup(ctx context.Context, verb string, args []string) error {
	switch verb {
	case "add":
		fs := newFS("pickup add")
		name := fs.String("name", "", "")
		street := fs.String("street", "", "")
		extended := fs.String("extended", "", "")
		city := fs.String("city", "", "")
		region := fs.String("region", "", "")
		cep := fs.String("cep", "", "")
		priceS := fs.String("price", "", "")
		hours := fs.String("hours", "", "")
		inactive := fs.Bool("inactive", false, "")
		p, err := parse(fs, args, 1, "<tenant>")
		if err != nil {
			return err
		}
		if *name == "" || *street == "" || *city == "" || *region == "" || *cep == "" {
			return usageError{"pickup add needs --name, --street, --city, --region and --cep"}
		}
		l := &pricingv1.PickupLocation{Name: *name, StreetAddress: *street, ExtendedAddress: *extended, AddressLocality: *city,
			AddressRegion: strings.ToUpper(*region), PostalCode: strings.ReplaceAll(*cep, "-", ""), AddressCountry: "BR", Description: *hours, Active: !*inactive}
		if *priceS != "" {
			if l.Price, err = price("--price", *priceS); err != nil {
				return err
			}
		}
		tctx, _, err := c.inTenant(ctx, p[0])
		if err != nil {
			return err
		}
		r, err := c.pricing.SetPickupLocation(tctx, connect.NewRequest(&pricingv1.SetPickupLocationRequest{Location: l}))
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(r.Msg.GetLocation())
		}
		s := r.Msg.GetLocation()
		fmt.Fprintf(c.out, "pickup point %s added: %s, %s, %s/%s, CEP %s, %s\n", s.GetId(), s.GetName(), s.GetStreetAddress(), s.GetAddressLocality(), s.GetAddressRegion(), s.GetPostalCode(), money.FormatBRL(s.GetPrice()))
		return nil
	case "list":
		p, err := parse(newFS("pickup list"), args, 1, "<tenant>")
		if err != nil {
			return err
		}
		tctx, _, err := c.inTenant(ctx, p[0])
		if err != nil {
			return err
		}
		r, err := c.pricing.ListPickupLocations(tctx, connect.NewRequest(&pricingv1.ListPickupLocationsRequest{}))
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(r.Msg.GetLocations())
		}
		tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tADDRESS\tPRICE\tHOURS\tACTIVE")
		for _, l := range r.Msg.GetLocations() {
			fmt.Fprintf(tw, "%s\t%s\t%s, %s/%s %s\t%s\t%s\t%s\n", l.GetId(), l.GetName(), l.GetStreetAddress(), l.GetAddressLocality(), l.GetAddressRegion(), l.GetPostalCode(), money.FormatBRL(l.GetPrice()), l.GetDescription(), yesNo(l.GetActive()))
		}
		return tw.Flush()
	case "remove":
		p, err := parse(newFS("pickup remove"), args, 2, "<tenant> <pickup-id>")
		if err != nil {
			return err
		}
		tctx, _, err := c.inTenant(ctx, p[0])
		if err != nil {
			return err
		}
		if _, err := c.pricing.DeletePickupLocation(tctx, connect.NewRequest(&pricingv1.DeletePickupLocationRequest{Id: p[1]})); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "removed pickup point %s\n", p[1])
		return nil
	}
	return usageError{"unknown command pickup " + verb + " (add, list, remove)"}
}

func orDash(cents int64) string {
	if cents == 0 {
		return "-"
	}
	return money.FormatBRL(cents)
}

func freeText(cents int64) string {
	if cents == 0 {
		return ""
	}
	return ", free from " + money.FormatBRL(cents)
}

func days(lo, hi int32) string {
	switch {
	case lo == 0 && hi == 0:
		return "no delivery estimate"
	case hi == 0 || hi == lo:
		return fmt.Sprintf("%d business days", lo)
	}
	return fmt.Sprintf("%d-%d business days", lo, hi)
}

func where(rt *pricingv1.ShippingRate) string {
	var parts []string
	if len(rt.GetRegions()) > 0 {
		parts = append(parts, strings.Join(rt.GetRegions(), ","))
	}
	for _, c := range rt.GetCepRanges() {
		parts = append(parts, "CEP "+c.GetFrom()+"-"+c.GetTo())
	}
	if len(parts) == 0 {
		return "all of Brazil"
	}
	return strings.Join(parts, " ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ---- user invite ----

// adminOrigin is where the merchant's admin is reached: --base-url, else
// the primary domain over https, or over the scheme and port of the local
// `bcpd dev` recorded in dataDir/dev.json.
func adminOrigin(base, dataDir string, t *tenantsv1.Tenant) string {
	if base != "" {
		return strings.TrimRight(base, "/")
	}
	var info struct {
		PublicURL string `json:"public_url"`
	}
	if b, err := os.ReadFile(filepath.Join(dataDir, "dev.json")); err == nil && json.Unmarshal(b, &info) == nil {
		if u, err := url.Parse(info.PublicURL); err == nil && u.Scheme != "" {
			host := t.GetPrimaryDomain()
			if u.Port() != "" {
				host += ":" + u.Port()
			}
			return u.Scheme + "://" + host
		}
	}
	return "https://" + t.GetPrimaryDomain()
}
