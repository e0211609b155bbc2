//go:build race

package etcd

// raceEnabled: the race detector slows the in-process etcd server several
// times over, so the contention test works through fewer chunks.
const raceEnabled = true
