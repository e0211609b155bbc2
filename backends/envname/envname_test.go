package envname

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkAllowed are names Check admits.
var checkAllowed = []string{
	"BATCH_SIZE", "A", "_", "_X", "X1", "A_1_B", "TZ", "LANG", "LC_ALL", "TMPDIR",
	"LOCALDOMAIN", "HOSTALIASES",
	// The examples', the README's and the tests' application names.
	"MODE", "SHOP_DIR", "CURRENCY", "GREETING", "WAREHOUSE_SCHEMA", "PATHWAY",
	// Plain application names of the kind pipelines use.
	"REGION", "AWS_REGION", "AWS_PROFILE", "S3_BUCKET", "LOG_LEVEL", "DB_HOST", "DB_PORT", "OUTPUT_FORMAT",
	"TARGET_TABLE", "THREADS", "DATA_DIR", "SRC", "WEBHOOK_URL", "SLACK_WEBHOOK", "GEMINI_API_KEY",
	"GOOGLE_APPLICATION_CREDENTIALS",
	// Near the refused names without being one of them.
	"PATHS", "ENVIRONMENT", "GIT", "CHUNKLOCK", "HOMEDIR", "PERL", "NODE_ENV", "OPTION", "CONFIRM", "SSHD_PORT",
}

// checkRefused are names Check refuses, each with part of the reason.
var checkRefused = map[string]string{
	"":                        "empty",
	"lower":                   "upper-case letters",
	"Mixed_Case":              "upper-case letters",
	"ld_preload":              "upper-case letters",
	"1ABC":                    "does not start with a digit",
	"9":                       "does not start with a digit",
	"A-B":                     "upper-case letters",
	"A=B":                     "upper-case letters",
	"A B":                     "upper-case letters",
	"É":                       "upper-case letters",
	"PATH":                    "find programs",
	"BASH_ENV":                "shells run code",
	"ENV":                     "shells run code",
	"IFS":                     "shells run code",
	"SHELLOPTS":               "command-line options",
	"PS4":                     "shells run code",
	"PROMPT_COMMAND":          "command it names",
	"LD_PRELOAD":              "load code",
	"LD_LIBRARY_PATH":         "load code",
	"LD_AUDIT":                "load code",
	"DYLD_INSERT_LIBRARIES":   "load code",
	"GCONV_PATH":              "load code",
	"OPENSSL_CONF":            "load code",
	"OPENSSL_ENGINES":         "load code",
	"PYTHONPATH":              "interpreter",
	"PYTHONSTARTUP":           "interpreter",
	"PYTHONUNBUFFERED":        "interpreter",
	"PYSPARK_PYTHON":          "interpreter",
	"PERL5LIB":                "interpreter",
	"PERL5OPT":                "interpreter",
	"NODE_OPTIONS":            "command-line options",
	"RUBYOPT":                 "command-line options",
	"JAVA_TOOL_OPTIONS":       "command-line options",
	"_JAVA_OPTIONS":           "command-line options",
	"LUA_INIT":                "interpreter",
	"GIT_SSH_COMMAND":         "git runs",
	"GIT_CONFIG_COUNT":        "git runs",
	"GIT_AUTHOR_NAME":         "git runs",
	"JAVA_OPTS":               "command-line options",
	"MAVEN_OPTS":              "command-line options",
	"DOTNET_STARTUP_HOOKS":    "interpreter",
	"CORECLR_PROFILER_PATH":   "interpreter",
	"ERL_AFLAGS":              "command-line options",
	"JULIA_LOAD_PATH":         "interpreter",
	"TCLLIBPATH":              "load code",
	"GOFLAGS":                 "command-line options",
	"CC":                      "build tools",
	"LD":                      "build tools",
	"MAKEFILES":               "build tools",
	"NPM_CONFIG_SCRIPT_SHELL": "command it names",
	"BROWSER":                 "command it names",
	"EDITOR":                  "command it names",
	"SHELL":                   "command it names",
	"HOME":                    "load code",
	"CHUNKLOCK_TOKEN":         "runner's own",
	"CHUNKLOCK_URL":           "runner's own",
	"CHUNKLOCK_DATAID":        "runner's own",

	// The names that passed before families were refused, and their kin.
	"TAR_OPTIONS":                  "command-line options",
	"RSYNC_RSH":                    "command it names",
	"CVS_RSH":                      "command it names",
	"HTTPS_PROXY":                  "traffic",
	"ALL_PROXY":                    "traffic",
	"GOPROXY":                      "traffic",
	"SSLKEYLOGFILE":                "TLS connections",
	"PIP_INDEX_URL":                "download code",
	"UV_INDEX_URL":                 "download code",
	"EXTRA_INDEX_URL":              "traffic",
	"RUSTC_WRAPPER":                "command it names",
	"MANPAGER":                     "command it names",
	"GIT_PAGER":                    "git runs",
	"SYSTEMD_PAGER":                "command it names",
	"PSQL_EDITOR":                  "command it names",
	"SSH_AUTH_SOCK":                "ssh",
	"LDFLAGS":                      "command-line options",
	"RUSTFLAGS":                    "command-line options",
	"MAKEFLAGS":                    "command-line options",
	"PYTEST_ADDOPTS":               "command-line options",
	"ZIPOPT":                       "command-line options",
	"TF_CLI_ARGS":                  "command-line options",
	"RES_OPTIONS":                  "command-line options",
	"MY_PATH":                      "load code",
	"CLASSPATH":                    "load code",
	"LIBRARY_PATH":                 "load code",
	"PKG_CONFIG_PATH":              "load code",
	"PERLLIB":                      "load code",
	"R_LIBS":                       "interpreter",
	"JAVA_HOME":                    "load code",
	"GNUPGHOME":                    "load code",
	"XDG_CONFIG_HOME":              "load code",
	"CARGO_HOME":                   "load code",
	"GOROOT":                       "load code",
	"GOBIN":                        "load code",
	"GOCACHE":                      "load code",
	"KUBECONFIG":                   "load code",
	"DOCKER_CONFIG":                "load code",
	"AWS_CONFIG_FILE":              "load code",
	"SPARK_CONF_DIR":               "load code",
	"MALLOC_CONF":                  "load code",
	"PSQLRC":                       "load code",
	"WGETRC":                       "load code",
	"PHPRC":                        "load code",
	"VIMINIT":                      "load code",
	"GTK_MODULES":                  "load code",
	"PYTEST_PLUGINS":               "load code",
	"PHP_INI_SCAN_DIR":             "load code",
	"ODBCINI":                      "load code",
	"SSL_CERT_FILE":                "TLS",
	"REQUESTS_CA_BUNDLE":           "TLS",
	"NODE_EXTRA_CA_CERTS":          "TLS",
	"NODE_TLS_REJECT_UNAUTHORIZED": "TLS",
	"GIT_SSL_NO_VERIFY":            "git runs",
	"CURL_SSL_NO_VERIFY":           "TLS",
	"GOINSECURE":                   "TLS",
	"GOENV":                        "build tools",
	"GOTOOLCHAIN":                  "build tools",
	"CONFIG_SHELL":                 "command it names",
	"CMAKE_C_COMPILER_LAUNCHER":    "command it names",
	"CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER": "command it names",
	"CARGO_BUILD_JOBS":                          "settings",
	"PIP_TRUSTED_HOST":                          "settings",
	"POETRY_REPOSITORIES_X_URL":                 "settings",
	"BUILD_LINKER":                              "command it names",
	"GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "command it names",
	"LESSOPEN":                                  "command it names",
	"GLIBC_TUNABLES":                            "load code",
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, name := range checkAllowed {
		require.NoError(t, Check(name), name)
	}
	for name, why := range checkRefused {
		err := Check(name)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), why, name)
		if name != "" {
			require.Contains(t, err.Error(), `env name "`, name)
			require.Contains(t, err.Error(), " is not allowed: ", name)
		}
	}
	require.EqualError(t, Check("LD_PRELOAD"), `env name "LD_PRELOAD" is not allowed: it changes how processes load code (names starting with LD_)`)
	require.EqualError(t, Check("TAR_OPTIONS"), `env name "TAR_OPTIONS" is not allowed: tools read command-line options from it, which can make them run commands (names with a word ending in OPTIONS); if it is safe where your jobs run, an operator can allow it with --env-allow TAR_OPTIONS on the server and on the runners`)
	require.EqualError(t, Check("PATH"), `env name "PATH" is not allowed: shells run code or find programs through it`)
}

// TestAllow: an operator's allowlist admits names the rule refuses by
// default, never a name that is not a variable name nor one of the
// runner's own.
func TestAllow(t *testing.T) {
	t.Parallel()
	a, err := ParseAllow([]string{"TAR_OPTIONS", " HTTPS_PROXY ", "", "TAR_OPTIONS", "MODE"})
	require.NoError(t, err)
	require.Equal(t, []string{"HTTPS_PROXY", "MODE", "TAR_OPTIONS"}, a.Names())
	for _, name := range []string{"TAR_OPTIONS", "HTTPS_PROXY", "MODE", "CURRENCY"} {
		require.NoError(t, a.Check(name), name)
	}
	require.ErrorContains(t, a.Check("ALL_PROXY"), `env name "ALL_PROXY" is not allowed`, "only the names listed")
	require.ErrorContains(t, a.Check("LD_PRELOAD"), `env name "LD_PRELOAD" is not allowed`)

	var none Allow
	require.Empty(t, none.Names())
	require.ErrorContains(t, none.Check("TAR_OPTIONS"), "TAR_OPTIONS")

	for list, want := range map[string]string{
		"CHUNKLOCK_URL": `--env-allow "CHUNKLOCK_URL": CHUNKLOCK_* names are the runner's own variables and cannot be allowed`,
		"tar_options":   `--env-allow "tar_options": not a variable name: a name is upper-case letters, digits and _, and does not start with a digit`,
		"A=B":           `--env-allow "A=B": not a variable name`,
	} {
		_, err := ParseAllow([]string{"MODE", list})
		require.ErrorContains(t, err, want, list)
	}
}

// FuzzCheck: whatever the name, Check answers without panicking, an
// *Error naming it when it refuses; a name the rule admits has the shape
// of a variable name; every family refuses whatever is put before its
// word (X_TAR_OPTIONS as TAR_OPTIONS); an allowlist admits exactly the
// names listed on top of the rule's, and takes every well-formed name but
// CHUNKLOCK_*. `go test` runs the seeds; run it longer with
// `go test ./backends/envname -run '^$' -fuzz FuzzCheck -fuzztime 30s`.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{"MODE", "SHOP_DIR", "TAR_OPTIONS", "HTTPS_PROXY", "SSLKEYLOGFILE", "PIP_INDEX_URL",
		"CHUNKLOCK_URL", "LD_PRELOAD", "PATH", "SRC", "PHPRC", "lower", "", "1A", "A=B", "_", "GEMINI_API_KEY", "WEBHOOK_URL"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := Check(name)
		if err != nil {
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, name, e.Name)
		} else {
			require.True(t, name != "" && wellFormed(name), "admitted %q", name)
			require.False(t, strings.HasPrefix(name, "CHUNKLOCK_"))
		}
		if name != "" && wellFormed(name) {
			for _, word := range []string{"TAR_OPTIONS", "HTTPS_PROXY", "RSYNC_RSH", "RUSTC_WRAPPER", "MANPAGER", "JAVA_HOME",
				"KUBECONFIG", "SSLKEYLOGFILE", "EXTRA_INDEX_URL", "SSL_CERT_FILE"} {
				require.Error(t, Check(name+"_"+word), "%s_%s", name, word)
			}
		}

		a, perr := ParseAllow([]string{name})
		switch {
		case strings.TrimSpace(name) == "":
			require.NoError(t, perr)
			require.Empty(t, a.Names())
		case !wellFormed(strings.TrimSpace(name)) || strings.HasPrefix(strings.TrimSpace(name), "CHUNKLOCK_"):
			require.Error(t, perr, "%q cannot be allowed", name)
		default:
			require.NoError(t, perr)
			require.NoError(t, a.Check(strings.TrimSpace(name)))
			other := "X" + strings.TrimSpace(name)
			require.Equal(t, Check(other) == nil, a.Check(other) == nil, "the allowlist admits only what it lists: %s", other)
		}
	})
}
