// Package open turns a store URL into a backends.Store: the one place that
// knows which storage backends exist and how each is named, and that makes
// the engine (backends/engine) on the backend a URL names.
//
// Forms of the store URL:
//
//	""                                   embedded etcd: a single-member etcd
//	                                     running inside this process, data in
//	                                     Options.DataDir (default ./chunklock-data),
//	                                     clients on the socket <DataDir>/etcd.sock,
//	                                     peers on a free port of 127.0.0.1
//	                                     (Options.Embedded sets addresses)
//	postgres://user:pass@host:5432/db?sslmode=require[&schema=name]
//	postgresql://...                     PostgreSQL; any libpq/pgx URL. schema (taken
//	                                     out before connecting) puts the tables in
//	                                     that schema, so several stores share a database
//	etcd://[user[:password]@]host:port[,host:port...][/prefix][?options]
//	etcds://...                          an external etcd cluster; etcds uses TLS with
//	                                     the system's roots. The path is the key prefix
//	                                     (default /chunklock/), so several installations
//	                                     can share a cluster. Options:
//	                                       cacert=FILE   CA bundle to verify the servers (implies TLS)
//	                                       cert=FILE, key=FILE   client certificate (implies TLS)
//	                                       insecure_skip_verify=true   do not verify servers (tests only)
//	                                       dial_timeout=5s, request_timeout=10s
//	                                       max_txn_ops=128   the cluster's --max-txn-ops
//	                                       max_request_bytes=1572864   the cluster's --max-request-bytes
//
// User names and passwords in URLs are percent-decoded. A host name of the
// URL that does not exist is a configuration error (INVALID_ARGUMENT),
// reported at once; a server that does not answer is UNAVAILABLE, with the
// address tried in the message.
package open

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/backends/etcd"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/postgres"
	"github.com/chunklock/chunklock/internal/urlerr"
)

// DefaultDataDir is where the embedded store keeps its data by default.
const DefaultDataDir = "./chunklock-data"

// Options complete a store URL.
type Options struct {
	// DataDir is the embedded store's data directory (default ./chunklock-data).
	DataDir string
	// Embedded tunes the embedded member (addresses, logging); its Dir is
	// DataDir.
	Embedded embedded.Config
	// Clock tells the time to the engine (default: the backend's clock,
	// Backend.Clock).
	Clock backends.Clock
	// EnvAllow lists the job env names the engine admits beyond the rule
	// on env names (`chunklock serve --env-allow`; engine.WithEnvAllow).
	EnvAllow envname.Allow
	// PostgresSchema is the schema used when the URL has no schema parameter.
	PostgresSchema string
	// PostgresMaxConns bounds PostgreSQL's connection pool (0: its default).
	PostgresMaxConns int32
}

type opener func(ctx context.Context, storeURL string, opts Options) (backends.Store, error)

// store builds the Store on b with the engine's options of opts.
func store(b backends.Backend, opts Options) *closers {
	return &closers{Store: engine.New(b, engine.WithClock(opts.Clock), engine.WithEnvAllow(opts.EnvAllow)), backend: b}
}

// openers maps a URL scheme to the backend that serves it.
var openers = map[string]opener{
	"":           openEmbedded,
	"postgres":   openPostgres,
	"postgresql": openPostgres,
	"etcd":       openEtcd,
	"etcds":      openEtcd,
}

// Schemes lists the URL schemes Open knows, for help texts.
func Schemes() []string {
	var out []string
	for s := range openers {
		if s != "" {
			out = append(out, s+"://")
		}
	}
	sort.Strings(out)
	return out
}

// Open returns the store a URL names (see the package documentation).
// Closing the store also stops an embedded server.
func Open(ctx context.Context, storeURL string, opts Options) (backends.Store, error) {
	scheme := ""
	if storeURL != "" {
		i := strings.Index(storeURL, "://")
		if i <= 0 {
			return nil, backends.InvalidArgument("store URL %q has no scheme: use one of %s, or nothing for the embedded store", redact(storeURL), strings.Join(Schemes(), ", "))
		}
		scheme = strings.ToLower(storeURL[:i])
	}
	o, ok := openers[scheme]
	if !ok {
		return nil, backends.InvalidArgument("store URL scheme %q is unknown: use one of %s, or nothing for the embedded store", scheme, strings.Join(Schemes(), ", "))
	}
	return o(ctx, storeURL, opts)
}

// redact hides a password in a URL for messages.
func redact(s string) string {
	at := strings.LastIndex(s, "@")
	i := strings.Index(s, "://")
	if at < 0 || i < 0 || at < i {
		return s
	}
	user := s[i+3 : at]
	if c := strings.Index(user, ":"); c >= 0 {
		return s[:i+3] + user[:c] + ":xxxxx" + s[at:]
	}
	return s
}

// ---- embedded ----

// closers wraps a store so that Close also releases what it runs on, and
// remembers the backend under it.
type closers struct {
	backends.Store
	backend backends.Backend
	after   []io.Closer
}

// Backend returns the storage backend a store of Open runs on (for
// backends.Dumper: chunklock store copy).
func Backend(s backends.Store) backends.Backend {
	if c, ok := s.(*closers); ok {
		return c.backend
	}
	return nil
}

func (c *closers) Close() error {
	errs := []error{c.Store.Close()}
	for _, a := range c.after {
		errs = append(errs, a.Close())
	}
	return errors.Join(errs...)
}

func openEmbedded(ctx context.Context, _ string, opts Options) (backends.Store, error) {
	cfg := opts.Embedded
	cfg.Dir = opts.DataDir
	if cfg.Dir == "" {
		cfg.Dir = DefaultDataDir
	}
	srv, err := embedded.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cli, err := srv.Client()
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("embedded etcd: cannot connect to it: %w", err)
	}
	b, err := etcd.OpenClient(ctx, cli, etcd.Config{MaxTxnOps: srv.MaxTxnOps()})
	if err != nil {
		cli.Close()
		srv.Close()
		return nil, err
	}
	st := store(b, opts)
	st.after = []io.Closer{cli, srv}
	return st, nil
}

// Embedded returns the embedded etcd member a store of Open runs on; nil
// for the other stores.
func Embedded(s backends.Store) *embedded.Server {
	if c, ok := s.(*closers); ok {
		for _, a := range c.after {
			if srv, ok := a.(*embedded.Server); ok {
				return srv
			}
		}
	}
	return nil
}

// ---- host names ----

// lookupTimeout bounds the look-up of a store URL's host name.
const lookupTimeout = 10 * time.Second

// checkHosts fails, as a configuration error, when a host name of the store
// URL does not exist: a retry cannot cure that, while a backend would
// report it as UNAVAILABLE and keep trying. Other look-up failures (no
// name server answers) are left to the backend.
func checkHosts(ctx context.Context, what string, hosts []string) error {
	for _, h := range hosts {
		if h == "" || h == "localhost" || strings.HasPrefix(h, "/") || net.ParseIP(h) != nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		_, err := net.DefaultResolver.LookupHost(lctx, h)
		cancel()
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return backends.InvalidArgument("%s host %q does not exist (%s): check the host name in the store URL", what, h, dnsErr.Err)
		}
	}
	return nil
}

// ---- postgres ----

// ParsePostgresURL takes the schema parameter out of a PostgreSQL URL.
func ParsePostgresURL(storeURL string) (dsn, schema string, err error) {
	u, err := url.Parse(storeURL)
	if err != nil {
		return "", "", backends.InvalidArgument("PostgreSQL URL is malformed: %v", urlerr.Cause(err))
	}
	q := u.Query()
	schema = q.Get("schema")
	if q.Has("schema") {
		q.Del("schema")
		u.RawQuery = q.Encode()
	}
	return u.String(), schema, nil
}

func openPostgres(ctx context.Context, storeURL string, opts Options) (backends.Store, error) {
	dsn, schema, err := ParsePostgresURL(storeURL)
	if err != nil {
		return nil, err
	}
	if schema == "" {
		schema = opts.PostgresSchema
	}
	if err := checkHosts(ctx, "PostgreSQL", postgresHosts(dsn)); err != nil {
		return nil, err
	}
	b, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Schema: schema, MaxConns: opts.PostgresMaxConns})
	if err != nil {
		return nil, err
	}
	return store(b, opts), nil
}

// postgresHosts lists the hosts a PostgreSQL connection string names (none
// when it does not parse: postgres.Open says what is wrong).
func postgresHosts(dsn string) []string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil
	}
	hosts := []string{cfg.Host}
	for _, f := range cfg.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	return hosts
}

// ---- etcd ----

// ParseEtcdURL reads an etcd:// or etcds:// URL into a configuration,
// loading the TLS files it names.
func ParseEtcdURL(storeURL string) (etcd.Config, error) {
	cfg := etcd.DefaultConfig()
	if err := parseEtcdURL(&cfg, storeURL); err != nil {
		return etcd.Config{}, backends.InvalidArgument("etcd URL %q: %v", redact(storeURL), err)
	}
	return cfg, nil
}

func parseEtcdURL(cfg *etcd.Config, storeURL string) error {
	u, err := cutEtcdURL(storeURL)
	if err != nil {
		return err
	}
	if u.hasUser {
		if err := etcdUser(cfg, u.user); err != nil {
			return err
		}
	}
	q, err := url.ParseQuery(u.query)
	if err != nil {
		return fmt.Errorf("query is malformed: %v", err)
	}
	useTLS, err := etcdOptions(cfg, q, u.scheme == "etcds")
	if err != nil {
		return err
	}
	cfg.Endpoints = nil
	for _, h := range strings.Split(u.hosts, ",") {
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			return fmt.Errorf("endpoint %q is not host:port", h)
		}
		if useTLS {
			cfg.Endpoints = append(cfg.Endpoints, "https://"+h)
		} else {
			cfg.Endpoints = append(cfg.Endpoints, "http://"+h)
		}
	}
	if p := strings.Trim(u.path, "/"); p != "" {
		cfg.Prefix = "/" + p + "/"
	}
	return cfg.Validate()
}

// etcdURL is an etcd URL cut into its parts.
type etcdURL struct {
	scheme, user, hosts, path, query string
	hasUser                          bool
}

func cutEtcdURL(storeURL string) (etcdURL, error) {
	i := strings.Index(storeURL, "://")
	if i < 0 {
		return etcdURL{}, errors.New("want etcd://host:port[,host:port...][/prefix]")
	}
	u := etcdURL{scheme: strings.ToLower(storeURL[:i])}
	rest := storeURL[i+3:]
	if u.scheme != "etcd" && u.scheme != "etcds" {
		return etcdURL{}, errors.New("scheme must be etcd or etcds")
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		rest, u.query = rest[:q], rest[q+1:]
	}
	u.hosts = rest
	if s := strings.IndexByte(rest, '/'); s >= 0 {
		u.hosts, u.path = rest[:s], rest[s:]
	}
	if at := strings.LastIndexByte(u.hosts, '@'); at >= 0 {
		u.user, u.hosts, u.hasUser = u.hosts[:at], u.hosts[at+1:], true
	}
	return u, nil
}

// etcdUser reads the user name and password of an etcd URL.
func etcdUser(cfg *etcd.Config, user string) error {
	name, pass, _ := strings.Cut(user, ":")
	var err error
	if cfg.Username, err = url.PathUnescape(name); err != nil {
		return errors.New("user name is not percent-encoded correctly")
	}
	if cfg.Password, err = url.PathUnescape(pass); err != nil {
		return errors.New("password is not percent-encoded correctly")
	}
	if cfg.Username == "" {
		return errors.New("user name is empty")
	}
	return nil
}

// etcdOptions applies the query options of an etcd URL and tells whether
// the connection uses TLS (useTLS: the URL's scheme asks for it).
func etcdOptions(cfg *etcd.Config, q url.Values, useTLS bool) (bool, error) {
	var tlsCfg tls.Config
	for key, vals := range q {
		v := vals[len(vals)-1]
		switch key {
		case "cacert":
			pem, err := os.ReadFile(v)
			if err != nil {
				return false, fmt.Errorf("cannot read cacert: %v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return false, fmt.Errorf("cacert %s holds no PEM certificate", v)
			}
			tlsCfg.RootCAs, useTLS = pool, true
		case "cert", "key":
			useTLS = true
		case "insecure_skip_verify":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return false, errors.New("insecure_skip_verify must be true or false")
			}
			tlsCfg.InsecureSkipVerify = b
			useTLS = useTLS || b
		case "dial_timeout", "request_timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return false, fmt.Errorf("%s must be a positive duration like 5s", key)
			}
			if key == "dial_timeout" {
				cfg.DialTimeout = d
			} else {
				cfg.RequestTimeout = d
			}
		case "max_txn_ops":
			n, err := strconv.Atoi(v)
			if err != nil {
				return false, errors.New("max_txn_ops must be a number")
			}
			cfg.MaxTxnOps = n
		case "max_request_bytes":
			n, err := strconv.Atoi(v)
			if err != nil {
				return false, errors.New("max_request_bytes must be a number of bytes")
			}
			cfg.MaxRequestBytes = n
		default:
			return false, fmt.Errorf("unknown option %q (known: cacert, cert, key, insecure_skip_verify, dial_timeout, request_timeout, max_txn_ops, max_request_bytes)", key)
		}
	}
	if c, k := q.Get("cert"), q.Get("key"); c != "" || k != "" {
		if c == "" || k == "" {
			return false, errors.New("cert and key go together")
		}
		pair, err := tls.LoadX509KeyPair(c, k)
		if err != nil {
			return false, fmt.Errorf("cannot load client certificate: %v", err)
		}
		tlsCfg.Certificates = []tls.Certificate{pair}
	}
	if useTLS {
		tlsCfg.MinVersion = tls.VersionTLS12
		cfg.TLS = &tlsCfg
	}
	return useTLS, nil
}

func openEtcd(ctx context.Context, storeURL string, opts Options) (backends.Store, error) {
	cfg, err := ParseEtcdURL(storeURL)
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, ep := range cfg.Endpoints {
		if u, err := url.Parse(ep); err == nil {
			hosts = append(hosts, u.Hostname())
		}
	}
	if err := checkHosts(ctx, "etcd", hosts); err != nil {
		return nil, err
	}
	b, err := etcd.Open(ctx, cfg)
	if errors.Is(err, backends.ErrUnavailable) {
		// The address goes in the operator's message, not in the
		// client-safe one of the UNAVAILABLE error.
		return nil, fmt.Errorf("cannot reach etcd at %s (dial_timeout %s, request_timeout %s; the URL's options set them): %w", strings.Join(cfg.Endpoints, ","), cfg.DialTimeout, cfg.RequestTimeout, err)
	}
	if err != nil {
		return nil, err
	}
	return store(b, opts), nil
}
