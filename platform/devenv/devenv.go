// Package devenv is `bcpd dev`: a private PostgreSQL in a data directory,
// migrated and seeded with a demo merchant, and the whole platform in one
// process on top of it.
package devenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/pgserver"
	"github.com/bcpdev/bcp/internal/sealer"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
	"github.com/bcpdev/bcp/services/edge"
)

// Options configure a dev run.
type Options struct {
	DataDir      string
	DatabaseURL  string // use this server instead of a private cluster (app role)
	OwnerURL     string // migrations on DatabaseURL (defaults to DatabaseURL)
	PublicAddr   string
	InternalAddr string
	// OperatorHost serves the operator console (default OperatorHost).
	OperatorHost string
	Logger       *slog.Logger
	Out          io.Writer // the banner
	// NoDemoHistory: seed the demo merchant without its first-day history.
	NoDemoHistory bool
	// The PSP simulator's listeners and faults, and the webhook listener
	// (platform.Config; "" for any free port).
	PSPSimPixAddr, PSPSimControlAddr, PSPSimFaults string
	WebhookAddr                                    string
	// PSPSimURL is a PSP simulator hosted elsewhere (its control URL, as
	// `bcpd all --pspsim-url`): dev then hosts none, and the sandbox
	// handlers (the demo's too) pay there, so a measurement of this
	// process and its PostgreSQL leaves the outside world's work out.
	// It must trust the same dev PKI (DevPKIDir) to call the webhooks.
	PSPSimURL string
	// PSPSimToken is the simulator's control token ("": the one kept in
	// <data-dir>/pspsim-token, created on first use).
	PSPSimToken string
	// DevPKIDir is the development PKI ("": <data-dir>/pki).
	DevPKIDir string
}

// OperatorHost is where `bcpd dev` serves the operator console.
const OperatorHost = "operador.localhost"

// Env is a running dev platform.
type Env struct {
	Platform *platform.Running
	dataDir  string
	log      *slog.Logger

	// The private PostgreSQL (nil without one), started again on its port
	// whenever it exits unasked (supervise).
	mu       sync.Mutex
	pg       *pgserver.Server
	stopping bool
	stop     chan struct{}
	watched  chan struct{} // closed when supervise returns
}

// Start brings everything up and prints the banner.
func Start(ctx context.Context, o Options) (*Env, error) {
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	env := &Env{dataDir: dataDir, log: o.Logger, stop: make(chan struct{}), watched: make(chan struct{})}
	if env.log == nil {
		env.log = slog.Default()
	}
	appURL, ownerURL := o.DatabaseURL, o.OwnerURL
	if appURL == "" {
		fmt.Fprintf(o.Out, "starting private PostgreSQL in %s ...\n", filepath.Join(dataDir, "pgdata"))
		env.pg, err = pgserver.Start(ctx, pgserver.Options{DataDir: filepath.Join(dataDir, "pgdata"), Log: logWriter(dataDir)})
		if err != nil {
			return nil, err
		}
		go env.supervise()
	} else {
		close(env.watched)
	}
	if env.pg != nil {
		urls, err := db.Bootstrap(ctx, env.pg.URL("postgres"), "bcp")
		if err != nil {
			env.Stop()
			return nil, err
		}
		appURL, ownerURL = urls.App, urls.Owner
	}
	if ownerURL == "" {
		ownerURL = appURL
	}
	fmt.Fprintln(o.Out, "migrating the database ...")
	if _, err := db.MigrateUp(ctx, ownerURL, nil); err != nil {
		env.Stop()
		return nil, err
	}
	masterKey, err := sealer.LoadOrCreateKeyFile(filepath.Join(dataDir, "master.key"))
	if err != nil {
		env.Stop()
		return nil, err
	}
	opToken, err := loadOrCreateToken(filepath.Join(dataDir, "operator-token"), "bcp_op_")
	if err != nil {
		env.Stop()
		return nil, err
	}
	// The PSP simulator's control token, kept like the operator's: the
	// README's "going live" opens a bank account there by hand.
	simToken := o.PSPSimToken
	if simToken == "" {
		if simToken, err = loadOrCreateToken(filepath.Join(dataDir, "pspsim-token"), "bcp_psp_"); err != nil {
			env.Stop()
			return nil, err
		}
	}
	pkiDir := o.DevPKIDir
	if pkiDir == "" {
		pkiDir = filepath.Join(dataDir, "pki")
	}
	// The PSP simulator too: the demo's sandbox handlers pay through it
	// with the same clients production handlers use. With PSPSimURL it
	// is someone else's, and its webhooks need a listener here.
	services, serviceURLs, webhookAddr := platform.DevServices, map[string]string{}, o.WebhookAddr
	if o.PSPSimURL != "" {
		services, serviceURLs[platform.PSPSim] = platform.AllServices, o.PSPSimURL
		if webhookAddr == "" {
			webhookAddr = "127.0.0.1:0"
		}
	}
	if o.OperatorHost == "" {
		o.OperatorHost = OperatorHost
	}
	_, publicPort, _ := net.SplitHostPort(o.PublicAddr)
	agentPattern, agentHandler, err := DemoAgentHandler(dataDir)
	if err != nil {
		env.Stop()
		return nil, err
	}
	env.Platform, err = platform.Start(ctx, platform.Config{
		InternalRoutes:    map[string]http.Handler{agentPattern: agentHandler},
		Services:          services,
		ServiceURLs:       serviceURLs,
		DevPKIDir:         pkiDir,
		PSPSimPixAddr:     o.PSPSimPixAddr,
		PSPSimControlAddr: o.PSPSimControlAddr,
		PSPSimFaults:      o.PSPSimFaults,
		PSPSimToken:       simToken,
		WebhookAddr:       webhookAddr,
		DatabaseURL:       appURL,
		PublicAddr:        o.PublicAddr,
		InternalAddr:      o.InternalAddr,
		InternalToken:     randomToken("bcp_int_"),
		OperatorToken:     opToken,
		OperatorHost:      o.OperatorHost,
		MasterKey:         masterKey,
		Edge:              edge.Config{PublicScheme: "http", PublicPort: publicPort},
		Logger:            o.Logger,
	})
	if err != nil {
		env.Stop()
		return nil, err
	}
	if err := writeDevFile(dataDir, env.Platform, o.PSPSimURL); err != nil {
		env.Stop()
		return nil, err
	}
	agentProfile := DemoAgentProfileURL(env.Platform.InternalAddr)
	// The port the public listener got (the flag may say :0).
	demoBase := "http://" + DemoDomain
	if _, p, _ := net.SplitHostPort(env.Platform.PublicAddr); p != "" && p != "80" {
		demoBase += ":" + p
	}
	seeding := "seeding the demo merchant (a new one also buys a day of orders over MCP, up to a minute)"
	if o.NoDemoHistory {
		seeding = "seeding the demo merchant"
	}
	fmt.Fprintf(o.Out, "platform listening on %s; %s ...\n", env.Platform.PublicAddr, seeding)
	sd, err := seedAll(ctx, env.Platform.ClientsWithToken(opToken), dataDir, agentProfile, demoBase, env.Platform.PublicAddr, o.NoDemoHistory, o.Logger)
	if err != nil {
		env.Stop()
		return nil, err
	}
	tenant, apiKey, adminEmail, adminPassword := sd.tenant, sd.apiKey, sd.adminEmail, sd.adminPassword
	history := ""
	if sd.history != "" {
		history = "\n  " + sd.history + "\n"
	}
	_, port, _ := net.SplitHostPort(env.Platform.PublicAddr)
	base := "http://" + DemoDomain + ":" + port
	fmt.Fprintf(o.Out, `
BCP platform running (bcpd all on a private PostgreSQL).

  demo merchant     %s (%s), tenant %s
  profile           %s/.well-known/bcp
  agent endpoint    %s/bcp/mcp
  admin URL         %s/admin/   (e-mail %s, password %s)
  demo agent        profile %s, API key %s
  demo wallet       %s (the demo agent's AP2 test key: bcpctl agent mandate --key-file it)
  operator API      http://%s   (token in %s; bcpctl finds both through %s,
                    from another directory with --data-dir %s or BCP_DATA_DIR)
  operator console  http://%s:%s/   (sign in with the operator token)
  PSP simulator     %s
                    (the sandbox's bank; CA in %s)
  Pix webhooks      https://<merchant host>:%s/webhooks/pix/… (mTLS)
%s
  *.localhost names resolve to this machine in browsers; with curl send the Host header:
    curl -H 'Host: %s' http://127.0.0.1:%s/.well-known/bcp

Ctrl-C stops the platform and PostgreSQL; data stays in %s.
`, tenant.GetName(), DemoDomain, tenant.GetId(), base, base, base, adminEmail, adminPassword, agentProfile, apiKey, filepath.Join(dataDir, DemoWalletFile),
		env.Platform.InternalAddr, filepath.Join(dataDir, "operator-token"), DevFile, dataDir, o.OperatorHost, port,
		simLine(env.Platform, o.PSPSimURL), filepath.Join(pkiDir, "dev-ca", "ca.pem"), portOf(env.Platform.WebhookAddr),
		history, DemoDomain, port, dataDir)
	return env, nil
}

// simLine is the banner's line about the PSP simulator: hosted here, or
// elsewhere (PSPSimURL).
func simLine(p *platform.Running, external string) string {
	if p.PSPSim == nil {
		return "control and card API " + external + " (hosted elsewhere: --pspsim-url)"
	}
	return fmt.Sprintf("API Pix %s (mTLS + OAuth2), control and card API %s", p.PSPSim.PixURL(), p.PSPSim.ControlURL())
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// seeded is the demo merchant as seeding left it; history is the line
// about its first-day history ("" when the merchant existed already).
type seeded struct {
	tenant                            *tenantsv1.Tenant
	apiKey, adminEmail, adminPassword string
	history                           string
}

// seedAll seeds the demo merchant and its admin user through c (once:
// later runs find them), and gives a merchant it just created its history,
// bought through publicAddr (unless noHistory). A failed history is a
// warning, not a reason to stop the platform.
func seedAll(ctx context.Context, c *platform.Clients, dataDir, agentProfile, demoBase, publicAddr string, noHistory bool, log *slog.Logger) (seeded, error) {
	var sd seeded
	var created bool
	var err error
	sd.tenant, sd.apiKey, created, err = SeedDemo(ctx, c, dataDir, agentProfile, demoBase)
	if err != nil {
		return sd, fmt.Errorf("seed demo merchant: %w", err)
	}
	if sd.adminEmail, sd.adminPassword, err = SeedDemoAdmin(ctx, c, sd.tenant.GetId(), dataDir); err != nil {
		return sd, fmt.Errorf("seed demo admin: %w", err)
	}
	switch {
	case created && noHistory:
		sd.history = "demo history: skipped (--no-demo-history)"
	case created:
		if log == nil {
			log = slog.Default()
		}
		// A minute: bought through one process per role (make ha) it
		// takes longer than in one.
		hctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		start := time.Now()
		h, err := SeedDemoHistory(hctx, c, sd.tenant.GetId(), publicAddr, sd.apiKey, agentProfile)
		if err != nil {
			log.Warn("demo history not seeded", "err", err)
			sd.history = "demo history: failed, the platform runs without it (" + err.Error() + ")"
		} else {
			log.Info("demo history seeded", "orders", h.Orders, "checkouts", h.Checkouts, "took_ms", time.Since(start).Milliseconds())
			sd.history = h.String()
		}
	}
	return sd, nil
}

// DevFile is the file in the data directory where a running `bcpd dev`
// says where it listens, so bcpctl (--data-dir / BCP_DATA_DIR) finds it
// whatever ports it was given. Removed on a clean stop.
const DevFile = "dev.json"

// DevInfo is DevFile's content.
type DevInfo struct {
	InternalURL string `json:"internal_url"` // operator API (bcpctl --server)
	PublicURL   string `json:"public_url"`   // agents and browsers
	// The PSP simulator (bcpctl pspsim, with the token in pspsim-token
	// and the CA in pki/dev-ca/ca.pem).
	PSPSimControlURL string `json:"pspsim_control_url,omitempty"`
	PSPSimPixURL     string `json:"pspsim_pix_url,omitempty"`
	PID              int    `json:"pid"`
}

func writeDevFile(dataDir string, p *platform.Running, externalSim string) error {
	info := DevInfo{InternalURL: "http://" + p.InternalAddr, PublicURL: "http://" + p.PublicAddr, PID: os.Getpid(), PSPSimControlURL: externalSim}
	if p.PSPSim != nil {
		info.PSPSimControlURL, info.PSPSimPixURL = p.PSPSim.ControlURL(), p.PSPSim.PixURL()
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dataDir, DevFile), append(b, '\n'), 0o644)
}

// Stop stops the platform, then PostgreSQL.
func (e *Env) Stop() {
	if e.Platform != nil {
		_ = os.Remove(filepath.Join(e.dataDir, DevFile))
		e.Platform.Stop()
	}
	e.mu.Lock()
	first := !e.stopping
	e.stopping = true
	pg := e.pg
	e.mu.Unlock()
	if first {
		close(e.stop)
	}
	<-e.watched
	if pg != nil {
		_ = pg.Stop()
	}
}

// Postgres is the private PostgreSQL as it runs now (nil without one):
// supervise replaces it when it exits unasked.
func (e *Env) Postgres() *pgserver.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pg
}

// supervise keeps the private PostgreSQL running: when it exits without
// Stop asking (a crash, a kill, pg_ctl stop), it is started again on the
// same data directory and port, so the platform's pools, which reconnect
// by themselves, find it where they left it; `bcpd dev` keeps running
// through it as `bcpd all` does through a restart of its database.
// While another postmaster serves the data directory (pg_ctl restart),
// it is left alone, and watched until it is gone.
func (e *Env) supervise() {
	defer close(e.watched)
	for {
		pg := e.Postgres()
		select {
		case <-e.stop:
			return
		case <-pg.Done():
		}
		e.log.Warn("dev: PostgreSQL exited; starting it again", "data_dir", pg.DataDir, "port", pg.Port)
		for delay := 250 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
			if reachable(pg) {
				// Someone else's postmaster serves it: wait for it to go.
				select {
				case <-e.stop:
					return
				case <-time.After(time.Second):
				}
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			next, err := pgserver.Start(ctx, pgserver.Options{DataDir: pg.DataDir, Port: pg.Port, Log: logWriter(e.dataDir)})
			cancel()
			if err == nil {
				e.mu.Lock()
				if e.stopping {
					e.mu.Unlock()
					_ = next.Stop()
					return
				}
				e.pg = next
				e.mu.Unlock()
				e.log.Warn("dev: PostgreSQL is running again", "port", next.Port)
				break
			}
			e.log.Warn("dev: PostgreSQL did not start again; retrying", "err", err, "retry_in", delay)
			select {
			case <-e.stop:
				return
			case <-time.After(delay):
			}
		}
	}
}

// reachable says whether a postmaster answers at pg's address (one this
// process did not start, when pg has exited).
func reachable(pg *pgserver.Server) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return false
	}
	_ = conn.Close(ctx)
	return true
}

func loadOrCreateToken(path, prefix string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	t := randomToken(prefix)
	return t, os.WriteFile(path, []byte(t+"\n"), 0o600)
}

func randomToken(prefix string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func logWriter(dataDir string) io.Writer {
	f, err := os.OpenFile(filepath.Join(dataDir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil
	}
	return f
}
