// Package jfr reads Java Flight Recorder recordings (.jfr files) event by
// event. It depends on the standard library only.
//
// # What it reads
//
// The JFR binary format 2.x, written by HotSpot JDK 11 and later (and 8u262
// and later), by async-profiler, and by `jfr assemble`/`jfr disassemble`. A
// recording is a sequence of chunks, each self-contained:
//
//   - a 68-byte header: magic "FLR\0", version, chunk size, offsets of the
//     last checkpoint and of the metadata event, start time in nanoseconds
//     since the epoch and in ticks, ticks per second, and a state byte that
//     is non-zero while the JVM is still writing the chunk;
//   - events, each framed by its size and type id as compressed integers
//     (7 bits per byte, least significant first, 9 bytes at most);
//   - the metadata event (type 0): a string table and an element tree
//     declaring every class, its fields (with their types, constant pool and
//     array flags) and annotations; the Timespan and Timestamp annotations
//     give the units of time fields;
//   - checkpoint events (type 1) holding constant pools: threads, classes,
//     methods, stack traces, symbols and the like, referred to by key from
//     events and from other pools.
//
// Strings are encoded as null, empty, a key into the string pool, UTF-8,
// UTF-16 code units or Latin-1. Integers and longs use the compressed form,
// floats and doubles 4 and 8 big-endian bytes.
//
// # How it reads
//
// A Reader takes one chunk into memory at a time (the JVM's default chunk
// size is 12 MB), frames all its events once to find the checkpoints and the
// extent of intact data, parses the metadata, indexes the constant pools
// (keys to offsets), and then returns the selected events in file order.
// Constants are decoded when first used and cached per chunk, so pools may
// refer to each other in any order. Event types not selected by
// Options.EventTypes are skipped by their size without decoding. A
// reference to a constant that the JVM wrote into the previous chunk (it
// happens around a chunk rotation) is looked up there, one chunk back.
//
// Parsed metadata is shared across chunks and Readers when the bytes are
// identical, since a JVM repeats the same description (about 100 KB) in
// every chunk.
//
// Times: Event.Start converts ticks with the chunk's own header (start
// nanos, start ticks, ticks per second). The JDK's own parser keeps the
// first chunk's calibration for later chunks that share its metadata, so
// the two can differ by some hundred nanoseconds in later chunks.
//
// # Limits and damaged input
//
// Input is not trusted. A chunk larger than Options.MaxChunkSize (default
// 512 MB) is refused before it is read; buffers grow only as data arrives,
// so a forged size costs no more than the input. Strings are limited to
// 16 MB, counts to what the remaining bytes could hold, nesting to fixed
// depths, and types that contain themselves inline are rejected. Damage
// ends the stream with a *FormatError naming the absolute offset, after
// every event that could be read before it; input that does not start with
// a chunk header gives an error wrapping ErrNotJFR.
//
// Not supported: the 1.x format of JDK 7 and 8 before 8u262, chunks with
// the "compressed ticks" flag, and reading a chunk the JVM is still writing
// beyond its last flush (an unfinished chunk is read up to the size in its
// header and ends the stream; ChunkInfo.Unfinished says so).
//
// Lock events: MonitorEnter (jdk.JavaMonitorEnter), MonitorWait
// (jdk.JavaMonitorWait), ThreadPark (jdk.ThreadPark) give typed access to
// their fields; jdk.VirtualThreadPinned needs only the common fields
// (Start, Duration, Thread, Stack). ThreadDumpText, GarbageCollection,
// CPULoad and ExecutionSample cover the other events ctprof uses; every
// field of every event is reachable through Event.Value and the typed
// accessors.
package jfr
