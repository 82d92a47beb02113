// Package prompt loads prompt files: embedded defaults that a directory of
// overrides can shadow file by file, a user's own file, and {{include:path}}
// directives resolved recursively.
//
// Prompts are organised as the seeds lay them out: agents/<agent>/system.md
// for an agent's system prompt, agents/<agent>/user/<message>.md for its
// messages, and shared pieces (shared/...) that several prompts include. An
// include names a file by its path from the prompt root, whichever prompt
// includes it:
//
//	{{include:shared/sections.md}}
//
// Included text replaces the directive verbatim, without its final newline,
// before anything else reads the prompt, so an included file may itself
// contain template actions or further includes. A cycle of includes is an
// error that shows the cycle; so is an include that names no file.
package prompt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/madspark/madspark/rootfs"
)

// MaxDepth bounds how deeply includes nest.
const MaxDepth = 32

// MaxSize bounds a prompt's length, in bytes, once its includes are
// resolved: a file that includes another twice, which includes a third
// twice, and so on, would otherwise double at every level.
const MaxSize = 1 << 20

// include matches {{include:path}}, with optional spaces inside the braces.
var include = regexp.MustCompile(`\{\{\s*include:\s*([^{}\s]*)\s*\}\}`)

// Loader finds prompt files in layers: an override directory, when there is
// one, then the built-in prompts. It is safe for concurrent use.
type Loader struct {
	layers []layer
}

type layer struct {
	fsys fs.FS
	name string // for errors: "prompts directory /x" or "built-in prompts"
}

// New returns a loader of the built-in prompts in builtin, shadowed by the
// files in overrideDir when it is not empty. overrideDir must be a
// directory; its files are opened inside it (package rootfs), so a
// symbolic link there that leads out of it is an error. A directory on
// disk given as builtin should be a rootfs.FS for the same reason.
func New(builtin fs.FS, overrideDir string) (*Loader, error) {
	l := &Loader{}
	if overrideDir != "" {
		st, err := os.Stat(overrideDir)
		if err != nil {
			return nil, fmt.Errorf("prompts directory: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("prompts directory %s is not a directory", overrideDir)
		}
		// Opened inside the directory: a link in it that leads out is
		// refused rather than sent to a model.
		l.layers = append(l.layers, layer{rootfs.FS(overrideDir), "prompts directory " + overrideDir})
	}
	l.layers = append(l.layers, layer{builtin, "built-in prompts"})
	return l, nil
}

// ErrNotFound is wrapped by the errors for prompt files that exist in no
// layer.
var ErrNotFound = errors.New("not found")

// Load returns the prompt at name, a slash-separated path from the prompt
// root such as "agents/analyst/system.md", with its includes resolved.
func (l *Loader) Load(name string) (string, error) {
	text, err := l.read(name)
	if err != nil {
		return "", fmt.Errorf("prompt %s: %w", name, err)
	}
	return l.expand(name, text, []string{name})
}

// LoadFile returns the prompt in the file at path on disk, a user's own
// prompt, with its includes resolved from the prompt root.
func (l *Loader) LoadFile(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("prompt %s: %w", file, err)
	}
	return l.expand(file, string(b), []string{file})
}

// SystemPath is where an agent's system prompt called choice lives first,
// as the seed's prompt resolution has it: a simple name such as
// "concise.md" is agents/<agent>/<name>; a path with a "/" is taken as it
// is. An empty choice is the default, agents/<agent>/system.md. See
// SystemPaths for every place a simple name is looked up.
func SystemPath(agent, choice string) string {
	return SystemPaths(agent, choice)[0]
}

// SystemPaths are the places, in order, where an agent's system prompt
// called choice is looked up among the prompts: a simple name is
// agents/<agent>/<name>, then experimental/<agent>/<name>; an empty
// choice is agents/<agent>/system.md; a path with a "/" is itself.
func SystemPaths(agent, choice string) []string {
	switch {
	case choice == "":
		return []string{path.Join("agents", agent, "system.md")}
	case !strings.Contains(choice, "/"):
		return []string{path.Join("agents", agent, choice), path.Join("experimental", agent, choice)}
	}
	return []string{choice}
}

// SystemNames lists the simple names of agent's system prompts in fsys:
// the .md files of agents/<agent>/ and experimental/<agent>/, sorted.
func SystemNames(fsys fs.FS, agent string) []string {
	var names []string
	for _, dir := range []string{path.Join("agents", agent), path.Join("experimental", agent)} {
		entries, _ := fs.ReadDir(fsys, dir)
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	return names
}

// System returns agent's system prompt for choice (see SystemPaths): it is
// looked up in the prompt layers first, then on disk, relative to the
// working directory; an absolute path only on disk. source tells where the
// prompt was found. Not finding it, the error lists the available names.
func (l *Loader) System(agent, choice string) (text, source string, err error) {
	paths := SystemPaths(agent, choice)
	if filepath.IsAbs(paths[0]) {
		text, err = l.LoadFile(paths[0])
		return text, paths[0], err
	}
	for _, p := range paths {
		if rel := path.Clean(p); fs.ValidPath(rel) {
			if _, ok, err := l.find(rel); err != nil {
				return "", "", fmt.Errorf("%s prompt %s: %w", agent, rel, err)
			} else if ok {
				text, err = l.Load(rel)
				return text, rel, err
			}
		}
	}
	if choice != "" {
		if _, statErr := os.Stat(choice); statErr == nil {
			text, err = l.LoadFile(choice)
			return text, choice, err
		}
	}
	var names []string
	for _, ly := range l.layers {
		for _, n := range SystemNames(ly.fsys, agent) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return "", "", fmt.Errorf("%s prompt %q: %w in %s, nor as a file (available: %s)", agent, choice, ErrNotFound, l.where(), strings.Join(names, ", "))
}

// find returns the layer that has name. A layer that holds name but
// cannot open it (a link that leads out of its directory) is an error, not
// a reason to look in the next one.
func (l *Loader) find(name string) (layer, bool, error) {
	for _, ly := range l.layers {
		st, err := fs.Stat(ly.fsys, name)
		switch {
		case err == nil && !st.IsDir():
			return ly, true, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return layer{}, false, fmt.Errorf("in %s: %w", ly.name, err)
		}
	}
	return layer{}, false, nil
}

func (l *Loader) where() string {
	names := make([]string, len(l.layers))
	for i, ly := range l.layers {
		names[i] = ly.name
	}
	return strings.Join(names, " or ")
}

// read returns the text of name from the first layer that has it.
func (l *Loader) read(name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", errors.New("invalid path (want a relative path inside the prompt root, without ..)")
	}
	ly, ok, err := l.find(name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w in %s", ErrNotFound, l.where())
	}
	b, err := fs.ReadFile(ly.fsys, name)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// expand replaces each include directive in text, which was read from
// name, the last entry of stack, by the expanded included file.
func (l *Loader) expand(name, text string, stack []string) (string, error) {
	var firstErr error
	size := len(text)
	out := include.ReplaceAllStringFunc(text, func(directive string) string {
		if firstErr != nil {
			return ""
		}
		target := include.FindStringSubmatch(directive)[1]
		if target == "" {
			firstErr = fmt.Errorf("prompt %s: empty include", name)
			return ""
		}
		target = path.Clean(target)
		for i, s := range stack {
			if s == target {
				cycle := append(append([]string(nil), stack[i:]...), target)
				firstErr = fmt.Errorf("prompt %s: include cycle: %s", stack[0], strings.Join(cycle, " → "))
				return ""
			}
		}
		if len(stack) > MaxDepth {
			firstErr = fmt.Errorf("prompt %s: includes nested deeper than %d", stack[0], MaxDepth)
			return ""
		}
		sub, err := l.read(target)
		if err != nil {
			firstErr = fmt.Errorf("prompt %s: include %s: %w", name, target, err)
			return ""
		}
		expanded, err := l.expand(target, sub, append(stack, target))
		if err != nil {
			firstErr = err
			return ""
		}
		if size += len(expanded); size > MaxSize {
			firstErr = fmt.Errorf("prompt %s: longer than %d bytes once its includes are resolved", stack[0], MaxSize)
			return ""
		}
		return strings.TrimRight(expanded, "\n")
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

// Expand resolves the includes of text, a prompt that is not a file of the
// loader's (a pipeline file's inline prompt); name names it in errors.
func (l *Loader) Expand(name, text string) (string, error) {
	return l.expand(name, text, []string{name})
}
