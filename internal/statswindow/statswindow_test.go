package statswindow

import (
	"testing"

	"github.com/bcpdev/bcp/internal/apperr"
)

func TestParse(t *testing.T) {
	a, b, err := Parse(0, 0)
	if err != nil || a != nil || b != nil {
		t.Fatalf("open window: %v %v %v", a, b, err)
	}
	a, b, err = Parse(100, 200)
	if err != nil || a.Unix() != 100 || b.Unix() != 200 {
		t.Fatalf("closed window: %v %v %v", a, b, err)
	}
	for _, w := range [][2]int64{{-1, 0}, {0, -5}, {200, 100}, {100, 100}} {
		_, _, err := Parse(w[0], w[1])
		if e := apperr.As(err); err == nil || e.Kind != apperr.KindInvalidArgument || e.Code != "invalid_window" {
			t.Errorf("window %v: %v, want invalid_window", w, err)
		}
	}
}
