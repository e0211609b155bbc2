package auth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewTokenRoundTrip(t *testing.T) {
	tok, e, err := NewToken("nightly", RoleRunner, []string{"ja", "jb"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tok, TokenPrefix))
	require.NotContains(t, e.SHA256, tok)
	ts, err := ParseTokens([]byte("- name: nightly\n  sha256: " + e.SHA256 + "\n  role: runner\n  jobs: [ja, jb]\n"))
	require.NoError(t, err)
	p, ok := ts.Authenticate(tok)
	require.True(t, ok)
	require.Equal(t, Principal{Name: "nightly", Role: RoleRunner, Jobs: []string{"ja", "jb"}}, p)
	require.True(t, p.CanOperate("jb"))
	require.False(t, p.CanOperate("jc"))
	require.False(t, p.IsAdmin())
	_, ok = ts.Authenticate(tok + "x")
	require.False(t, ok)
	_, ok = ts.Authenticate("")
	require.False(t, ok)

	tok2, _, err := NewToken("nightly", RoleRunner, []string{"ja"})
	require.NoError(t, err)
	require.NotEqual(t, tok, tok2, "tokens are random")
}

func TestParseTokensRefuses(t *testing.T) {
	const h = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
	for name, file := range map[string]string{
		"not a list":       "name: x\n",
		"unknown field":    "- name: x\n  sha256: " + h + "\n  role: admin\n  token: oops\n",
		"no name":          "- sha256: " + h + "\n  role: admin\n",
		"short hash":       "- name: x\n  sha256: abc\n  role: admin\n",
		"bad role":         "- name: x\n  sha256: " + h + "\n  role: root\n",
		"runner, no jobs":  "- name: x\n  sha256: " + h + "\n  role: runner\n",
		"reader with jobs": "- name: x\n  sha256: " + h + "\n  role: reader\n  jobs: [a]\n",
		"bad job id":       "- name: x\n  sha256: " + h + "\n  role: runner\n  jobs: [Bad]\n",
		"duplicate name":   "- name: x\n  sha256: " + h + "\n  role: admin\n- name: x\n  sha256: " + strings.Repeat("0", 64) + "\n  role: admin\n",
		"duplicate hash":   "- name: x\n  sha256: " + h + "\n  role: admin\n- name: y\n  sha256: " + h + "\n  role: reader\n",
	} {
		_, err := ParseTokens([]byte(file))
		require.Error(t, err, name)
	}
	ts, err := ParseTokens(nil)
	require.NoError(t, err)
	require.Equal(t, 0, ts.Len())
	_, _, err = NewToken("", RoleAdmin, nil)
	require.Error(t, err)
}

func TestBearerToken(t *testing.T) {
	for in, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "": "", "Bearer  ": ""} {
		got, ok := BearerToken(in)
		require.Equal(t, want, got, in)
		require.Equal(t, want != "", ok, in)
	}
}
