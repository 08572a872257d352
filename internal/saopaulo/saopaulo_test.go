package saopaulo

import (
	"testing"
	"time"
)

func TestZone(t *testing.T) {
	at := time.Date(2026, 12, 2, 16, 23, 0, 0, time.UTC)
	if got := at.In(Location).Format("02/01 15:04"); got != "02/12 13:23" {
		t.Fatalf("local time %q", got)
	}
	if got := Zone(at); got != "horário de Brasília, UTC-3" {
		t.Fatalf("zone %q", got)
	}
	// 2018-12-01 was in daylight saving time (UTC-2).
	if got := Zone(time.Date(2018, 12, 1, 12, 0, 0, 0, time.UTC)); got != "horário de Brasília, UTC-2" {
		t.Fatalf("zone in 2018 %q", got)
	}
}
