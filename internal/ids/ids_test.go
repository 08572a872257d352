package ids

import (
	"sort"
	"testing"
	"time"
)

func TestNewIsPrefixedAndSortable(t *testing.T) {
	var got []string
	for i := 0; i < 50; i++ {
		got = append(got, New("chk"))
		if i%10 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	for _, id := range got {
		if !HasPrefix(id, "chk") {
			t.Fatalf("id %q does not look like a chk id", id)
		}
		if len(id) != len("chk_")+26 {
			t.Fatalf("id %q has length %d", id, len(id))
		}
	}
	if !sort.StringsAreSorted(got) {
		t.Fatalf("ids are not in creation order: %v", got)
	}
	if HasPrefix(got[0], "ord") || HasPrefix("chk_short", "chk") || HasPrefix("chk_"+"ILOU0000000000000000000000", "chk") {
		t.Fatal("HasPrefix accepted a foreign or malformed id")
	}
}

func TestEncodeKnownValue(t *testing.T) {
	var u [16]byte
	for i := range u {
		u[i] = 0xff
	}
	if got := encode(u); got != "7zzzzzzzzzzzzzzzzzzzzzzzzz" {
		t.Fatalf("encode(max) = %q", got)
	}
	if got := encode([16]byte{}); got != "00000000000000000000000000" {
		t.Fatalf("encode(0) = %q", got)
	}
}
