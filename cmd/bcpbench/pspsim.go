package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/obs"
	"github.com/bcpdev/bcp/internal/pgserver"
	"github.com/bcpdev/bcp/platform"
)

// runPSPSim is `bcpbench pspsim`: the PSP simulator (API Pix and card
// API) as a process of its own, on a private PostgreSQL of its own, for a
// `bcpd dev --pspsim-url` under measurement (scripts/lib/bcpd-dev.sh):
// a real merchant's PSP runs elsewhere, so its TLS server side, OAuth2,
// card API and ledger SQL must count neither in bcpd's CPU nor in its
// cluster's. Its cluster runs with fsync off: it is the outside world's
// books, not measured. It creates the dev PKI in --dev-pki-dir when absent
// (bcpd dev must be given the same directory: its webhook listener's
// certificate and the simulator's trust come from it), keeps its control
// token in --token-file (created when absent), prints its URLs, and runs
// until SIGINT or SIGTERM, then stops its PostgreSQL.
func runPSPSim(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pspsim", flag.ContinueOnError)
	pkiDir := fs.String("dev-pki-dir", "", "the development PKI shared with bcpd dev --dev-pki-dir (created when absent; required)")
	pixAddr := fs.String("pix-addr", "127.0.0.1:0", "the API Pix listener (mTLS)")
	controlAddr := fs.String("control-addr", "127.0.0.1:0", "the control and card API listener (bcpd dev --pspsim-url https://this)")
	tokenFile := fs.String("token-file", "", "file holding the control API token (bcpd dev --pspsim-token); created with a new token when absent (required)")
	dataDir := fs.String("data-dir", "", "directory of its PostgreSQL (empty: a temporary one, removed at exit)")
	urlFile := fs.String("url-file", "", "file to write the control URL to once serving (empty: none)")
	faults := fs.String("faults", "", "faults to inject (as bcpd --pspsim-faults)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *pkiDir == "" || *tokenFile == "" {
		return errors.New("pspsim: --dev-pki-dir and --token-file are required")
	}
	token, err := loadOrCreateToken(*tokenFile)
	if err != nil {
		return fmt.Errorf("pspsim: token: %w", err)
	}
	dir := *dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "bcpbench-pspsim-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_ = os.Chmod(dir, 0o755) // PostgreSQL runs as its own user when we are root
	pg, err := pgserver.Start(ctx, pgserver.Options{DataDir: filepath.Join(dir, "pgdata"), NoFsync: true})
	if err != nil {
		return fmt.Errorf("pspsim: start PostgreSQL: %w", err)
	}
	defer func() { _ = pg.Stop() }()
	urls, err := db.Bootstrap(ctx, pg.URL("postgres"), "pspsim")
	if err != nil {
		return fmt.Errorf("pspsim: bootstrap its database: %w", err)
	}
	if _, err := db.MigrateUp(ctx, urls.Owner, nil); err != nil {
		return fmt.Errorf("pspsim: migrate its database: %w", err)
	}
	r, err := platform.Start(ctx, platform.Config{
		Services: []string{platform.PSPSim}, DatabaseURL: urls.App, InternalAddr: "127.0.0.1:0",
		InternalToken: "bcp_int_" + randomHex(), PSPSimToken: token, DevPKIDir: *pkiDir,
		PSPSimPixAddr: *pixAddr, PSPSimControlAddr: *controlAddr, PSPSimFaults: *faults,
		Logger: obs.NewLogger(os.Stderr, slog.LevelWarn),
	})
	if err != nil {
		return fmt.Errorf("pspsim: %w", err)
	}
	defer r.Stop()
	control := r.PSPSim.ControlURL()
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(control+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("pspsim: control and card API %s, API Pix %s (dev PKI %s, PostgreSQL in %s)\n", control, r.PSPSim.PixURL(), *pkiDir, pg.DataDir)
	select {
	case <-ctx.Done():
		return nil
	case err := <-r.Err():
		return err
	}
}

func loadOrCreateToken(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	t := "bcp_psp_" + randomHex()
	return t, os.WriteFile(path, []byte(t+"\n"), 0o600)
}

func randomHex() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
