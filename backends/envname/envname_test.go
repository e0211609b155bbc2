package envname

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	allowed := []string{
		"BATCH_SIZE", "A", "_", "_X", "X1", "A_1_B", "TZ", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE",
		"LOCALDOMAIN", "HOSTALIASES", "RES_OPTIONS",
		// Near the refused names without being one of them.
		"PATHS", "MY_PATH", "LD", "LDFLAGS", "ENVIRONMENT", "GIT", "CHUNKLOCK", "HOMEDIR", "PERL", "NODE_ENV",
	}
	for _, name := range allowed {
		require.NoError(t, Check(name), name)
	}
	refused := map[string]string{ // name: part of the reason
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
		"SHELLOPTS":               "shells run code",
		"PS4":                     "shells run code",
		"PROMPT_COMMAND":          "shells run code",
		"LD_PRELOAD":              "load code",
		"LD_LIBRARY_PATH":         "load code",
		"LD_AUDIT":                "load code",
		"DYLD_INSERT_LIBRARIES":   "load code",
		"GCONV_PATH":              "load code",
		"OPENSSL_CONF":            "load code",
		"PYTHONPATH":              "interpreter",
		"PYTHONSTARTUP":           "interpreter",
		"PYTHONUNBUFFERED":        "interpreter",
		"PERL5LIB":                "interpreter",
		"PERL5OPT":                "interpreter",
		"NODE_OPTIONS":            "interpreter",
		"RUBYOPT":                 "interpreter",
		"JAVA_TOOL_OPTIONS":       "interpreter",
		"_JAVA_OPTIONS":           "interpreter",
		"LUA_INIT":                "interpreter",
		"GIT_SSH_COMMAND":         "git runs",
		"GIT_CONFIG_COUNT":        "git runs",
		"GIT_AUTHOR_NAME":         "git runs",
		"JAVA_OPTS":               "interpreter",
		"MAVEN_OPTS":              "interpreter",
		"DOTNET_STARTUP_HOOKS":    "interpreter",
		"CORECLR_PROFILER_PATH":   "interpreter",
		"ERL_AFLAGS":              "interpreter",
		"JULIA_LOAD_PATH":         "interpreter",
		"TCLLIBPATH":              "interpreter",
		"GOFLAGS":                 "build tools",
		"CC":                      "build tools",
		"NPM_CONFIG_SCRIPT_SHELL": "build tools",
		"BROWSER":                 "command it names",
		"EDITOR":                  "command it names",
		"SHELL":                   "command it names",
		"HOME":                    "start-up files",
		"CHUNKLOCK_TOKEN":         "runner's own",
		"CHUNKLOCK_URL":           "runner's own",
		"CHUNKLOCK_DATAID":        "runner's own",
	}
	for name, why := range refused {
		err := Check(name)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), why, name)
		if name != "" {
			require.Contains(t, err.Error(), `env name "`, name)
			require.Contains(t, err.Error(), " is not allowed: ", name)
		}
	}
	require.EqualError(t, Check("LD_PRELOAD"), `env name "LD_PRELOAD" is not allowed: it changes how processes load code`)
}
