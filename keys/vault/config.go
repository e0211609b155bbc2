package vault

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/vault/api"
)

// Config configures a Vault keyring. Start from DefaultConfig: a zero
// Config does not validate.
type Config struct {
	// Address of the Vault server: https://vault.example:8200.
	Address string
	// Token is the chunklock server's Vault token, whose policy is
	// ServerPolicy(Prefix, Mount). It never decrypts. Required.
	Token string
	// Namespace is the Vault Enterprise namespace, if any.
	Namespace string
	// Mount is the path of the transit secrets engine.
	Mount string
	// Prefix starts every name chunklock uses in Vault: transit keys
	// (<prefix><job>), entity aliases, the job token role and policies
	// (<prefix>job, <prefix>server).
	Prefix string
	// TLS configures server verification and client certificates. It is
	// ignored when HTTPClient is set.
	TLS *api.TLSConfig
	// Timeout bounds every operation, retries included.
	Timeout time.Duration
	// Retries is how many times a request is retried after a connection
	// failure or a 5xx/429 answer (0: never).
	Retries int
	// RetryWaitMin and RetryWaitMax bound the wait between retries.
	RetryWaitMin, RetryWaitMax time.Duration
	// HTTPClient, if set, is used instead of a client built from TLS. It
	// must not follow redirects itself.
	HTTPClient *http.Client
}

// Defaults.
const (
	DefaultMount   = "transit"
	DefaultPrefix  = "chunklock-"
	DefaultTimeout = 10 * time.Second
	DefaultRetries = 2
)

// DefaultConfig returns a Config with the default mount, prefix, timeout and
// retries. It reads no environment variable: keys/keyring does that.
func DefaultConfig() Config {
	return Config{
		Mount:        DefaultMount,
		Prefix:       DefaultPrefix,
		Timeout:      DefaultTimeout,
		Retries:      DefaultRetries,
		RetryWaitMin: 250 * time.Millisecond,
		RetryWaitMax: time.Second,
	}
}

var (
	mountPattern  = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	prefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
)

// Validate checks c and says what to fix.
func (c Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.Address)
	switch {
	case c.Address == "":
		errs = append(errs, errors.New("vault: no server address; set Address (or VAULT_ADDR)"))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("vault: address %q is not an http(s)://host:port URL", c.Address))
	case u.User != nil:
		errs = append(errs, errors.New("vault: the address must not carry credentials; give the token in Token (or VAULT_TOKEN)"))
	}
	if c.Token == "" {
		errs = append(errs, errors.New("vault: no server token; set Token (or VAULT_TOKEN) to a token with the policy vault.ServerPolicy prints"))
	} else if strings.ContainsFunc(c.Token, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		errs = append(errs, errors.New("vault: the server token contains whitespace or non-printable characters"))
	}
	if !mountPattern.MatchString(c.Mount) {
		errs = append(errs, fmt.Errorf("vault: mount %q is not a Vault mount path (letters, digits, _ . - and inner slashes)", c.Mount))
	}
	if !prefixPattern.MatchString(c.Prefix) {
		errs = append(errs, fmt.Errorf("vault: prefix %q is invalid: want 1-64 characters of a-z 0-9 _ . -, starting with a letter or digit", c.Prefix))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("vault: Timeout must be positive; start from vault.DefaultConfig()"))
	}
	if c.Retries < 0 {
		errs = append(errs, errors.New("vault: Retries must not be negative"))
	}
	if c.Retries > 0 && (c.RetryWaitMin <= 0 || c.RetryWaitMax < c.RetryWaitMin) {
		errs = append(errs, errors.New("vault: retries need 0 < RetryWaitMin <= RetryWaitMax; start from vault.DefaultConfig()"))
	}
	return errors.Join(errs...)
}
