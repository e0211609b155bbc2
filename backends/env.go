package backends

import (
	"regexp"
	"strings"
)

var envNamePattern = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// CheckEnvName refuses a job env name that is not a plain shell name or
// that changes how a process loads or runs code (SPEC §1 Job).
func CheckEnvName(name string) error {
	if !envNamePattern.MatchString(name) {
		return InvalidArgument("env name %q is invalid: want [A-Z_][A-Z0-9_]*", name)
	}
	for _, p := range []string{"LD_", "DYLD_", "PYTHON", "PERL5", "CHUNKLOCK_"} {
		if strings.HasPrefix(name, p) {
			return InvalidArgument("env name %q is not allowed: it changes how processes load or run code", name)
		}
	}
	switch name {
	case "PATH", "BASH_ENV", "ENV", "IFS", "SHELLOPTS", "PS4", "PROMPT_COMMAND", "NODE_OPTIONS", "RUBYOPT",
		"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "GCONV_PATH":
		return InvalidArgument("env name %q is not allowed: it changes how processes load or run code", name)
	}
	return nil
}
