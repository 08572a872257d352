package payattempt

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	paymentsv1 "github.com/bcpdev/bcp/proto/gen/bcp/payments/v1"
)

func TestMovedMoney(t *testing.T) {
	for status, want := range map[string]bool{
		"succeeded": true, "partially_refunded": true, "refunded": true,
		"pending": false, "requires_action": false, "failed": false, "expired": false, "canceled": false,
		"": false, "SUCCEEDED": false,
	} {
		if got := MovedMoney(status); got != want {
			t.Errorf("MovedMoney(%q) = %v, want %v", status, got, want)
		}
	}
}

// TestMovedMoneyProto: every enum value answers as its stored name does,
// so the two forms cannot drift apart.
func TestMovedMoneyProto(t *testing.T) {
	var got []string
	for v := range paymentsv1.AttemptStatus_name {
		s := paymentsv1.AttemptStatus(v)
		if MovedMoneyProto(s) {
			got = append(got, s.String())
		}
	}
	sort.Strings(got)
	want := []string{"ATTEMPT_STATUS_PARTIALLY_REFUNDED", "ATTEMPT_STATUS_REFUNDED", "ATTEMPT_STATUS_SUCCEEDED"}
	if !slices.Equal(got, want) {
		t.Errorf("moved money: %q, want %q", got, want)
	}
	if MovedMoneyProto(paymentsv1.AttemptStatus(99)) {
		t.Error("an unknown enum value moved money")
	}
}

func TestMovedMoneySQL(t *testing.T) {
	if got, want := MovedMoneySQL("a.status"), "a.status IN ('succeeded', 'partially_refunded', 'refunded')"; got != want {
		t.Errorf("MovedMoneySQL = %q, want %q", got, want)
	}
}

// TestSQLCopies: SQL that cannot call Go (the sqlc queries, the invariant
// checks) spells the rule out; every status list there naming succeeded
// and refunded together (and no status that moved nothing) is this rule's.
func TestSQLCopies(t *testing.T) {
	list := regexp.MustCompile(`status IN \(([^)]*)\)`)
	files := []string{"../../db/checks/invariants.sql"}
	more, err := filepath.Glob("../../db/queries/payments/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	found := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range list.FindAllStringSubmatch(string(b), -1) {
			var statuses []string
			for _, s := range strings.Split(m[1], ",") {
				statuses = append(statuses, strings.Trim(strings.TrimSpace(s), "'"))
			}
			if !slices.Contains(statuses, Succeeded) || !slices.Contains(statuses, Refunded) || slices.Contains(statuses, "pending") {
				continue
			}
			found++
			sort.Strings(statuses)
			want := slices.Clone(moved)
			sort.Strings(want)
			if !slices.Equal(statuses, want) {
				t.Errorf("%s: %s lists %q, the rule is %q", f, m[0], statuses, moved)
			}
		}
	}
	if found == 0 {
		t.Error("no SQL copy of the rule found: the file names or the pattern are stale")
	}
}
