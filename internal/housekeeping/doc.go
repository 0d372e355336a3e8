// Package housekeeping holds tests of the source tree itself rather than
// of any one package: rules about the code's shape that review would
// otherwise have to catch by eye. It has no code of its own to import.
package housekeeping
