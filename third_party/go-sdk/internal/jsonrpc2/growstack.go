// Copyright 2026 The bcp authors. bcp patch 3 (PATCHES.md); not in the
// upstream SDK.

package jsonrpc2

import "sync/atomic"

// growStackFrame is half the stack a tool call's goroutine reaches on the
// bcp platform (128 KB), less room for the frames above: a new goroutine
// grows to that size in one step instead of doubling several times.
const growStackFrame = 64<<10 - 512

// growStackSink keeps the frame from being optimised away. It is atomic
// because every request's goroutine writes it: a plain byte was a data race
// (harmless, but go test -race reported it).
var growStackSink atomic.Uint32

// growStack makes the calling goroutine's stack grow once, while it is
// still shallow, to the size the handler will need.
//
//go:noinline
func growStack() {
	var buf [growStackFrame]byte
	i := int(growStackSink.Load() % growStackFrame)
	buf[i] = 1
	growStackSink.Store(uint32(buf[(i+1)%growStackFrame]))
}
