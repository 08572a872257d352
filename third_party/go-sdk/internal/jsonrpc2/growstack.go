// Copyright 2026 The bcp authors. bcp patch 3 (PATCHES.md); not in the
// upstream SDK.

package jsonrpc2

// growStackFrame is half the stack a tool call's goroutine reaches on the
// bcp platform (128 KB), less room for the frames above: a new goroutine
// grows to that size in one step instead of doubling several times.
const growStackFrame = 64<<10 - 512

var growStackSink byte

// growStack makes the calling goroutine's stack grow once, while it is
// still shallow, to the size the handler will need.
//
//go:noinline
func growStack() {
	var buf [growStackFrame]byte
	buf[int(growStackSink)%growStackFrame] = 1
	growStackSink = buf[(int(growStackSink)+1)%growStackFrame]
}
