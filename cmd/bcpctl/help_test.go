package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform/devenv"
)

// --help needs no server and no token, anywhere on the command line.
func TestHelpNeedsNoToken(t *testing.T) {
	t.Setenv("BCP_OPERATOR_TOKEN", "")
	t.Setenv("BCP_SERVER", "http://127.0.0.1:1") // nothing listens: help must not call
	t.Setenv("BCP_DATA_DIR", t.TempDir())        // no dev token to find
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "commands:"},
		{[]string{"-h"}, "commands:"},
		{[]string{"tenant", "--help"}, "tenant create --name"},
		{[]string{"tenant", "list", "--help"}, "tenant list"},
		{[]string{"keys", "rotate", "-h"}, "keys rotate <tenant>"},
		{[]string{"catalog", "import", "t", "f.csv", "--help"}, "catalog import"},
		{[]string{"agent", "call", "--help"}, "agent call <endpoint>"},
		{[]string{"tenant", "status", "--help"}, "tenant status <tenant>"},
		{[]string{"shipping", "rate", "add", "--help"}, "shipping rate add <tenant> --title TITLE --price 18,90"},
		{[]string{"pickup", "-h"}, "pickup add <tenant> --name NAME"},
		{[]string{"handler", "set", "--help"}, "pix-sandbox   br.dev.bcp.pix, id pix, sandbox"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), tc.args, &out); err != nil || !strings.Contains(out.String(), tc.want) {
			t.Errorf("bcpctl %v: %v\n%s", tc.args, err, out.String())
		}
	}
}

// bcpctl finds a `bcpd dev` started with another data directory and other
// ports through dev.json in that directory (--data-dir or BCP_DATA_DIR).
func TestFindsDevWithCustomDataDirAndPorts(t *testing.T) {
	d := testdb.New(t)
	dir := t.TempDir()
	var banner bytes.Buffer
	e, err := devenv.Start(context.Background(), devenv.Options{DataDir: dir, DatabaseURL: d.AppURL, OwnerURL: d.OwnerURL,
		PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", Out: &banner, NoDemoHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	t.Setenv("BCP_OPERATOR_TOKEN", "")
	t.Setenv("BCP_SERVER", "")
	for name, setup := range map[string]func() []string{
		"--data-dir":   func() []string { t.Setenv("BCP_DATA_DIR", ""); return []string{"--data-dir", dir} },
		"BCP_DATA_DIR": func() []string { t.Setenv("BCP_DATA_DIR", dir); return nil },
	} {
		var out bytes.Buffer
		if err := run(context.Background(), append(setup(), "tenant", "list"), &out); err != nil || !strings.Contains(out.String(), devenv.DemoDomain) {
			t.Errorf("%s: bcpctl tenant list: %v\n%s", name, err, out.String())
		}
	}
}
