// Package e2e tests chunklock end to end with real processes: it builds
// the chunklock binary once, starts `chunklock serve` on the embedded store,
// and drives it with the chunklock command line only (apply, publish, run,
// next, force, ...), checking the outcome through the server's GraphQL API
// and the files the example jobs write.
package e2e
