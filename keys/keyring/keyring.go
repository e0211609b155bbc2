// Package keyring opens the keyring a chunklock server is configured with,
// from one URL setting:
//
//	""  or "age"      the age keyring (the default; no service needed)
//	vault://host:port?mount=transit&prefix=chunklock-&tls=true
//	vault://          Vault at $VAULT_ADDR
//
// Vault query parameters, all optional:
//
//	mount        transit mount path (default "transit")
//	prefix       prefix of every chunklock name in Vault (default "chunklock-")
//	tls          true (https, the default) or false (http); with vault:// and
//	             no host the scheme comes from VAULT_ADDR
//	ca           CA certificate file (default $VAULT_CACERT)
//	server_name  TLS server name (default $VAULT_TLS_SERVER_NAME)
//	namespace    Vault Enterprise namespace (default $VAULT_NAMESPACE)
//	timeout      bound on each operation, retries included (default 10s)
//	retries      retries after a connection failure or 5xx/429 (default 2)
//
// The server's Vault token always comes from VAULT_TOKEN, never from the URL
// (URLs end up in logs and process lists). Its policy is
// vault.ServerPolicy(prefix, mount); see package keys/vault for Setup.
//
// The selector lives apart from package keys because keys/age and
// keys/vault import keys.
package keyring

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/vault/api"

	"github.com/chunklock/chunklock/keys"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/keys/vault"
)

// Option changes how Open reads its environment.
type Option func(*options)

type options struct {
	getenv func(string) string
}

// WithGetenv makes Open read environment variables through getenv (tests).
func WithGetenv(getenv func(string) string) Option {
	return func(o *options) { o.getenv = getenv }
}

// Open returns the keyring rawURL names. It does not contact any service:
// a Vault keyring reports an unreachable Vault on first use (UNAVAILABLE).
func Open(rawURL string, opts ...Option) (keys.Keyring, error) {
	o := options{getenv: os.Getenv}
	for _, opt := range opts {
		opt(&o)
	}
	switch s := strings.TrimSpace(rawURL); s {
	case "", "age", "age:", "age://":
		return age.New(), nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("keyring: %q is not a URL; want \"\", \"age\" or vault://host:port?mount=...&prefix=...", redact(rawURL))
	}
	switch u.Scheme {
	case "vault":
		return openVault(u, o)
	case "age":
		return nil, fmt.Errorf("keyring: the age keyring takes no parameters; use \"age\" or \"\"")
	default:
		return nil, fmt.Errorf("keyring: unknown keyring %q; want \"\", \"age\" or vault://host:port", u.Scheme)
	}
}

// redact drops a URL's credentials before it is quoted in an error.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		u.User = url.User("REDACTED")
		return u.String()
	}
	if i := strings.Index(raw, "@"); i >= 0 {
		return "REDACTED" + raw[i:]
	}
	return raw
}

func openVault(u *url.URL, o options) (keys.Keyring, error) {
	if u.User != nil {
		return nil, fmt.Errorf("keyring: the vault URL must not carry credentials; put the server's token in VAULT_TOKEN")
	}
	if u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return nil, fmt.Errorf("keyring: vault URL %q has a path or fragment; want vault://host:port?mount=...&prefix=...", u.Redacted())
	}
	cfg := vault.DefaultConfig()
	q := u.Query()
	for name, vals := range q {
		switch name {
		case "mount", "prefix", "tls", "ca", "server_name", "namespace", "timeout", "retries":
		default:
			return nil, fmt.Errorf("keyring: unknown vault URL parameter %q; known: mount, prefix, tls, ca, server_name, namespace, timeout, retries", name)
		}
		if len(vals) != 1 {
			return nil, fmt.Errorf("keyring: vault URL parameter %q is given %d times", name, len(vals))
		}
	}
	param := func(name, env string) string {
		if q.Has(name) {
			return q.Get(name)
		}
		if env != "" {
			return o.getenv(env)
		}
		return ""
	}

	var useTLS *bool
	if q.Has("tls") {
		b, err := strconv.ParseBool(q.Get("tls"))
		if err != nil {
			return nil, fmt.Errorf("keyring: vault URL parameter tls=%q: want true or false", q.Get("tls"))
		}
		useTLS = &b
	}
	if u.Host != "" {
		scheme := "https"
		if useTLS != nil && !*useTLS {
			scheme = "http"
		}
		cfg.Address = scheme + "://" + u.Host
	} else {
		cfg.Address = o.getenv("VAULT_ADDR")
		if cfg.Address == "" {
			return nil, fmt.Errorf("keyring: vault:// names no host and VAULT_ADDR is unset; give vault://host:port or set VAULT_ADDR")
		}
		if a, err := url.Parse(cfg.Address); err == nil && useTLS != nil && (a.Scheme == "https") != *useTLS {
			return nil, fmt.Errorf("keyring: tls=%t contradicts VAULT_ADDR's scheme %q", *useTLS, a.Scheme)
		}
	}
	cfg.Token = o.getenv("VAULT_TOKEN")
	if q.Has("mount") {
		cfg.Mount = q.Get("mount")
	}
	if q.Has("prefix") {
		cfg.Prefix = q.Get("prefix")
	}
	cfg.Namespace = param("namespace", "VAULT_NAMESPACE")
	if ca, name := param("ca", "VAULT_CACERT"), param("server_name", "VAULT_TLS_SERVER_NAME"); ca != "" || name != "" {
		cfg.TLS = &api.TLSConfig{CACert: ca, TLSServerName: name}
	}
	if q.Has("timeout") {
		d, err := time.ParseDuration(q.Get("timeout"))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("keyring: vault URL parameter timeout=%q: want a positive duration such as 10s", q.Get("timeout"))
		}
		cfg.Timeout = d
	}
	if q.Has("retries") {
		n, err := strconv.Atoi(q.Get("retries"))
		if err != nil || n < 0 || n > 10 {
			return nil, fmt.Errorf("keyring: vault URL parameter retries=%q: want 0 to 10", q.Get("retries"))
		}
		cfg.Retries = n
	}
	k, err := vault.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	return k, nil
}
