// Package envname is the one rule for the names of a job's env, shared by
// the server (which refuses such a job), the runner (which refuses such a
// claim, whatever the server that sent it accepted), `chunklock apply`
// (which refuses such a pipeline file) and `chunklock status` (which names
// a stored job that breaks it).
//
// A job's env is set by whoever may change the pipeline, and handed to the
// job process on every runner host. Names are therefore upper-case
// identifiers that never name a variable through which the job process, or
// a program it starts, would load or run code the job's author did not
// write: such a variable would turn "may edit the pipeline" into "may run
// any code on every runner host". A list of such names would always miss
// the next tool's, so the rule refuses them by family, by the shape tools
// give their settings. A name is refused when:
//
//   - it is not upper-case letters, digits and _ (not starting with a
//     digit), or it starts with CHUNKLOCK_ (the runner's own variables: the
//     claim, the server's URL, the API token, the job key). No allowlist
//     admits these.
//   - one of its words (the parts between _) ends in a stem that tools use
//     for settings that run code:
//     command-line options: OPTIONS, OPTS, OPT, FLAGS, ARGS (TAR_OPTIONS,
//     JAVA_OPTS, RUBYOPT, GOFLAGS, LDFLAGS, PYTEST_ADDOPTS, TF_CLI_ARGS);
//     commands to run: COMMAND, CMD, EXEC, EXECUTABLE(S), SHELL, EDITOR,
//     PAGER, BROWSER, ASKPASS, RSH, SSH, WRAPPER, LAUNCHER, COMPILER,
//     LINKER, LOADER, RUNNER, INTERPRETER, HELPER and the word VISUAL
//     (RSYNC_RSH, RUSTC_WRAPPER, MANPAGER, PROMPT_COMMAND);
//     where code or configuration that runs code is loaded from: PATH, LIB,
//     LIBS, LIBRARY, LIBRARIES, HOME, ROOT, BIN, CONF, CONFIG, CFG, INIT,
//     CACHE, PLUGIN(S), MODULE(S), PRELOAD, STARTUP, the words HOOK, HOOKS
//     and INI, and RC in a word of four letters or more (CLASSPATH,
//     JAVA_HOME, GOROOT, KUBECONFIG, SPARK_CONF_DIR, PSQLRC, VIMINIT);
//     where code is downloaded from and how traffic is routed: PROXY,
//     MIRROR(S), REGISTRY, REGISTRIES (HTTPS_PROXY, ALL_PROXY, GOPROXY);
//     which TLS servers are trusted: VERIFY, INSECURE;
//   - it contains PYTHON (every variable of the interpreter and of tools
//     that name one, PYSPARK_PYTHON), KEYLOG (SSLKEYLOGFILE: the keys of
//     the job's TLS connections), INDEX_URL (PIP_INDEX_URL), or a TLS trust
//     anchor or switch: CA_BUNDLE, CA_CERT, CAFILE, CAINFO, SSL_CERT,
//     REJECT_UNAUTHORIZED (REQUESTS_CA_BUNDLE, SSL_CERT_FILE: a trusted
//     server of the author's intercepts downloads of code);
//   - it starts with the prefix of a loader, shell, interpreter or tool
//     that reads all its settings from the environment: LD_, DYLD_, BASH_,
//     GIT_ (GIT_SSH_COMMAND, GIT_CONFIG_COUNT/KEY_n/VALUE_n set any
//     configuration, hooks included), SSH_, PERL5, PERL_, LUA_, JULIA_,
//     CORECLR_, DOTNET_, R_, PIP_, UV_, POETRY_, PIPENV_, CONDA_,
//     NPM_CONFIG_, YARN_, BUNDLE_, GEM_, CARGO_, RUSTUP_, GRADLE_, MAVEN_,
//     SBT_, HELM_, ANSIBLE_, CMAKE_, CLOUDSDK_;
//   - it is one of the names no family covers: the shell's ENV, IFS, PS0
//     to PS4, ZDOTDIR; make's programs CC, CXX, CPP, FC, F77, LD, AS, AR,
//     NM, STRIP, OBJCOPY, OBJDUMP, YACC, LEX, M4, MAKE, MAKEFILES, and
//     RUSTC, RUSTDOC; Go's GOENV, GOTOOLCHAIN, GOSUMDB, GONOSUMDB,
//     GONOSUMCHECK, GOPRIVATE, GOTOOLDIR; less's LESS, LESSOPEN, LESSCLOSE,
//     LESSEDIT, LESSKEY, LESSKEYIN; UNZIP, COMSPEC, GLIBC_TUNABLES,
//     OPENSSL_ENGINES, ODBCINI, ODBCSYSINI, ODBCINSTINI.
//
// Allowed: names that choose data rather than code, such as the examples'
// MODE, SHOP_DIR and CURRENCY, TZ, LANG, LC_*, TMPDIR, AWS_REGION, and the
// resolver's LOCALDOMAIN and HOSTALIASES (they change where names resolve,
// which gives nothing the pipeline's author does not have already: a
// dataset's url may point anywhere, and TLS trust stays the host's).
// Application names that fall into a family (INPUT_PATH, APP_CONFIG,
// FEATURE_FLAGS) are refused with them: a job reads where its data is from
// CHUNKLOCK_INPUT_* and CHUNKLOCK_OUTPUT_*.
//
// An operator who knows a refused name is safe where the jobs run lists it
// in an Allow: the server's (`chunklock serve --env-allow`) lets such a job
// be stored, each runner's (`chunklock run --env-allow`) lets it run. The
// two are separate on purpose: a runner never takes its allowlist from the
// server, whose pipeline's authors are the ones the rule guards against.
package envname

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Why a name is refused.
const (
	loadsCode     = "it changes how processes load code"
	shellRunsCode = "shells run code or find programs through it"
	interpreter   = "it makes an interpreter load or run code at start-up"
	namesCommand  = "programs run the command it names"
	buildTool     = "build tools run the programs it names or sets"
	gitRunsCode   = "git runs commands named by GIT_* variables or set through them"
	sshRunsCode   = "ssh runs commands and uses agents named by SSH_* variables"
	loadsFrom     = "programs load code, or configuration that runs code, from where it points"
	toolOptions   = "tools read command-line options from it, which can make them run commands"
	toolSettings  = "the tool reads its settings from these variables, among them where to download code from and what to run"
	routesTraffic = "it changes where programs download code from or route their traffic through"
	tlsTrust      = "it changes which servers TLS connections trust, so that downloads of code can be intercepted"
	tlsKeys       = "it writes the keys of the job's TLS connections to a file, exposing what they carry"
	reserved      = "CHUNKLOCK_* names are the runner's own variables"
	malformed     = "a name is upper-case letters, digits and _, and does not start with a digit"
)

// refused maps the names no family covers to why they are refused.
var refused = map[string]string{
	"ENV": shellRunsCode, "IFS": shellRunsCode, "ZDOTDIR": shellRunsCode, "PATH": shellRunsCode,
	"PS0": shellRunsCode, "PS1": shellRunsCode, "PS2": shellRunsCode, "PS3": shellRunsCode, "PS4": shellRunsCode,

	"CC": buildTool, "CXX": buildTool, "CPP": buildTool, "FC": buildTool, "F77": buildTool, "LD": buildTool,
	"AS": buildTool, "AR": buildTool, "NM": buildTool, "STRIP": buildTool, "OBJCOPY": buildTool,
	"OBJDUMP": buildTool, "YACC": buildTool, "LEX": buildTool, "M4": buildTool, "MAKE": buildTool,
	"MAKEFILES": buildTool, "RUSTC": buildTool, "RUSTDOC": buildTool, "GOENV": buildTool,
	"GOTOOLCHAIN": buildTool, "GOSUMDB": buildTool, "GONOSUMDB": buildTool, "GONOSUMCHECK": buildTool,
	"GOPRIVATE": buildTool, "GOTOOLDIR": buildTool,

	"LESS": namesCommand, "LESSOPEN": namesCommand, "LESSCLOSE": namesCommand, "LESSEDIT": namesCommand,
	"LESSKEY": namesCommand, "LESSKEYIN": namesCommand, "UNZIP": namesCommand, "COMSPEC": namesCommand,

	"GLIBC_TUNABLES": loadsCode, "OPENSSL_ENGINES": loadsCode, "GCONV_PATH": loadsCode, "TCLLIBPATH": loadsCode,
	"ODBCINI": loadsFrom, "ODBCSYSINI": loadsFrom, "ODBCINSTINI": loadsFrom,
}

// family is a set of patterns refused for one reason.
type family struct {
	why      string
	patterns []string
}

// prefixes are refused families of names by their start: the variables
// of a loader, a shell, git, ssh or an interpreter.
var prefixes = []family{
	{reserved, []string{"CHUNKLOCK_"}},
	{loadsCode, []string{"LD_", "DYLD_"}},
	{shellRunsCode, []string{"BASH_"}},
	{gitRunsCode, []string{"GIT_"}},
	{sshRunsCode, []string{"SSH_"}},
	{interpreter, []string{"PYTHON", "PERL5", "PERL_", "LUA_", "JULIA_", "CORECLR_", "DOTNET_", "R_"}},
}

// toolPrefixes are the prefixes of tools that read all their settings from
// the environment, checked after every other family (whose reasons say
// more: CARGO_HOME is refused because cargo loads code from there).
var toolPrefixes = family{toolSettings, []string{"PIP_", "UV_", "POETRY_", "PIPENV_", "CONDA_", "NPM_CONFIG_",
	"YARN_", "BUNDLE_", "GEM_", "CARGO_", "RUSTUP_", "GRADLE_", "MAVEN_", "SBT_", "HELM_", "ANSIBLE_", "CMAKE_", "CLOUDSDK_"}}

// stems are refused families of names by how one of their words ends.
var stems = []family{
	{toolOptions, []string{"OPTIONS", "OPTS", "OPT", "FLAGS", "ARGS"}},
	{namesCommand, []string{"COMMAND", "CMD", "EXEC", "EXECUTABLE", "EXECUTABLES", "SHELL", "EDITOR", "PAGER",
		"BROWSER", "ASKPASS", "RSH", "SSH", "WRAPPER", "LAUNCHER", "COMPILER", "LINKER", "LOADER", "RUNNER",
		"INTERPRETER", "HELPER"}},
	{loadsFrom, []string{"PATH", "LIB", "LIBS", "LIBRARY", "LIBRARIES", "HOME", "ROOT", "BIN", "CONF", "CONFIG",
		"CFG", "INIT", "CACHE", "PLUGIN", "PLUGINS", "MODULE", "MODULES", "PRELOAD", "STARTUP"}},
	{routesTraffic, []string{"PROXY", "MIRROR", "MIRRORS", "REGISTRY", "REGISTRIES"}},
	{tlsTrust, []string{"VERIFY", "INSECURE"}},
}

// words are refused families of names by one of their words, whole.
var words = []family{
	{namesCommand, []string{"VISUAL"}},
	{loadsFrom, []string{"HOOK", "HOOKS", "INI"}},
}

// substrings are refused families of names by what they contain.
var substrings = []family{
	{interpreter, []string{"PYTHON"}},
	{tlsKeys, []string{"KEYLOG"}},
	{routesTraffic, []string{"INDEX_URL"}},
	{tlsTrust, []string{"CA_BUNDLE", "CA_CERT", "CAFILE", "CAINFO", "SSL_CERT", "REJECT_UNAUTHORIZED"}},
}

// Error is a refused name and why.
type Error struct {
	Name string
	Why  string
	// Family describes the family that refuses Name ("" when it is
	// refused by name or is malformed).
	Family string
	// Allowable tells whether an operator's Allow may admit Name.
	Allowable bool
	// suggest: the message suggests allowing it (a family an application
	// name may fall into, not a loader's or a shell's variable).
	suggest bool
}

func (e *Error) Error() string {
	if e.Name == "" {
		return "env name is empty"
	}
	msg := fmt.Sprintf("env name %q is not allowed: %s", e.Name, e.Why)
	if e.Family != "" {
		msg += " (" + e.Family + ")"
	}
	if e.suggest {
		msg += fmt.Sprintf("; if it is safe where your jobs run, an operator can allow it with --env-allow %s on the server and on the runners", e.Name)
	}
	return msg
}

// Check returns nil if name may be the name of a job's env entry, else an
// *Error that names it and says why not. It admits no exception: see
// Allow.Check.
func Check(name string) error { return Allow{}.Check(name) }

// Allow is an operator's list of names the rule refuses that are to be
// admitted all the same. The zero value admits none.
type Allow struct{ names map[string]bool }

// ParseAllow makes an Allow of names (surrounding spaces and empty entries
// are ignored). A name that is not a variable name, or one of the runner's
// CHUNKLOCK_*, is an error: no allowlist admits those.
func ParseAllow(names []string) (Allow, error) {
	a := Allow{names: map[string]bool{}}
	for _, name := range names {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		var e *Error
		if err := check(name); errors.As(err, &e) && !e.Allowable {
			if e.Why == reserved {
				return Allow{}, fmt.Errorf("--env-allow %q: %s and cannot be allowed", name, reserved)
			}
			return Allow{}, fmt.Errorf("--env-allow %q: not a variable name: %s", name, malformed)
		}
		a.names[name] = true
	}
	return a, nil
}

// Names returns the names a admits, sorted.
func (a Allow) Names() []string {
	out := make([]string, 0, len(a.names))
	for name := range a.names {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Check returns nil if name may be the name of a job's env entry: the rule
// admits it, or a lists it. Else an *Error that names it and says why not.
func (a Allow) Check(name string) error {
	if a.names[name] {
		return nil
	}
	return check(name)
}

// check applies the rule.
func check(name string) error {
	if name == "" || !wellFormed(name) {
		return &Error{Name: name, Why: malformed}
	}
	if why, ok := refused[name]; ok {
		return &Error{Name: name, Why: why, Allowable: true}
	}
	refuse := func(why, fam string) error {
		return &Error{Name: name, Why: why, Family: fam, Allowable: why != reserved,
			suggest: why != reserved && why != loadsCode && why != shellRunsCode}
	}
	for _, f := range prefixes {
		if p, ok := startsWith(name, f.patterns); ok {
			return refuse(f.why, "names starting with "+p)
		}
	}
	// The last word says most about what a variable is: CONFIG_SHELL is a
	// shell to run.
	ws := strings.Split(name, "_")
	for i := len(ws) - 1; i >= 0; i-- {
		if why, fam := wordFamily(ws[i]); why != "" {
			return refuse(why, fam)
		}
	}
	for _, f := range substrings {
		for _, s := range f.patterns {
			if strings.Contains(name, s) {
				return refuse(f.why, "names containing "+s)
			}
		}
	}
	if p, ok := startsWith(name, toolPrefixes.patterns); ok {
		return refuse(toolPrefixes.why, "names starting with "+p)
	}
	return nil
}

// startsWith returns the first of prefixes that name starts with.
func startsWith(name string, prefixes []string) (string, bool) {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return p, true
		}
	}
	return "", false
}

// wordFamily tells whether the word w of a name puts it in a refused
// family: why, and the family's description; "" when it does not.
func wordFamily(w string) (why, fam string) {
	for _, f := range stems {
		for _, s := range f.patterns {
			if strings.HasSuffix(w, s) {
				return f.why, "names with a word ending in " + s
			}
		}
	}
	for _, f := range words {
		if slices.Contains(f.patterns, w) {
			return f.why, "names with the word " + w
		}
	}
	if len(w) >= 4 && strings.HasSuffix(w, "RC") {
		return loadsFrom, "names with a word of four letters or more ending in RC"
	}
	return "", ""
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

// Part is a dataset id or a dimension name as it appears in the runner's
// variables (CHUNKLOCK_INPUT_<DATASET>_URL, CHUNKLOCK_OUTPUT_<DIMENSION>):
// upper-cased, every character other than A-Z and 0-9 an underscore.
func Part(id string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(id) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
