package devenv

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// bcpd dev --pspsim-url: dev hosts no simulator and its sandbox handlers
// pay at one elsewhere (a process and database of its own, as
// `bcpbench pspsim` runs it for make bench), sharing only the dev PKI.
// The demo merchant is seeded through it: its handlers' connection tests
// pass there, and its first-day history (card purchases, Pix paid by
// simulation and settled by the simulator's webhooks) is bought there;
// the simulator's ledger rows are in its database, none in dev's.
func TestDevWithAnExternalSimulator(t *testing.T) {
	simDB, devDB := testdb.New(t), testdb.New(t)
	pkiDir := filepath.Join(t.TempDir(), "pki")
	const simToken = "bcp_psp_external"
	sim, err := platform.Start(context.Background(), platform.Config{
		Services: []string{platform.PSPSim}, DatabaseURL: simDB.AppURL, InternalAddr: "127.0.0.1:0",
		InternalToken: "sim-internal", PSPSimToken: simToken, DevPKIDir: pkiDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Stop()
	dir := t.TempDir()
	var out bytes.Buffer
	e, err := Start(context.Background(), Options{DataDir: dir, DatabaseURL: devDB.AppURL, OwnerURL: devDB.OwnerURL,
		PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", Out: &out,
		PSPSimURL: sim.PSPSim.ControlURL(), PSPSimToken: simToken, DevPKIDir: pkiDir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	banner := out.String()
	if e.Platform.PSPSim != nil {
		t.Error("dev hosts a PSP simulator with --pspsim-url")
	}
	if want := "  PSP simulator     control and card API " + sim.PSPSim.ControlURL() + " (hosted elsewhere: --pspsim-url)\n" +
		"                    (the sandbox's bank; CA in " + filepath.Join(pkiDir, "dev-ca", "ca.pem") + ")\n"; !strings.Contains(banner, want) {
		t.Errorf("banner lacks %q:\n%s", want, banner)
	}
	var info DevInfo
	if b, err := os.ReadFile(filepath.Join(dir, DevFile)); err != nil || json.Unmarshal(b, &info) != nil {
		t.Fatalf("%s: %v", DevFile, err)
	}
	if info.PSPSimControlURL != sim.PSPSim.ControlURL() || info.PSPSimPixURL != "" {
		t.Errorf("%s: simulator %q, Pix %q; want %q, none", DevFile, info.PSPSimControlURL, info.PSPSimPixURL, sim.PSPSim.ControlURL())
	}
	if _, err := os.Stat(filepath.Join(dir, "pspsim-token")); !os.IsNotExist(err) {
		t.Errorf("dev kept a simulator token of its own: %v", err)
	}
	const line = "demo history: 6 orders (R$ 799,94), 9 checkouts (1 Pix pending, 1 canceled, 1 incomplete), 1 shipped, R$ 39,90 refunded"
	if !strings.Contains(banner, "\n  "+line+"\n") {
		t.Fatalf("banner lacks %q:\n%s", line, banner)
	}
	f := stats(t, e, tenantOf(t, banner))
	if f.pixPaid != 2 || f.pixPending != 1 || f.cardApproved != 4 {
		t.Errorf("Pix paid %d, pending %d, cards approved %d; want 2, 1, 4", f.pixPaid, f.pixPending, f.cardApproved)
	}
	cl, err := e.Platform.ClientsWithToken(mustRead(t, e, "operator-token")).Tenants.GetGoLiveChecklist(context.Background(),
		connect.NewRequest(&tenantsv1.GetGoLiveChecklistRequest{Tenant: DemoSlug}))
	if err != nil || !cl.Msg.GetChecklist().GetReady() || cl.Msg.GetChecklist().GetDone() != 5 {
		t.Errorf("demo checklist: %v %v", cl, err)
	}
	// (Superuser: the ledgers are row-level secured by account, forced.)
	ledger := func(url string) (accounts, charges, intents int) {
		t.Helper()
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		if err := c.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM pspsim.accounts), (SELECT count(*) FROM pspsim.charges),
			(SELECT count(*) FROM pspsim.card_intents)`).Scan(&accounts, &charges, &intents); err != nil {
			t.Fatal(err)
		}
		return
	}
	if a, c, i := ledger(devDB.SuperURL); a != 0 || c != 0 || i != 0 {
		t.Errorf("dev's database: %d simulator accounts, %d Pix charges, %d card intents; want none", a, c, i)
	}
	// The demo's two sandbox accounts (Pix, card); the history's three
	// Pix charges (two paid, one pending) and four card payments.
	if a, c, i := ledger(simDB.SuperURL); a != 2 || c != 3 || i != 4 {
		t.Errorf("the simulator's database: %d accounts, %d Pix charges, %d card intents; want 2, 3, 4", a, c, i)
	}
}
