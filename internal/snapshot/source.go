package snapshot

import "context"

// Source yields the Snapshots of one input in order: a file of thread
// dumps, a JFR recording, a ctprof recording, a followed log or a live
// process. Every command drains its Sources through the same loop
// (analysis.Aggregator.Drain), so a new kind of input is one more Source.
type Source interface {
	// Next returns the next Snapshot, or io.EOF after the last. Any other
	// error ends the input; the Snapshots returned before it stand. ctx
	// ends a wait for more (a live process, a followed file): Next then
	// returns io.EOF, or a last Snapshot first. A Snapshot's Threads may be
	// reused by the following call: a caller copies what it keeps.
	Next(ctx context.Context) (*Snapshot, error)
	// Warnings are the problems that did not stop the input (skipped
	// lines, a damaged frame), each a sentence naming the input; valid
	// once Next has returned an error.
	Warnings() []string
	// Name names the input in messages ("dump.txt", "standard input",
	// "pid 4242").
	Name() string
	// Close releases what the Source holds open.
	Close() error
}
