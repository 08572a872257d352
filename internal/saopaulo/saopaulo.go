// Package saopaulo is the time zone every time shown to a buyer or a
// merchant is in: America/Sao_Paulo ("horário de Brasília"). The zone
// data is embedded (time/tzdata), so a host without tzdata shows the same
// times; protocol fields (expires_at, …) stay UTC RFC 3339.
package saopaulo

import (
	"fmt"
	"time"
	_ "time/tzdata" // the zone without the host's tzdata
)

// Location is America/Sao_Paulo.
var Location = func() *time.Location {
	l, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		panic("saopaulo: embedded tzdata lacks America/Sao_Paulo: " + err.Error())
	}
	return l
}()

// Zone names the zone after a time in buyer-facing text, with its UTC
// offset at t: "horário de Brasília, UTC-3".
func Zone(t time.Time) string {
	_, off := t.In(Location).Zone()
	h, m := off/3600, (off%3600)/60
	if m < 0 {
		m = -m
	}
	if m != 0 {
		return fmt.Sprintf("horário de Brasília, UTC%+d:%02d", h, m)
	}
	return fmt.Sprintf("horário de Brasília, UTC%+d", h)
}
