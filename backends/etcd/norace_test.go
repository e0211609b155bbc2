//go:build !race

package etcd

const raceEnabled = false
