package main

import "testing"

// --help works everywhere without a token, key or database, and is a
// successful run (exit 0).
func TestHelpNeedsNothingAndSucceeds(t *testing.T) {
	for _, k := range []string{"BCP_INTERNAL_TOKEN", "BCP_OPERATOR_TOKEN", "BCP_DATABASE_URL", "BCP_MASTER_KEY", "BCP_MASTER_KEY_FILE"} {
		t.Setenv(k, "")
	}
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"all", "--help"}, {"dev", "--help"}, {"demo", "--help"}, {"edge", "-h"}, {"tenants", "--help"}, {"checkout", "-help"},
		{"migrate", "--help"}, {"migrate", "up", "--help"}, {"migrate", "status", "-h"},
	} {
		if err := run(args); err != nil {
			t.Errorf("bcpd %v: %v, want success", args, err)
		}
	}
	// Not help: still errors.
	if err := run([]string{"all", "--no-such-flag"}); err == nil {
		t.Error("bcpd all --no-such-flag succeeded")
	}
}
