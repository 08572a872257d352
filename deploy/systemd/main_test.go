package systemd

import (
	"testing"

	"github.com/bcpdev/bcp/deploy/internal/bcpdhelp"
)

func TestMain(m *testing.M) { bcpdhelp.Main(m) }
