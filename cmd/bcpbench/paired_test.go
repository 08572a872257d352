package main

import (
	"bufio"
	"context"
	"io"
	"testing"
)

// A --paired child over its real line protocol: it sets up a platform,
// reports ready with its memory, measures the blocks it is asked for, and
// stops on "quit".
func TestHolderProtocol(t *testing.T) {
	ctx := context.Background()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	cfg := scaleConfig{base: 3, hold: 3, cold: 1, seedConc: 2, touchConc: 2}
	errc := make(chan error, 1)
	go func() {
		err := runHolder(ctx, cfg, inR, outW)
		_ = outW.Close()
		errc <- err
	}()
	h := &holder{in: inW, lines: bufio.NewScanner(outR)}
	var r holderReady
	if err := h.expect("ready", &r); err != nil {
		t.Fatal(err)
	}
	if r.Tenants != 3 || r.Touched != 1 || r.HeapMB <= 0 || r.RSSMB <= r.HeapMB || r.Gor <= 0 {
		t.Fatalf("ready %+v", r)
	}
	b, err := h.measure(2)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Profile) != 2 || len(b.Create) != 2 || b.Profile[0] <= 0 || b.Create[1] <= 0 {
		t.Fatalf("block %+v", b)
	}
	if _, err := io.WriteString(inW, "quit\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("holder: %v", err)
	}
}

func TestPairPrintsNothingMeasuredAsDash(t *testing.T) {
	if got := pair(OpStats{}, 0); got != "-" {
		t.Errorf("empty: %q", got)
	}
	if got := pair(OpStats{Count: 3, P50: 1_500_000}, 2_000_000); got != "1.5 / 2.0" {
		t.Errorf("measured: %q", got)
	}
}
