package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/chunklock/chunklock/backends"
)

// TokenPrefix starts every token `chunklock token new` makes, so that secret
// scanners and people can recognise one.
const TokenPrefix = "clk_"

// Entry is one token in a tokens file. The token itself is never stored:
// only the hex SHA-256 of it.
//
//   - name: nightly-runner
//     sha256: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8
//     role: runner
//     jobs: [daily-sales, daily-stock]
type Entry struct {
	Name   string   `yaml:"name"`
	SHA256 string   `yaml:"sha256"`
	Role   Role     `yaml:"role"`
	Jobs   []string `yaml:"jobs,omitempty"`
}

// Tokens is the set of tokens a server accepts. The zero value accepts none.
type Tokens struct {
	byHash map[[sha256.Size]byte]Principal
}

// Len returns how many tokens there are.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.byHash)
}

// Authenticate returns the principal of token; ok is false for an unknown
// token.
func (t *Tokens) Authenticate(token string) (p Principal, ok bool) {
	if t == nil || token == "" {
		return Principal{}, false
	}
	p, ok = t.byHash[sha256.Sum256([]byte(token))]
	return p, ok
}

// LoadTokens reads a tokens file: a YAML list of entries.
func LoadTokens(path string) (*Tokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: tokens file: %w", err)
	}
	t, err := parseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("auth: tokens file %s: %w", path, err)
	}
	return t, nil
}

// ParseTokens parses and validates the content of a tokens file: a YAML list
// of entries with unique names and hashes, a known role, and jobs for (and
// only for) runners.
func ParseTokens(data []byte) (*Tokens, error) {
	t, err := parseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return t, nil
}

func parseTokens(data []byte) (*Tokens, error) {
	var entries []Entry
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&entries); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("want a YAML list of {name, sha256, role, jobs}: %w", err)
	}
	t := &Tokens{byHash: make(map[[sha256.Size]byte]Principal, len(entries))}
	names := map[string]bool{}
	for i, e := range entries {
		where := fmt.Sprintf("entry %d (%q)", i+1, e.Name)
		if e.Name == "" {
			return nil, fmt.Errorf("entry %d has no name; every token needs one (it is recorded as the actor of its changes)", i+1)
		}
		if names[e.Name] {
			return nil, fmt.Errorf("%s: the name is used twice; names must be unique", where)
		}
		names[e.Name] = true
		raw, err := hex.DecodeString(e.SHA256)
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("%s: sha256 must be the 64 hex digits of the token's SHA-256 (from `chunklock token new`)", where)
		}
		var h [sha256.Size]byte
		copy(h[:], raw)
		if _, dup := t.byHash[h]; dup {
			return nil, fmt.Errorf("%s: the same token hash appears twice", where)
		}
		switch {
		case !e.Role.valid():
			return nil, fmt.Errorf("%s: role %q is not admin, runner or reader", where, e.Role)
		case e.Role == RoleRunner && len(e.Jobs) == 0:
			return nil, fmt.Errorf("%s: a runner token needs the jobs it may operate (jobs: [...])", where)
		case e.Role != RoleRunner && len(e.Jobs) > 0:
			return nil, fmt.Errorf("%s: only runner tokens list jobs; a %s token may not", where, e.Role)
		}
		for _, j := range e.Jobs {
			if err := backends.ValidateID("job", j); err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
		}
		t.byHash[h] = Principal{Name: e.Name, Role: e.Role, Jobs: e.Jobs}
	}
	return t, nil
}

// NewToken makes a fresh random token and the tokens-file entry that
// accepts it. Print the token once; store only the entry.
func NewToken(name string, role Role, jobs []string) (token string, entry Entry, err error) {
	entry = Entry{Name: name, Role: role, Jobs: jobs}
	var buf [32]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return "", Entry{}, fmt.Errorf("auth: no randomness for a token: %w", err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(buf[:])
	entry.SHA256 = HashToken(token)
	// Refuse an entry the server would refuse in its tokens file.
	out, err := yaml.Marshal([]Entry{entry})
	if err != nil {
		return "", Entry{}, fmt.Errorf("auth: encoding the entry: %w", err)
	}
	if _, err := ParseTokens(out); err != nil {
		return "", Entry{}, err
	}
	return token, entry, nil
}

// HashToken returns the hex SHA-256 of a token, as stored in a tokens file.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// BearerToken extracts the token of an `Authorization: Bearer <token>`
// value; ok is false when the value has another form.
func BearerToken(authorization string) (token string, ok bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(authorization), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
