// Package envname is the one rule for the names of a job's env, shared by
// the server (which refuses such a job) and the runner (which refuses such a
// claim, whatever the server that sent it accepted).
//
// A job's env is set by whoever may change the pipeline, and handed to the
// job process on every runner host. Names are therefore upper-case
// identifiers that never name a variable through which the job process, or
// a program it starts, would load or run code the job's author did not
// write: such a variable would turn "may edit the pipeline" into "may run
// any code on every runner host". Refused are:
//
//   - the dynamic loader's: LD_*, DYLD_*, GCONV_PATH (glibc loads iconv
//     modules from it), OPENSSL_CONF, OPENSSL_ENGINES, OPENSSL_MODULES
//     (OpenSSL loads engines and providers named there);
//   - the shell's: PATH, BASH_ENV, ENV, SHELLOPTS, BASHOPTS, IFS, CDPATH,
//     FPATH, ZDOTDIR, BASH_LOADABLES_PATH, PS0 to PS4, PROMPT_COMMAND
//     (shells run or expand them, command substitutions included, or look
//     up the programs and scripts they run through them);
//   - interpreters' start-up and module paths: PYTHON* (all of them, also
//     the harmless PYTHONUNBUFFERED: the job's script sets those itself),
//     NODE_OPTIONS, NODE_PATH, PERL5*, PERLLIB, RUBYOPT, RUBYLIB, GEM_HOME,
//     GEM_PATH, JAVA_TOOL_OPTIONS, _JAVA_OPTIONS, JDK_JAVA_OPTIONS,
//     CLASSPATH, LUA_*, PHPRC, PHP_INI_SCAN_DIR, R_PROFILE, R_PROFILE_USER,
//     JAVA_OPTS, MAVEN_OPTS, GRADLE_OPTS, SBT_OPTS (-javaagent loads code),
//     DOTNET_STARTUP_HOOKS, CORECLR_* (profilers), ERL_AFLAGS, ERL_ZFLAGS
//     (-eval), JULIA_* (load and depot paths), TCLLIBPATH;
//   - build tools a job's script may call: GOFLAGS (-toolexec), CC, CXX,
//     and every NPM_CONFIG_* (npm reads them in upper case too:
//     script-shell, onload-script);
//   - commands other programs run: SHELL, EDITOR, VISUAL, PAGER, LESSOPEN,
//     LESSCLOSE, SSH_ASKPASS, SUDO_ASKPASS, BROWSER, and every GIT_* (git runs the
//     programs named by many of them, GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF,
//     GIT_ASKPASS, GIT_EXEC_PATH, and GIT_CONFIG_COUNT/KEY_n/VALUE_n set any
//     configuration, hooks and core.sshCommand included; the few harmless
//     ones such as GIT_AUTHOR_NAME are refused with them);
//   - where programs find start-up files that run code: HOME (Python's user
//     site-packages, git's and the shells' start-up files) and
//     XDG_CONFIG_HOME (git's configuration);
//   - CHUNKLOCK_*: the runner's own variables (the claim, the server's URL,
//     the API token, the job key).
//
// Allowed on purpose: variables that choose data rather than code, such as
// TZ, LANG, LC_*, TMPDIR, SSL_CERT_FILE, and the resolver's LOCALDOMAIN,
// HOSTALIASES and RES_OPTIONS. Those change where names resolve, which
// gives nothing the pipeline's author does not have already: they may
// point a dataset's url anywhere.
package envname

import (
	"fmt"
	"strings"
)

// Why a name is refused.
const (
	loadsCode     = "it changes how processes load code"
	shellRunsCode = "shells run code or find programs through it"
	interpreter   = "it makes an interpreter load or run code at start-up"
	namesCommand  = "programs run the command it names"
	buildTool     = "build tools run code it names or sets"
	gitRunsCode   = "git runs commands named by GIT_* variables or set through them"
	startupFiles  = "programs load start-up files that run code from there"
	reserved      = "CHUNKLOCK_* names are the runner's own variables"
)

// refused maps exact names to why they are refused.
var refused = map[string]string{
	"GCONV_PATH": loadsCode, "OPENSSL_CONF": loadsCode, "OPENSSL_ENGINES": loadsCode, "OPENSSL_MODULES": loadsCode,

	"PATH": shellRunsCode, "BASH_ENV": shellRunsCode, "ENV": shellRunsCode, "SHELLOPTS": shellRunsCode,
	"BASHOPTS": shellRunsCode, "IFS": shellRunsCode, "CDPATH": shellRunsCode, "FPATH": shellRunsCode,
	"ZDOTDIR": shellRunsCode, "BASH_LOADABLES_PATH": shellRunsCode, "PS0": shellRunsCode, "PS1": shellRunsCode,
	"PS2": shellRunsCode, "PS3": shellRunsCode, "PS4": shellRunsCode, "PROMPT_COMMAND": shellRunsCode,

	"NODE_OPTIONS": interpreter, "NODE_PATH": interpreter, "PERLLIB": interpreter, "RUBYOPT": interpreter,
	"RUBYLIB": interpreter, "GEM_HOME": interpreter, "GEM_PATH": interpreter, "JAVA_TOOL_OPTIONS": interpreter,
	"_JAVA_OPTIONS": interpreter, "JDK_JAVA_OPTIONS": interpreter, "CLASSPATH": interpreter, "PHPRC": interpreter,
	"PHP_INI_SCAN_DIR": interpreter, "R_PROFILE": interpreter, "R_PROFILE_USER": interpreter,
	"JAVA_OPTS": interpreter, "MAVEN_OPTS": interpreter, "GRADLE_OPTS": interpreter, "SBT_OPTS": interpreter,
	"DOTNET_STARTUP_HOOKS": interpreter, "ERL_AFLAGS": interpreter, "ERL_ZFLAGS": interpreter, "TCLLIBPATH": interpreter,

	"GOFLAGS": buildTool, "CC": buildTool, "CXX": buildTool,

	"EDITOR": namesCommand, "VISUAL": namesCommand, "PAGER": namesCommand, "LESSOPEN": namesCommand,
	"LESSCLOSE": namesCommand, "SSH_ASKPASS": namesCommand, "SUDO_ASKPASS": namesCommand, "SHELL": namesCommand,
	"BROWSER": namesCommand,

	"HOME": startupFiles, "XDG_CONFIG_HOME": startupFiles,
}

// refusedPrefixes are refused families of names, with why.
var refusedPrefixes = []struct{ prefix, why string }{
	{"LD_", loadsCode},
	{"DYLD_", loadsCode},
	{"PYTHON", interpreter},
	{"PERL5", interpreter},
	{"LUA_", interpreter},
	{"CORECLR_", interpreter},
	{"JULIA_", interpreter},
	{"NPM_CONFIG_", buildTool},
	{"GIT_", gitRunsCode},
	{"CHUNKLOCK_", reserved},
}

// Check returns nil if name may be the name of a job's env entry, else an
// error that names it and says why not.
func Check(name string) error {
	if name == "" {
		return fmt.Errorf("env name is empty")
	}
	if !wellFormed(name) {
		return fmt.Errorf("env name %q is not allowed: a name is upper-case letters, digits and _, and does not start with a digit", name)
	}
	why, ok := refused[name]
	for _, p := range refusedPrefixes {
		if !ok && strings.HasPrefix(name, p.prefix) {
			why, ok = p.why, true
		}
	}
	if ok {
		return fmt.Errorf("env name %q is not allowed: %s", name, why)
	}
	return nil
}

// wellFormed tells whether name matches ^[A-Z_][A-Z0-9_]*$.
func wellFormed(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'A' && c <= 'Z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
