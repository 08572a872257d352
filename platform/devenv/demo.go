package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/services/edge"
)

// DemoOptions configure StartDemo: the demo merchant of a platform whose
// services run as processes of their own (`bcpd demo`, used by make ha).
type DemoOptions struct {
	DataDir      string // demo-api-key and demo-admin-password are kept here
	InternalAddr string // serves the demo agent's profile
	// ServiceURLs locate tenants, catalog and pricing (seeding) and
	// checkout, payments and orders (the first-day history).
	ServiceURLs   map[string]string
	InternalToken string
	OperatorToken string
	// PublicScheme and PublicPort are the edges' advertised origin: the
	// merchant's policy links point there, and the history is bought
	// through 127.0.0.1:PublicPort.
	PublicScheme, PublicPort string
	NoDemoHistory            bool
	Logger                   *slog.Logger
	Out                      io.Writer // the banner
}

// StartDemo seeds the demo merchant through the services' APIs (once:
// later runs find it) and serves the demo agent's profile on
// InternalAddr until the returned process is stopped; the merchant's API
// key is bound to that URL, so it must stay the same between runs.
func StartDemo(ctx context.Context, o DemoOptions) (*platform.Running, error) {
	if o.OperatorToken == "" {
		return nil, errors.New("the demo merchant is seeded with the operator token (BCP_OPERATOR_TOKEN)")
	}
	if o.PublicPort == "" {
		return nil, errors.New("the demo needs the edges' port (--public-port)")
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	// The demo wallet's key (AP2 mandates) lives in the data dir too: its
	// public half is the profile's signing key.
	pattern, handler, err := DemoAgentHandler(dataDir)
	if err != nil {
		return nil, err
	}
	// No service of its own: only the internal listener, for the profile
	// and the health endpoints.
	r, err := platform.Start(ctx, platform.Config{
		InternalAddr: o.InternalAddr, InternalRoutes: map[string]http.Handler{pattern: handler},
		ServiceURLs: o.ServiceURLs, InternalToken: o.InternalToken, OperatorToken: o.OperatorToken,
		Edge: edge.Config{PublicScheme: o.PublicScheme, PublicPort: o.PublicPort}, Logger: o.Logger,
	})
	if err != nil {
		return nil, err
	}
	c := r.ClientsWithToken(o.OperatorToken)
	profile := DemoAgentProfileURL(r.InternalAddr)
	base := o.PublicScheme + "://" + DemoDomain
	if p := o.PublicPort; !(o.PublicScheme == "http" && p == "80") && !(o.PublicScheme == "https" && p == "443") {
		base += ":" + p
	}
	sd, err := seedAll(ctx, c, dataDir, profile, base, net.JoinHostPort("127.0.0.1", o.PublicPort), o.NoDemoHistory, o.Logger)
	if err != nil {
		r.Stop()
		return nil, err
	}
	// The banner goes to a log: it names the files holding the secrets,
	// never the secrets.
	if o.Out != nil {
		fmt.Fprintf(o.Out, "demo merchant %s (%s), tenant %s\n  admin     %s/admin/ (e-mail %s, password in %s)\n  agent     profile %s, API key in %s\n",
			sd.tenant.GetName(), DemoDomain, sd.tenant.GetId(), base, sd.adminEmail, filepath.Join(dataDir, "demo-admin-password"), profile, filepath.Join(dataDir, "demo-api-key"))
		if sd.history != "" {
			fmt.Fprintln(o.Out, "  "+sd.history)
		}
	}
	return r, nil
}
