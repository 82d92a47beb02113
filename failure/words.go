package failure

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Provider is what the reader of a message may be told of the model
// provider.
type Provider struct {
	// Name is the provider ("openai", "ollama", "anthropic", "gemini",
	// "mock"); empty when unknown.
	Name string
	// Endpoint is the address its requests go to, as configured
	// ("http://127.0.0.1:8080/v1"). Set it only for a reader who
	// configured it (the CLI, a client on the server's machine): a
	// message names it then, and never otherwise.
	Endpoint string
	// Local reports a provider on this machine or network (a loopback or
	// private address, Ollama, the mock): its advice is about a server
	// of one's own, never a vendor's status page.
	Local bool
}

// Line is the failure on one line: its message, then its advice after a
// dash ("cannot reach … — is the server running?"); "" for nil.
func (f *Failure) Line() string {
	if f == nil {
		return ""
	}
	if f.Advice == "" {
		return f.Message
	}
	return f.Message + " — " + f.Advice
}

// Sentence is Line ending as a sentence does, for a message that goes on
// after it.
func (f *Failure) Sentence() string {
	s := f.Line()
	if s != "" && !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// Words says err, any error a command meets, in words for a reader who
// knows p. A database, file or JSON error, or one of no known kind, is
// its failure's Line. A failure of a kind a run meets (the provider, the
// network…) inside an error that says more (a check of the settings, a
// comparison) keeps what that error says, in plain words (Plain), with
// the failure's advice after it; a run's own error is best said by
// Explain of it, as the CLI, the API and MCP do.
func Words(err error, p Provider) string {
	if err == nil {
		return ""
	}
	f := Explain(oneLine(err.Error()), p)
	if f == nil {
		return ""
	}
	switch f.Kind {
	case Database, File, JSON, Unknown:
		return f.Line()
	}
	line := Plain(f.Detail)
	if f.Advice != "" {
		line += " — " + f.Advice
	}
	return line
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var (
	requestURLRe = regexp.MustCompile(`\b(?:Post|Get|Put|Patch|Delete|Head) "(https?://[^"]+)"`)
	attemptsRe   = regexp.MustCompile(`gave up after (\d+) attempts`)
	timedOutRe   = regexp.MustCompile(`(?:run )?timed out after (\S+?)(?: \(--timeout\))?:`)
	stageRe      = regexp.MustCompile(`\bstage (\S+?):`)
	agentRe      = regexp.MustCompile(`(?:^|: )([a-z][a-z0-9_-]*\.[a-z][a-z0-9_./-]*): invalid reply: (.*)$`)
	interruptAt  = regexp.MustCompile(`^(interrupted(?: \([^)]*\))?)(?: at stage (\S+))?`)
	providerMsg  = regexp.MustCompile(`\bHTTP \d{3}: (.*)$`)
	dbHostRe     = regexp.MustCompile(`failed to connect to .*?: (\S+:\d+) \(`)
	agentNameRe  = regexp.MustCompile(`(?:^|: )([a-z][a-z0-9_-]*\.[a-z][a-z0-9_.-]*): `)
)

// explain fills f's Message and Advice for a reader who knows p.
func (f *Failure) explain(p Provider) {
	if f.Provider != "" && f.Provider != p.Name {
		// The error names another provider than the reader's (a judge's,
		// a provider being set up): nothing else of p applies.
		p = Provider{Name: f.Provider}
	}
	if !p.Local && p.Endpoint == "" {
		// The address in the error, never shown, still tells whether the
		// server is this machine's.
		if m := requestURLRe.FindStringSubmatch(f.Detail); m != nil {
			p.Local = localURL(m[1])
		}
	}
	who := p.who()
	tries := ""
	if m := attemptsRe.FindStringSubmatch(f.Detail); m != nil {
		tries = ", even after " + m[1] + " attempts"
	}
	switch f.Kind {
	case ProviderError:
		f.Message = fmt.Sprintf("%s had a server error (%s) and did not answer%s", who, f.http(), tries)
		f.Advice = "try again in a minute; if it keeps failing, " + p.statusPage()
	case RateLimited:
		f.Message = fmt.Sprintf("%s is limiting how many requests it takes (%s)%s", who, f.http(), tries)
		f.Advice = "wait a minute and try again; fewer runs at once (MADSPARK_PROVIDER_CONCURRENCY) avoid it"
	case ProviderPaused:
		f.Message = fmt.Sprintf("madspark paused its calls to %s after it failed several times in a row", who)
		f.Advice = "it tries again in a minute; try after that"
		if f.RetryAt != nil {
			f.Advice = "it tries again at " + f.RetryAt.Local().Format(time.TimeOnly) + "; try after that"
		}
	case Auth:
		f.Message = fmt.Sprintf("%s refused the API key (%s)", who, f.http())
		f.Advice = "check the key (" + p.keyVar() + ") and that it may use this model"
	case ProviderRefused:
		f.Message = fmt.Sprintf("%s refused the request (%s)", who, f.http())
		f.Advice = "check the model name (MADSPARK_MODEL); a very long input may also be too large for it"
	case Network:
		cause := netCause(f.Detail)
		where := "the model provider"
		switch {
		case p.Endpoint != "":
			where = "the provider at " + p.Endpoint
		case p.Local:
			where = "madspark's model server"
		case vendor(p.Name) != "":
			where = vendor(p.Name)
		}
		f.Message = "cannot reach " + where
		if cause != "" {
			f.Message += ": " + cause
		}
		switch {
		case p.Local && strings.HasPrefix(cause, "connection refused"):
			f.Advice = "is the server running?"
		case strings.HasPrefix(cause, "no such host"):
			f.Advice = "check the address (" + p.urlVar() + ") and this machine's network connection"
		case p.Local:
			f.Advice = "check that the server is running and answers at " + p.urlVar()
		default:
			f.Advice = "check the network connection of the machine madspark runs on, then try again"
		}
	case Timeout:
		if m := timedOutRe.FindStringSubmatch(f.Detail); m != nil {
			f.Message = "the run took longer than its time limit of " + m[1] + " and was stopped"
			f.Advice = "try again with a longer --timeout, or a smaller run (fewer ideas, iterations or rounds)"
		} else {
			f.Message = fmt.Sprintf("%s took longer than allowed to answer%s", who, tries)
			f.Advice = "try again; a smaller run finishes sooner"
		}
	case SearchUnavailable:
		f.Message = "the literature search reached none of its sources"
		f.Advice = "check the network connection, or run without the literature search (--no-search)"
	case Params:
		// What the check said, named by its field once.
		rest := f.Detail
		if loc := paramsRe.FindStringIndex(rest); loc != nil {
			rest = rest[loc[1]:]
		}
		if f.Field != "" && !strings.HasPrefix(rest, f.Field[strings.LastIndex(f.Field, ".")+1:]) {
			rest = f.Field + ": " + rest
		}
		f.Message = "a setting was not accepted: " + Plain(rest)
		f.Advice = "correct it and run again"
	case ReplyUnusable:
		f.Message = "the model's reply could not be used, even after it was asked again"
		if m := agentRe.FindStringSubmatch(f.Detail); m != nil {
			f.Message += " (" + m[1] + ": " + Plain(clip(m[2], 200)) + ")"
		}
		f.Advice = "resume the run to ask once more (its finished steps are not paid again); a larger model or a lower temperature helps"
	case Interrupted:
		f.Message = "the run was interrupted before it finished"
		if m := interruptAt.FindStringSubmatch(f.Detail); m != nil && (m[1] != "interrupted" || m[2] != "") {
			f.Message = "the run was " + m[1]
			if m[2] != "" {
				f.Message += " at stage " + m[2]
			}
		}
		f.Advice = "resume it to finish it; its finished steps are not paid again"
	case Cancelled:
		f.Message = "the run was cancelled"
		f.Advice = "what had finished is kept; resuming it finishes the rest"
	case File:
		f.Message = Plain(f.Detail)
		f.Advice = "check the path"
	case JSON:
		f.Message = Plain(f.Detail)
		f.Advice = "correct the JSON and try again"
	case Database:
		f.Message, f.Advice = databaseWords(f.Detail)
	default:
		f.Message = Plain(f.Detail)
	}
	// Where in the run: the stage and the agent that failed.
	var where []string
	if m := stageRe.FindStringSubmatch(f.Detail); m != nil {
		where = append(where, "stage "+m[1])
	}
	if m := agentNameRe.FindStringSubmatch(f.Detail); m != nil && f.Kind != ReplyUnusable {
		where = append(where, "agent "+m[1])
	}
	switch f.Kind {
	case Interrupted, Cancelled, Unknown, Params, File, JSON, Database:
	default:
		if len(where) > 0 {
			f.Message += " (" + strings.Join(where, ", ") + ")"
		}
	}
}

// http is the provider's status and what it said with it: "HTTP 429:
// slow down".
func (f *Failure) http() string {
	s := fmt.Sprintf("HTTP %d", f.Status)
	if m := providerMsg.FindStringSubmatch(f.Detail); m != nil && strings.TrimSpace(m[1]) != "" {
		s += ": " + Scrub(clip(strings.TrimSpace(m[1]), 200))
	}
	return s
}

// who names the provider for people: the server at its address, a
// vendor, or "the model provider".
func (p Provider) who() string {
	switch {
	case p.Name == "mock":
		return "the mock provider"
	case p.Local && p.Endpoint != "":
		return "the model server at " + p.Endpoint
	case p.Local:
		return "madspark's model server"
	case vendor(p.Name) != "":
		return vendor(p.Name)
	}
	return "the model provider"
}

// vendor is the company behind a provider's own service, "" for one that
// is not.
func vendor(name string) string {
	return map[string]string{"openai": "OpenAI", "anthropic": "Anthropic", "gemini": "Gemini"}[name]
}

// statusPage says where a vendor tells of its outages; a server of one's
// own has its log.
func (p Provider) statusPage() string {
	if p.Local {
		return "the server's log says why"
	}
	if page := map[string]string{"openai": "status.openai.com", "anthropic": "status.anthropic.com"}[p.Name]; page != "" && (p.Endpoint == "" || strings.Contains(p.Endpoint, p.Name+".com")) {
		return "see " + page
	}
	return "check the provider's status"
}

// keyVar is the variable that holds p's key.
func (p Provider) keyVar() string {
	switch p.Name {
	case "anthropic":
		return "ANTHROPIC_API_KEY"
	case "gemini":
		return "GOOGLE_API_KEY"
	}
	return "OPENAI_API_KEY"
}

// urlVar is the variable that holds p's address.
func (p Provider) urlVar() string {
	if p.Name == "ollama" {
		return "OLLAMA_HOST"
	}
	return "OPENAI_BASE_URL"
}

// localURL reports whether u names a host on this machine or a private
// network.
func localURL(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	host := pu.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate())
}

// netCauses are the network errors' causes in words, the first that
// matches.
var netCauses = []struct {
	re    *regexp.Regexp
	words string
}{
	{regexp.MustCompile(`connection refused`), "connection refused"},
	{regexp.MustCompile(`lookup (\S+?)(?: on \S+)?: no such host`), "no such host $1"},
	{regexp.MustCompile(`no such host`), "no such host"},
	{regexp.MustCompile(`connection reset`), "the connection was reset"},
	{regexp.MustCompile(`network is unreachable`), "the network is unreachable"},
	{regexp.MustCompile(`TLS handshake|tls: |x509: `), "a secure connection could not be made"},
	{regexp.MustCompile(`unexpected EOF|\bEOF$|server misbehaving`), "the connection closed before an answer"},
}

// netCause is the cause of a network error in words, "" when unknown.
func netCause(msg string) string {
	for _, c := range netCauses {
		if m := c.re.FindStringSubmatchIndex(msg); m != nil {
			return string(c.re.ExpandString(nil, c.words, msg, m))
		}
	}
	return ""
}

// databaseWords says a database error: its place and cause, and what to
// check.
func databaseWords(msg string) (message, advice string) {
	if m := dbHostRe.FindStringSubmatch(msg); m != nil {
		message = "cannot reach the database at " + m[1]
		if c := netCause(msg); c != "" {
			message += ": " + c
		}
		return message, "is PostgreSQL running there? (DATABASE_URL)"
	}
	if strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY") {
		return "the database is busy: another process is writing to it", "try again in a moment"
	}
	// "open database PATH: sqlite: open PATH: CAUSE": the path, then the
	// innermost cause.
	where, cause := "", msg
	if m := regexp.MustCompile(`^open database (` + pathRe + `): `).FindStringSubmatch(msg); m != nil {
		where, cause = " "+m[1], msg[len(m[0]):]
	}
	if i := strings.LastIndex(cause, "sqlite: open "); i >= 0 {
		cause = cause[i+len("sqlite: open "):]
		if j := strings.Index(cause, ": "); j >= 0 {
			cause = cause[j+2:]
		}
	}
	return "cannot open the database" + where + ": " + Plain(cause), "check MADSPARK_DB (a file path) or DATABASE_URL"
}

// clip cuts s to n characters.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// pathRe is a file path in an error: anything but ": ".
const pathRe = `(?:[^:]|:[^ ])+?`

// rule is a regular expression where PATH stands for a file path.
func rule(re string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(re, "PATH", pathRe))
}

// plainRules rewrite Go's wording into words, in order.
var plainRules = []struct {
	re   *regexp.Regexp
	with string
}{
	// A request's method and URL: the address is told apart, if at all.
	{regexp.MustCompile(`\b(?:Post|Get|Put|Patch|Delete|Head) "[^"]+": `), ""},
	// The net package.
	{regexp.MustCompile(`dial tcp (\S+?): connect: connection refused`), "connection refused at $1"},
	{regexp.MustCompile(`dial tcp: lookup (.+?)(?: on \S+)?: no such host`), "no such host $1"},
	{regexp.MustCompile(`read tcp \S+->\S+: read: connection reset by peer`), "the connection was reset"},
	{regexp.MustCompile(`(?:dial|read|write) tcp \S+?: i/o timeout`), "timed out"},
	{regexp.MustCompile(`dial tcp (\S+?): connect: network is unreachable`), "the network to $1 is unreachable"},
	{regexp.MustCompile(`net/http: TLS handshake timeout`), "the secure connection timed out"},
	{regexp.MustCompile(`tls: failed to verify certificate: x509: [^;]*`), "its certificate could not be verified"},
	{regexp.MustCompile(`\bunexpected EOF\b`), "the connection closed before an answer"},
	{regexp.MustCompile(`\bcontext deadline exceeded\b`), "it took too long"},
	{regexp.MustCompile(`\bcontext canceled\b`), "it was stopped"},
	// The os package's path errors.
	{rule(`\b(?:open|stat|lstat|read|readlink) (PATH): (?:no such file or directory|file does not exist)`), "no file $1"},
	{rule(`\bmkdir (PATH): (?:no such file or directory|file does not exist)`), "cannot make the directory $1: a directory above it is missing"},
	{rule(`\bmkdir (PATH): not a directory`), "cannot make the directory $1: a file is in the way"},
	{rule(`\bmkdir (PATH): file exists`), "cannot make the directory $1: a file of that name exists"},
	{rule(`\b(?:open|read|write) (PATH): is a directory`), "$1 is a directory, not a file"},
	{rule(`\b(?:open|stat|lstat|read|mkdir|write|remove|rename) (PATH): permission denied`), "no permission to use $1"},
	{rule(`\b(?:open|stat|lstat) (PATH): not a directory`), "no file $1: a file is in its path where a directory should be"},
	{regexp.MustCompile(`: (?:no such file or directory|file does not exist)\b`), ": no such file"},
	// encoding/json.
	{regexp.MustCompile(`invalid character '(.+?)' looking for beginning of object key string`), "a key in double quotes was expected, not '$1'"},
	{regexp.MustCompile(`invalid character '(.+?)' looking for beginning of value`), "a value was expected, not '$1'"},
	{regexp.MustCompile(`invalid character '(.+?)' after object key:value pair`), "a comma or '}' was expected, not '$1'"},
	{regexp.MustCompile(`invalid character '(.+?)' after object key`), "a ':' was expected after the key, not '$1'"},
	{regexp.MustCompile(`invalid character '(.+?)' after array element`), "a comma or ']' was expected, not '$1'"},
	{regexp.MustCompile(`invalid character '(.+?)' after top-level value`), "there is more after the JSON value ('$1')"},
	{regexp.MustCompile(`invalid character '(.+?)' in string (?:literal|escape code)`), "the character '$1' cannot be in a JSON string"},
	{regexp.MustCompile(`invalid character '(.+?)' [a-z ]+`), "the character '$1' is not JSON here"},
	{regexp.MustCompile(`unexpected end of JSON input`), "the JSON ends too soon"},
	{regexp.MustCompile(`json: cannot unmarshal (\w+) into Go (?:struct field \S+?\.|value of type )(\S+)(?: of type (\S+))?`), "$2 cannot be $1"},
	{regexp.MustCompile(`(^|[^.\w])json: `), "$1"},
	// cobra's argument counts (cmdline.Args words them; this is the net).
	{regexp.MustCompile(`(?:requires at least|accepts at most|accepts between|accepts) [^,]*?arg\(s\),? (?:only )?received (\d+)`), "got $1 arguments, which is not what the command takes"},
	{regexp.MustCompile(`\barg\(s\)`), "arguments"},
	// Go's own names.
	{regexp.MustCompile(`\*?[a-z]+\.[A-Z]\w*Error\b`), "error"},
}

// Plain is msg with Go's wording rewritten in words: network errors
// ("dial tcp 127.0.0.1:1: connect: connection refused" is "connection
// refused at 127.0.0.1:1"), file errors ("open x: no such file or
// directory" is "no file x"), JSON errors, cancelled contexts and
// cobra's argument counts. What is not Go's stays as it is.
func Plain(msg string) string {
	for _, r := range plainRules {
		msg = r.re.ReplaceAllString(msg, r.with)
	}
	return msg
}

var (
	urlRe      = regexp.MustCompile(`\bhttps?://[^\s"'<>]+`)
	hostPortRe = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\[[0-9a-fA-F:]+\](?::\d+)?|\blocalhost:\d+\b`)
	lookupRe   = regexp.MustCompile(`\b(no such host|lookup) \S+`)
)

// Scrub hides addresses in s (URLs, IP addresses and ports, host names
// looked up) for a reader who did not configure them.
func Scrub(s string) string {
	s = urlRe.ReplaceAllString(s, "[address hidden]")
	s = hostPortRe.ReplaceAllString(s, "[address hidden]")
	return lookupRe.ReplaceAllString(s, "$1 [address hidden]")
}

// ForRemote is f as a reader who did not configure the provider may see
// it: its address hidden in every field, the words without it, and the
// detail in plain words (Plain) with no address either.
func (f *Failure) ForRemote(p Provider) *Failure {
	if f == nil {
		return nil
	}
	p.Endpoint = ""
	g := Explain(f.Detail, p)
	g.Detail = Scrub(Plain(g.Detail))
	g.Message, g.Advice = Scrub(g.Message), Scrub(g.Advice)
	return g
}
