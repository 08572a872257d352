// Package growstack grows a goroutine's stack once, when it starts, to
// the size request paths reach.
//
// A goroutine starts with a small stack (the runtime's running average of
// all goroutines, a few KB) and each time it runs out the runtime
// allocates one twice the size and copies the stack over, adjusting every
// frame (runtime.newstack → copystack). The platform's request paths go
// through connect calls served in process, pgx and the JSON codecs, and
// reach about 128 KB; growing there step by step cost 4–6 % of the CPU
// in bcpbench's purchase phase. Growing once while the stack is still
// shallow copies a frame or two instead. CockroachDB does the same
// (pkg/util/growstack); the MCP SDK's fork has its own copy for the tool
// call goroutines (third_party/go-sdk/PATCHES.md, patch 3).
package growstack

import "sync/atomic"

// Size is the stack Grow guarantees: the room request paths use.
const Size = 128 << 10

// frame is what Grow puts on the stack: half of Size, so that a goroutine
// with a small stack grows to Size in one step (stacks double).
const frame = Size/2 - 512

// sink keeps the frame from being optimised away. It is atomic because
// goroutines call Grow at once: a plain byte was a data race (harmless,
// but go test -race reported it).
var sink atomic.Uint32

// Grow makes sure the calling goroutine's stack has room for a frame of
// about Size/2 below the caller, growing it in one step if it has not.
// A goroutine whose stack is already large enough pays only for zeroing
// the frame (≈ 16 KB).
//
//go:noinline
func Grow() {
	var buf [frame]byte
	i := int(sink.Load() % frame)
	buf[i] = 1
	sink.Store(uint32(buf[(i+1)%frame]))
}
