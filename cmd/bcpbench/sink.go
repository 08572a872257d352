package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
)

// runSink is `bcpbench otlp-sink`: an OTLP/HTTP trace receiver that
// accepts and discards every export, so that a bench of bcpd with tracing
// on (make bench-ab with OTEL_EXPORTER_OTLP_ENDPOINT on one side) pays
// for encoding and sending its spans as it would to a collector, without
// failed exports. On SIGINT it prints what it received.
func runSink(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("otlp-sink", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4318", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var requests, bytes atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		requests.Add(1)
		bytes.Add(n)
		// An empty ExportTraceServiceResponse is zero protobuf bytes.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	fmt.Fprintf(os.Stderr, "otlp-sink: listening on http://%s/v1/traces\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	fmt.Fprintf(os.Stderr, "otlp-sink: %d exports, %d bytes\n", requests.Load(), bytes.Load())
	return nil
}
