package replytest

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/invopop/jsonschema"
	"pgregory.net/rapid"
)

// damage is one usable corruption: it changes c and reports whether it
// could apply.
type damage struct {
	name  string
	apply func(t *rapid.T, c *corruption) bool
}

// corruption is a value on its way to a reply's text.
type corruption struct {
	root   *val
	schema *jsonschema.Schema
	st     style
	// envelope: what is written around the JSON.
	fence, prose, tags, think, truncate bool
	// draft is a value written before the answer, which the reply then
	// revises.
	draft *val
	// mayRefuse: the corruption may leave the reply unreadable (a key
	// whose meaning only a re-ask can settle); it must never be read as
	// another value.
	mayRefuse bool
}

// damages are in the order they apply: values, shape, text.
var damages = []damage{
	{"key style", renameKey},
	{"number as text", numberAsText},
	{"boolean as text", boolAsText},
	{"enum decorated", enumDecorated},
	{"list as bullet text", listAsBullets},
	{"list of one as its text", listOfOne},
	{"extra field", extraField},
	{"bare list", bareList},
	{"one-key wrapper", wrapInKey},
	{"one-item list around", wrapInList},
	{"wrappers with status fields", wrapWithStatus},
	{"a placeholder for an optional field", placeholder},
	{"a key under another name", synonymKey},
	{"unescaped quotes in texts", func(_ *rapid.T, c *corruption) bool {
		return set(&c.st.rawQuotes, c.st.quote == '"' && hasRawQuote(c.root))
	}},
	{"a draft before the final answer", draftFirst},
	{"trailing commas", func(_ *rapid.T, c *corruption) bool {
		return set(&c.st.trailingComma, !c.truncate && container(c.root, 1))
	}},
	{"missing commas", func(_ *rapid.T, c *corruption) bool { return set(&c.st.missingCommas, container(c.root, 2)) }},
	{"comments", func(_ *rapid.T, c *corruption) bool { return set(&c.st.comments, c.root.kind == 'o') }},
	{"Python literals", func(_ *rapid.T, c *corruption) bool { return set(&c.st.pyLiterals, hasKind(c.root, 'b')) }},
	{"single quotes", func(_ *rapid.T, c *corruption) bool { return quote(c, '\'') }},
	{"curly quotes", func(_ *rapid.T, c *corruption) bool { return quote(c, '“') }},
	{"unquoted keys", func(_ *rapid.T, c *corruption) bool {
		return set(&c.st.bareKeys, container(c.root, 1) && hasKind(c.root, 'o'))
	}},
	{"code fence", func(_ *rapid.T, c *corruption) bool { return set(&c.fence, true) }},
	{"prose around", func(_ *rapid.T, c *corruption) bool { return set(&c.prose, true) }},
	{"tags around", func(_ *rapid.T, c *corruption) bool { return set(&c.tags, true) }},
	{"a draft in a think block before", func(_ *rapid.T, c *corruption) bool { return set(&c.think, true) }},
	{"cut after the last complete value", func(_ *rapid.T, c *corruption) bool {
		return set(&c.truncate, !c.st.trailingComma && closers(c.root) > 0)
	}},
}

// set turns on a flag that was off, when ok.
func set(flag *bool, ok bool) bool {
	if *flag || !ok {
		return false
	}
	*flag = true
	return true
}

// corrupt writes v in a format drawn from Formats, with one to three
// usable corruptions, and returns the reply's text, the corruptions'
// names, the format, and whether the reader may refuse it (never read it
// as another value).
func corrupt(t *rapid.T, v *val, root *jsonschema.Schema) (string, []string, string, bool) {
	c := &corruption{root: v, schema: root, st: style{quote: '"'}}
	format := rapid.SampledFrom(Formats).Draw(t, "format")
	switch format {
	case FormatYAML, FormatLabelValue, FormatTable:
		// The values as models write them in these formats, the keys
		// perhaps in another style.
		var applied []string
		for _, d := range valueDamages {
			if rapid.IntRange(0, 3).Draw(t, d.name+"?") == 0 && d.apply(t, c) {
				applied = append(applied, d.name)
			}
		}
		style := func(k string) string { return k }
		if rapid.Bool().Draw(t, "title case keys") {
			style = func(k string) string {
				if f := KeyForms(k); len(f) > 0 && !declared(c.schema, f[0]) {
					return f[0]
				}
				return k
			}
		}
		var text string
		ok := false
		if c.root.kind == 'o' && c.root.s != nil && !anyDeclared(c.root) {
			// No field of the schema: as text, that is prose.
		} else if format == FormatYAML {
			text, ok = renderYAML(c.root)
			if ok && rapid.Bool().Draw(t, "yaml fence") {
				text = "```yaml\n" + text + "```\n"
				applied = append(applied, "code fence")
			}
		} else {
			text, ok = renderLabels(c.root, style, format == FormatTable)
			if ok && rapid.Bool().Draw(t, "prose around") {
				text = "Here is my answer.\n\n" + text + "\nI hope this helps."
				applied = append(applied, "prose around")
			}
		}
		if ok {
			return text, append(applied, format), format, c.mayRefuse
		}
		// The format cannot write this value plainly: JSON instead.
		format = FormatJSON
		c.st.quote = '"'
	case FormatJSON5:
		positive := false
		walk(v, false, func(x *val, _ bool) { positive = positive || x.kind == 'n' && x.raw == nil && x.num > 0 })
		if positive {
			c.st.json5 = true
		} else {
			format = FormatJSON
		}
	}
	// The values first, then the shape, then the text: each sees what
	// the others before it made.
	picked := rapid.SliceOfN(rapid.IntRange(0, len(damages)-1), 1, 3).Draw(t, "corruptions")
	sort.Ints(picked)
	var applied []string
	if c.st.json5 {
		applied = append(applied, FormatJSON5)
	}
	for _, i := range picked {
		if d := damages[i]; d.apply(t, c) {
			applied = append(applied, d.name)
		}
	}
	if len(applied) == 0 {
		set(&c.fence, true)
		applied = append(applied, "code fence")
	}
	return c.text(t), applied, format, c.mayRefuse
}

// valueDamages are the damages to values, which every format shows.
var valueDamages = []damage{
	{"key style", renameKey},
	{"number as text", numberAsText},
	{"boolean as text", boolAsText},
	{"enum decorated", enumDecorated},
	{"extra field", extraField},
	{"a placeholder for an optional field", placeholder},
}

// text writes the corrupted value with its envelope.
func (c *corruption) text(t *rapid.T) string {
	body := render(c.root, c.st)
	if c.truncate {
		body = cut(t, c.root, body)
	}
	if c.tags {
		body = "<json>\n" + body
		if !c.truncate {
			body += "\n</json>"
		}
	}
	if c.fence {
		body = "```json\n" + body
		if !c.truncate {
			body += "\n```"
		}
	}
	if c.think {
		body = "<think>A first draft: {\"draft\": [1, 2], \"score\": \"unsure\"}. No, better:</think>\n" + body
	}
	if c.draft != nil {
		body = "A first draft:\n" + render(c.draft, style{}) + "\n\nOn reflection that is wrong. The corrected answer:\n" + body
	}
	if c.prose {
		body = "Here is the JSON you asked for:\n\n" + body
		if !c.truncate {
			body += "\n\nLet me know if you need anything else."
		}
	}
	return body
}

// closers counts the closing brackets at the end of v's rendering that
// can be cut, leaving its last value complete: never the bracket of an
// empty container, nor one after a number or a literal, which might
// have gone on.
func closers(root *val) int {
	chain := 0
	v := root
	for v.raw == nil && (v.kind == 'o' || v.kind == 'a') {
		var last *val
		switch {
		case v.kind == 'o' && len(v.vals) > 0:
			last = v.vals[len(v.vals)-1]
		case v.kind == 'a' && len(v.items) > 0:
			last = v.items[len(v.items)-1]
		}
		if last == nil || (last.raw == nil && last.kind != 'o' && last.kind != 'a' && last.kind != 's') {
			break
		}
		chain++
		v = last
	}
	return chain
}

// cut removes from the end of body some of the closing brackets that
// closers counts.
func cut(t *rapid.T, root *val, body string) string {
	k := rapid.IntRange(1, closers(root)).Draw(t, "cut")
	for i := 0; i < k; i++ {
		body = strings.TrimRightFunc(body, unicode.IsSpace)
		body = body[:len(body)-1]
	}
	return body
}

func quote(c *corruption, q rune) bool {
	if c.st.quote != '"' || !plainTexts(c.root) || !(hasKind(c.root, 's') || container(c.root, 1) && hasKind(c.root, 'o')) {
		return false
	}
	c.st.quote = q
	return true
}

// container reports whether v holds an object or a list of at least n
// members or items, as written.
func container(v *val, n int) bool {
	found := false
	walk(v, false, func(x *val, _ bool) {
		found = found || x.raw == nil && (x.kind == 'o' && len(x.keys) >= n || x.kind == 'a' && len(x.items) >= n)
	})
	return found
}

func hasKind(v *val, kind byte) bool {
	found := false
	walk(v, false, func(x *val, _ bool) { found = found || (x.kind == kind && x.raw == nil) })
	return found
}

// pick draws one of the values of v that ok accepts.
func pick(t *rapid.T, v *val, label string, ok func(*val) bool) *val {
	var list []*val
	walk(v, false, func(x *val, _ bool) {
		if ok(x) {
			list = append(list, x)
		}
	})
	if len(list) == 0 {
		return nil
	}
	return list[rapid.IntRange(0, len(list)-1).Draw(t, label)]
}

func renameKey(t *rapid.T, c *corruption) bool {
	o := pick(t, c.root, "object", func(x *val) bool { return x.kind == 'o' && len(x.keys) > 0 && x.raw == nil })
	if o == nil {
		return false
	}
	i := rapid.IntRange(0, len(o.keys)-1).Draw(t, "key")
	forms := KeyForms(o.keys[i])
	var fresh []string
	for _, f := range forms {
		if f != o.keys[i] && (o.s == nil || o.s.Properties == nil || !declared(o.s, f)) {
			fresh = append(fresh, f)
		}
	}
	if len(fresh) == 0 {
		return false
	}
	o.keys[i] = rapid.SampledFrom(fresh).Draw(t, "style")
	return true
}

// KeyForms is key k written in the other styles models use: Title Case,
// camelCase, PascalCase, kebab-case, UPPER_SNAKE and Title_Snake, in that
// order; none when k has no word.
func KeyForms(k string) []string {
	parts := splitKey(k)
	if len(parts) == 0 {
		return nil
	}
	title := func(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
	camel := make([]string, len(parts))
	pascal := make([]string, len(parts))
	for j, p := range parts {
		pascal[j] = title(p)
		camel[j] = pascal[j]
		if j == 0 {
			camel[j] = p
		}
	}
	return []string{strings.Join(pascal, " "), strings.Join(camel, ""), strings.Join(pascal, ""),
		strings.Join(parts, "-"), strings.ToUpper(strings.Join(parts, "_")), strings.Join(pascal, "_")}
}

// splitKey splits a key into lower-case words at _, -, spaces and case
// changes.
func splitKey(k string) []string {
	var parts []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, strings.ToLower(string(cur)))
			cur = nil
		}
	}
	for i, r := range k {
		switch {
		case r == '_' || r == '-' || r == ' ':
			flush()
		case unicode.IsUpper(r) && i > 0:
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return parts
}

var numberNames = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
	"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"}

func numberAsText(t *rapid.T, c *corruption) bool {
	n := pick(t, c.root, "number", func(x *val) bool { return x.kind == 'n' && x.raw == nil })
	if n == nil {
		return false
	}
	x := n.num
	s := fmtNum(x)
	forms := []string{s, s + " points", "Score: " + s}
	lo, hi := bounds(n.s, math.Inf(-1), math.Inf(1))
	if !math.IsInf(hi, 1) && x >= 0 && (math.IsInf(lo, -1) || lo == 0) {
		forms = append(forms, s+"/"+fmtNum(hi), s+" out of "+fmtNum(hi))
	}
	if hi <= 1 && lo >= 0 {
		if k := math.Round(x * 100); k/100 == x {
			forms = append(forms, fmtNum(k)+"%")
		}
	}
	if x == math.Trunc(x) && x >= 0 && x <= 20 {
		forms = append(forms, numberNames[int(x)])
	}
	if x == math.Trunc(x) && x >= 1 && x < 1e6 {
		forms = append(forms, "#"+s, Ordinal(int(x)), "No. "+s)
	}
	if x > 0 && x < 1 {
		forms = append(forms, strings.TrimPrefix(s, "0"))
	}
	if x > 0 {
		forms = append(forms, "+"+s)
	}
	if x == math.Trunc(x) && math.Abs(x) >= 1000 && math.Abs(x) < 1e9 {
		forms = append(forms, thousands(int64(x)))
	}
	if whole := math.Trunc(x); x > 0 && x-whole == 0.5 && whole <= 20 {
		forms = append(forms, fmtNum(whole)+" and a half", fmtNum(whole)+"½", numberNames[int(whole)]+" and a half")
	}
	if whole, tenths := math.Trunc(x), math.Round((x-math.Trunc(x))*10); x > 0 && whole <= 20 && tenths > 0 && whole+tenths/10 == x {
		forms = append(forms, numberNames[int(whole)]+" point "+numberNames[int(tenths)], fmtNum(whole)+","+fmtNum(tenths))
	}
	raw := rapid.SampledFrom(forms).Draw(t, "form")
	n.raw = &raw
	return true
}

// Ordinal writes n as an ordinal: 1st, 2nd, 3rd, 4th, 11th, 21st.
func Ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprint(n) + suffix
}

// thousands writes n with commas between its groups of three digits.
func thousands(n int64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	s := fmt.Sprint(n)
	var groups []string
	for len(s) > 3 {
		groups = append([]string{s[len(s)-3:]}, groups...)
		s = s[:len(s)-3]
	}
	return sign + strings.Join(append([]string{s}, groups...), ",")
}

func boolAsText(t *rapid.T, c *corruption) bool {
	b := pick(t, c.root, "boolean", func(x *val) bool { return x.kind == 'b' && x.raw == nil })
	if b == nil {
		return false
	}
	forms := []string{"no", "No", "false", "FALSE"}
	if b.b {
		forms = []string{"yes", "Yes", "true", "TRUE"}
	}
	raw := rapid.SampledFrom(forms).Draw(t, "form")
	b.raw = &raw
	return true
}

func enumDecorated(t *rapid.T, c *corruption) bool {
	e := pick(t, c.root, "enum", func(x *val) bool { return x.kind == 's' && x.raw == nil && x.s != nil && len(x.s.Enum) > 0 })
	if e == nil {
		return false
	}
	v := e.str
	spaced := strings.ReplaceAll(v, "_", " ")
	forms := []string{"**" + v + "**", "`" + v + "`", strings.ToUpper(spaced[:1]) + spaced[1:], v + ".", v + "!", strings.ToUpper(v)}
	if len([]rune(v)) > 1 {
		forms = append(forms, spaced+" (with minor reservations)", "**"+spaced+"** — on balance")
	}
	var fresh []string
	for _, f := range forms {
		if f != v {
			fresh = append(fresh, f)
		}
	}
	raw := rapid.SampledFrom(fresh).Draw(t, "form")
	e.raw = &raw
	return true
}

// bulletLike matches a text a reader would take for a list line.
var bulletLike = regexp.MustCompile(`^\s*(?:[-*•‣◦▪·–—+]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z][.)])\s`)

func plainItems(x *val) bool {
	if x.kind != 'a' || x.raw != nil || len(x.items) == 0 {
		return false
	}
	for _, it := range x.items {
		if it.kind != 's' || it.raw != nil || it.str == "" || strings.TrimSpace(it.str) != it.str ||
			strings.ContainsAny(it.str, "\n\r") || bulletLike.MatchString(it.str) {
			return false
		}
	}
	return true
}

func listAsBullets(t *rapid.T, c *corruption) bool {
	l := pick(t, c.root, "list", func(x *val) bool { return x != c.root && plainItems(x) })
	if l == nil {
		return false
	}
	marker := rapid.SampledFrom([]string{"- ", "* ", "• ", "1. "}).Draw(t, "marker")
	var lines []string
	if rapid.Bool().Draw(t, "heading") {
		lines = append(lines, "Points:")
	}
	for i, it := range l.items {
		m := marker
		if marker == "1. " {
			m = fmt.Sprintf("%d. ", i+1)
		}
		lines = append(lines, m+it.str)
	}
	raw := strings.Join(lines, "\n")
	l.raw = &raw
	return true
}

func listOfOne(t *rapid.T, c *corruption) bool {
	l := pick(t, c.root, "list", func(x *val) bool {
		// "[1]" alone may be a list written as JSON: not a list of one.
		return x != c.root && plainItems(x) && len(x.items) == 1 && !(strings.HasPrefix(x.items[0].str, "[") && strings.HasSuffix(x.items[0].str, "]"))
	})
	if l == nil {
		return false
	}
	raw := l.items[0].str
	l.raw = &raw
	return true
}

func extraField(t *rapid.T, c *corruption) bool {
	o := pick(t, c.root, "object", func(x *val) bool {
		if x.kind != 'o' || x.raw != nil || x.s == nil || x.s.Properties == nil || !closed(x.s) {
			return false
		}
		for p := x.s.Properties.Oldest(); p != nil; p = p.Next() {
			if strings.Contains(strings.ToLower(p.Key), "remark") {
				return false
			}
		}
		return true
	})
	if o == nil {
		return false
	}
	at := rapid.IntRange(0, len(o.keys)).Draw(t, "at")
	o.keys = append(o.keys[:at:at], append([]string{"model_remark"}, o.keys[at:]...)...)
	o.vals = append(o.vals[:at:at], append([]*val{{kind: 's', str: "written quickly"}}, o.vals[at:]...)...)
	return true
}

var wrappers = []string{"result", "response", "data", "output", "answer", "json"}

func wrapInKey(t *rapid.T, c *corruption) bool {
	k := rapid.SampledFrom(wrappers).Draw(t, "wrapper")
	if c.schema.Properties != nil {
		for p := c.schema.Properties.Oldest(); p != nil; p = p.Next() {
			if strings.EqualFold(strings.ReplaceAll(p.Key, "_", ""), k) {
				return false
			}
		}
	}
	c.root = &val{kind: 'o', keys: []string{k}, vals: []*val{c.root}}
	return true
}

func wrapInList(_ *rapid.T, c *corruption) bool {
	if c.root.kind == 'a' && c.root.raw == nil && c.root.s == c.schema {
		return false // a list schema's own list
	}
	c.root = &val{kind: 'a', items: []*val{c.root}}
	return true
}

// bareList sends an object whose one member is its only list as that
// list.
func bareList(_ *rapid.T, c *corruption) bool {
	r := c.root
	if r.kind != 'o' || r.s != c.schema || len(r.keys) != 1 || r.vals[0].kind != 'a' || r.vals[0].raw != nil {
		return false
	}
	lists := 0
	for p := c.schema.Properties.Oldest(); p != nil; p = p.Next() {
		switch {
		case p.Value.Type == "array":
			lists++
		case required(c.schema, p.Key):
			return false
		}
	}
	if lists != 1 {
		return false
	}
	c.root = r.vals[0]
	return true
}

// spoil makes the reply of v unusable in one way: a required member
// removed or null, a number, an enum or a boolean given as something it
// cannot be read as, or prose alone; written in JSON, it may follow a
// complete draft, its keys under other names; in another format it is
// written in that format (YAML, label-value text, a table, JSON5
// numbers). It returns the reply, what was done,
// and whether a reader may still read it by leaving out the spoiled part
// (it is in a list item, or under an optional member).
func spoil(t *rapid.T, v *val) (string, string, bool, string) {
	text, what, lenient := spoiled(t, v)
	if what == "prose only" {
		return text, what, lenient, FormatJSON
	}
	// The spoiled value in a format drawn: refused in each.
	switch format := rapid.SampledFrom(Formats).Draw(t, "spoiled format"); format {
	case FormatYAML:
		if y, ok := renderYAML(v); ok {
			return y, what, lenient, format
		}
	case FormatLabelValue, FormatTable:
		if l, ok := renderLabels(v, func(k string) string { return k }, format == FormatTable); ok {
			return l, what, lenient, format
		}
	case FormatJSON5:
		return render(v, style{json5: true}), what, lenient, format
	}
	if v.kind == 'o' && v.s != nil && v.s.Properties != nil && rapid.IntRange(0, 3).Draw(t, "a draft before") == 0 {
		// A complete draft before the spoiled answer, which presents
		// itself as corrected, its keys perhaps under other names: the
		// answer is asked again, never read around.
		if rapid.Bool().Draw(t, "keys under other names") {
			for i, k := range v.keys {
				if name := "the_" + k; !declared(v.s, name) && !containsKey(v.keys, name) {
					v.keys[i] = name
				}
			}
			what += ", its keys under other names"
		}
		text = "A first draft:\n" + render(generate(t, v.s, "draft"), style{}) + "\n\nThe corrected answer:\n" + render(v, style{})
		what += ", after a complete draft"
	}
	return text, what, lenient, FormatJSON
}

// spoiled makes the reply of v unusable, as JSON.
func spoiled(t *rapid.T, v *val) (string, string, bool) {
	type site struct {
		obj     *val
		key     int
		lenient bool
	}
	var sites []site
	var visit func(x *val, lenient bool)
	visit = func(x *val, lenient bool) {
		for i, k := range x.keys {
			sites = append(sites, site{x, i, lenient || !required(x.s, k)})
			visit(x.vals[i], lenient || !required(x.s, k))
		}
		for _, it := range x.items {
			// An item is never left out: a spoiled one is asked again.
			visit(it, lenient)
		}
	}
	visit(v, false)
	kinds := []string{"prose only"}
	if len(sites) > 0 {
		kinds = append(kinds, "required member removed", "required member null", "value spoiled", "required text a placeholder")
	}
	switch kind := rapid.SampledFrom(kinds).Draw(t, "spoil"); kind {
	case "prose only":
		return "I would rather say it in words: solar farms on school roofs, run by the pupils.", kind, false
	case "required member removed", "required member null", "required text a placeholder":
		var req []site
		for _, s := range sites {
			if s.obj.s != nil && required(s.obj.s, s.obj.keys[s.key]) {
				req = append(req, s)
			}
		}
		if len(req) == 0 {
			t.Skip("no required member")
		}
		s := req[rapid.IntRange(0, len(req)-1).Draw(t, "member")]
		what := fmt.Sprintf("%s %q", kind, s.obj.keys[s.key])
		// The object itself may be left out where it is lenient; the
		// member is required in it.
		lenient := objectLenient(v, s.obj)
		switch kind {
		case "required member null":
			s.obj.vals[s.key] = &val{kind: 'z'}
		case "required text a placeholder":
			ph := rapid.SampledFrom([]string{"N/A", "TBD", "-", "unknown", ""}).Draw(t, "placeholder")
			if x := s.obj.vals[s.key]; x.kind != 's' || (x.s != nil && len(x.s.Enum) > 0) {
				t.Skip("not a text")
			}
			s.obj.vals[s.key] = &val{kind: 's', str: ph}
		default:
			s.obj.keys = append(s.obj.keys[:s.key:s.key], s.obj.keys[s.key+1:]...)
			s.obj.vals = append(s.obj.vals[:s.key:s.key], s.obj.vals[s.key+1:]...)
		}
		// An item left with no value in any member is an empty item,
		// which a reader may leave out.
		empty := true
		for _, x := range s.obj.vals {
			empty = empty && (x.kind == 'z' || x.kind == 's' && x.raw == nil && isPlaceholder(x.str))
		}
		walk(v, false, func(x *val, inList bool) {
			if x == s.obj && inList && empty {
				lenient = true
			}
		})
		return render(v, style{}), what, lenient
	default:
		var spoilable []site
		for _, s := range sites {
			x := s.obj.vals[s.key]
			if x.kind == 'n' || x.kind == 'b' || (x.kind == 's' && x.s != nil && len(x.s.Enum) > 0) {
				spoilable = append(spoilable, s)
			}
		}
		if len(spoilable) == 0 {
			t.Skip("nothing to spoil")
		}
		s := spoilable[rapid.IntRange(0, len(spoilable)-1).Draw(t, "member")]
		raw := "zzz qqq"
		s.obj.vals[s.key].raw = &raw
		return render(v, style{}), fmt.Sprintf("%s %q", kind, s.obj.keys[s.key]), s.lenient
	}
}

// objectLenient reports whether obj, somewhere in v, is in a list item or
// under an optional member.
func objectLenient(v, obj *val) bool {
	found, lenient := false, false
	var visit func(x *val, l bool)
	visit = func(x *val, l bool) {
		if x == obj {
			found, lenient = true, l
			return
		}
		for i, k := range x.keys {
			visit(x.vals[i], l || !required(x.s, k))
		}
		for _, it := range x.items {
			visit(it, l)
		}
	}
	visit(v, false)
	return found && lenient
}

// closed reports whether an object schema declares properties and no
// others: additionalProperties false, or absent.
func closed(s *jsonschema.Schema) bool {
	if s.AdditionalProperties == nil {
		return true
	}
	b, err := json.Marshal(s.AdditionalProperties)
	return err == nil && string(b) == "false"
}

func declared(s *jsonschema.Schema, name string) bool {
	_, ok := s.Properties.Get(name)
	return ok
}

// hasRawQuote reports whether v holds a text that can be written with its
// double quotes unescaped.
func hasRawQuote(v *val) bool {
	found := false
	walk(v, false, func(x *val, _ bool) {
		found = found || x.kind == 's' && x.raw == nil && unescapable(x.str)
	})
	return found
}

// wrapWithStatus puts the value inside one or two wrappers, each with
// status fields beside it: {"status": "ok", "data": …}.
func wrapWithStatus(t *rapid.T, c *corruption) bool {
	names := map[string]bool{}
	var visit func(s *jsonschema.Schema, depth int)
	visit = func(s *jsonschema.Schema, depth int) {
		if s == nil || depth > 16 {
			return
		}
		if s.Properties != nil {
			for p := s.Properties.Oldest(); p != nil; p = p.Next() {
				names[normal(p.Key)] = true
				visit(p.Value, depth+1)
			}
		}
		visit(s.Items, depth+1)
		for _, a := range s.AnyOf {
			visit(a, depth+1)
		}
	}
	visit(c.schema, 0)
	for _, w := range []string{"status", "data", "result", "code", "success", "response"} {
		if names[w] {
			return false
		}
	}
	if c.root.kind != 'o' && c.root.kind != 'a' {
		return false
	}
	ok := "ok"
	c.root = &val{kind: 'o', keys: []string{"status", "data"}, vals: []*val{{kind: 's', str: ok}, c.root}}
	if rapid.Bool().Draw(t, "two wrappers") {
		c.root = &val{kind: 'o', keys: []string{"success", "code", "response"}, vals: []*val{{kind: 'b', b: true}, {kind: 'n', num: 200}, c.root}}
	}
	return true
}

// placeholder gives an optional field the reply leaves out as "N/A" or
// another word for no value: read as left out.
func placeholder(t *rapid.T, c *corruption) bool {
	type site struct {
		o   *val
		key string
	}
	var sites []site
	walk(c.root, false, func(x *val, _ bool) {
		if x.kind != 'o' || x.raw != nil || x.s == nil || x.s.Properties == nil || len(x.keys) == 0 {
			// An object of placeholders alone is an empty one.
			return
		}
		for p := x.s.Properties.Oldest(); p != nil; p = p.Next() {
			if required(x.s, p.Key) || containsKey(x.keys, p.Key) || enumHas(p.Value, "none") {
				continue
			}
			sites = append(sites, site{x, p.Key})
		}
	})
	if len(sites) == 0 {
		return false
	}
	st := sites[rapid.IntRange(0, len(sites)-1).Draw(t, "placeholder at")]
	word := rapid.SampledFrom([]string{"N/A", "n/a", "TBD", "-", "none", "unknown", "null"}).Draw(t, "placeholder")
	st.o.keys = append(st.o.keys, st.key)
	st.o.vals = append(st.o.vals, &val{kind: 's', raw: &word})
	return true
}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if normal(x) == normal(k) {
			return true
		}
	}
	return false
}

func enumHas(s *jsonschema.Schema, v string) bool {
	if s == nil {
		return false
	}
	for _, e := range s.Enum {
		if es, ok := e.(string); ok && strings.EqualFold(es, v) {
			return true
		}
	}
	return false
}

// synonymKey writes a required key under another name: the reader maps
// it when only one field can be meant, or asks again; it never reads the
// field as null or as another's.
func synonymKey(t *rapid.T, c *corruption) bool {
	o := pick(t, c.root, "object", func(x *val) bool {
		if x.kind != 'o' || x.raw != nil || x.s == nil {
			return false
		}
		for _, k := range x.keys {
			if required(x.s, k) {
				return true
			}
		}
		return false
	})
	if o == nil {
		return false
	}
	var req []int
	for i, k := range o.keys {
		if required(o.s, k) {
			req = append(req, i)
		}
	}
	i := req[rapid.IntRange(0, len(req)-1).Draw(t, "synonym of")]
	name := rapid.SampledFrom([]string{"the_" + o.keys[i], o.keys[i] + "_value", "answer_field", "main_value"}).Draw(t, "synonym")
	if declared(o.s, name) || containsKey(o.keys, name) {
		return false
	}
	o.keys[i] = name
	c.mayRefuse = true
	return true
}

// draftFirst writes another value of the schema before the answer, as a
// draft the reply then corrects.
func draftFirst(t *rapid.T, c *corruption) bool {
	if c.draft != nil || c.root.s != c.schema {
		return false
	}
	c.draft = generate(t, c.schema, "draft")
	set(&c.st.trailingComma, !c.truncate && container(c.root, 1))
	return true
}

func isPlaceholder(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "n/a", "tbd", "-", "unknown", "none", "null":
		return true
	}
	return false
}

// anyDeclared reports whether object o gives a field its schema declares.
func anyDeclared(o *val) bool {
	if o.s == nil || o.s.Properties == nil {
		return false
	}
	for _, k := range o.keys {
		for p := o.s.Properties.Oldest(); p != nil; p = p.Next() {
			if normal(p.Key) == normal(k) {
				return true
			}
		}
	}
	return false
}
