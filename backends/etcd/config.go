package etcd

import (
	"crypto/tls"
	"errors"
	"strings"
	"time"
)

// DefaultPrefix is the key prefix of a Config that sets none.
const DefaultPrefix = "/chunklock/"

// DefaultMaxRequestBytes is etcd's default --max-request-bytes.
const DefaultMaxRequestBytes = 3 << 19 // 1.5 MiB

const minRequestBytes = 64 << 10

// Config tells Open how to reach etcd.
type Config struct {
	// Endpoints are the cluster's client URLs or host:port pairs.
	Endpoints []string
	// Prefix starts every key chunklock writes (default "/chunklock/"), so
	// several installations can share one cluster. A missing trailing '/' is
	// added.
	Prefix string
	// Username and Password authenticate to a cluster with auth enabled.
	Username, Password string
	// TLS, when set, is used for every connection (https endpoints).
	TLS *tls.Config
	// DialTimeout bounds the first connection (default 5s).
	DialTimeout time.Duration
	// RequestTimeout bounds each etcd request whose context has no earlier
	// deadline (default 10s), so that an unreachable cluster answers
	// UNAVAILABLE instead of hanging.
	RequestTimeout time.Duration
	// ResolveTimeout bounds how long Update keeps trying to learn the
	// outcome of a commit whose answer was lost (default 30s).
	ResolveTimeout time.Duration
	// MaxTxnOps is the cluster's --max-txn-ops (default 128): PutJob's
	// candidate backfill and the event mover keep their transactions under it.
	MaxTxnOps int
	// MaxRequestBytes is the cluster's --max-request-bytes (default 1.5 MiB,
	// etcd's): a job with mappings whose claims would send more in one
	// transaction is refused when it is stored.
	MaxRequestBytes int
}

// DefaultConfig returns the configuration of a local etcd on its standard port.
func DefaultConfig() Config {
	return Config{
		Endpoints:       []string{"127.0.0.1:2379"},
		Prefix:          DefaultPrefix,
		DialTimeout:     5 * time.Second,
		RequestTimeout:  10 * time.Second,
		ResolveTimeout:  30 * time.Second,
		MaxTxnOps:       128,
		MaxRequestBytes: DefaultMaxRequestBytes,
	}
}

// withDefaults fills the zero fields of c from DefaultConfig (not Endpoints).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Prefix == "" {
		c.Prefix = d.Prefix
	}
	if !strings.HasSuffix(c.Prefix, "/") {
		c.Prefix += "/"
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = d.DialTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.ResolveTimeout == 0 {
		c.ResolveTimeout = d.ResolveTimeout
	}
	if c.MaxTxnOps == 0 {
		c.MaxTxnOps = d.MaxTxnOps
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = d.MaxRequestBytes
	}
	return c
}

// Validate reports what is wrong with c, after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("etcd: no endpoints given; list the cluster's client URLs (host:port)"))
	}
	for _, e := range c.Endpoints {
		if strings.TrimSpace(e) == "" {
			errs = append(errs, errors.New("etcd: an endpoint is empty"))
		}
	}
	if strings.ContainsAny(c.Prefix, "\x00\xff") {
		errs = append(errs, errors.New("etcd: key prefix may not contain bytes 0x00 or 0xff"))
	}
	if c.Username == "" && c.Password != "" {
		errs = append(errs, errors.New("etcd: a password is given without a user name"))
	}
	if c.DialTimeout < 0 || c.RequestTimeout < 0 || c.ResolveTimeout < 0 {
		errs = append(errs, errors.New("etcd: timeouts may not be negative"))
	}
	if c.MaxTxnOps < 16 {
		errs = append(errs, errors.New("etcd: MaxTxnOps must be at least 16 (etcd's default is 128)"))
	}
	if c.MaxRequestBytes < minRequestBytes {
		errs = append(errs, errors.New("etcd: MaxRequestBytes must be at least 64 KiB (etcd's default is 1.5 MiB)"))
	}
	return errors.Join(errs...)
}
