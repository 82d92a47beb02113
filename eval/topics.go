package eval

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/madspark/madspark/pipeline"
)

//go:embed topics/*.txt
var builtinFS embed.FS

// BuiltinSource is the topics source that names the built-in set of the
// pipeline.
const BuiltinSource = "builtin"

// BuiltinPipelines lists the pipelines with a built-in topic set.
func BuiltinPipelines() []string {
	entries, _ := fs.ReadDir(builtinFS, "topics")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".txt"))
	}
	return out
}

// Builtin returns the built-in topic set of pipeline name, in the text
// form Topics reads.
func Builtin(name string) ([]byte, error) {
	data, err := builtinFS.ReadFile(path.Join("topics", name+".txt"))
	if err != nil {
		return nil, fmt.Errorf("no built-in topics for %s (built-in sets: %s)", name, strings.Join(BuiltinPipelines(), ", "))
	}
	return data, nil
}

// ErrNoTopics is wrapped by Topics' error for a source without a topic.
var ErrNoTopics = errors.New("no topics")

// Topics reads the topics of an eval of the named pipeline from data, one
// per line: a line that starts with "{" is a JSON object of the pipeline's
// parameters (those left out take their defaults); any other line is the
// pipeline's one-line query (spark's topic, chaos's prompt, debate's query,
// assess's idea). Blank lines and lines starting with "#" are skipped.
// Each topic is decoded and validated by the registry, as a run's
// parameters are, and returned as the complete parameters it decoded to.
// At most limit topics are read when limit is positive. Every error names
// the line; src names the source in it.
func Topics(reg *pipeline.Registry, name, src string, data []byte, limit int) ([]map[string]any, error) {
	def, err := reg.Get(name)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		var raw []byte
		if strings.HasPrefix(line, "{") {
			raw = []byte(line)
		} else {
			if def.QueryParam == "" {
				return nil, fmt.Errorf("%s line %d: %s takes JSON lines of its parameters, not one line of text", src, n, name)
			}
			raw, _ = json.Marshal(map[string]string{def.QueryParam: line})
		}
		p, err := Normalize(reg, name, raw)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", src, n, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w (one per line, or JSON lines of %s's parameters)", src, ErrNoTopics, name)
	}
	return out, nil
}

// Normalize decodes raw as the named pipeline's parameters and returns them
// complete, defaults and prepared fields (chaos's seed) included, so that a
// topic stored with an eval runs the same way when it is resumed.
func Normalize(reg *pipeline.Registry, name string, raw []byte) (map[string]any, error) {
	p, err := reg.Decode(name, raw)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("%s parameters: %w", name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s parameters: %w", name, err)
	}
	return m, nil
}

// TopicList reads topics given as a list, as an API request gives them:
// each item a one-line query (a string) or an object of the pipeline's
// parameters. It checks and completes them as Topics does; errors name
// the item from 1. At most limit topics are read when limit is positive.
func TopicList(reg *pipeline.Registry, name string, items []any, limit int) ([]map[string]any, error) {
	def, err := reg.Get(name)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for i, item := range items {
		if limit > 0 && len(out) == limit {
			break
		}
		var raw []byte
		switch v := item.(type) {
		case string:
			if def.QueryParam == "" {
				return nil, fmt.Errorf("topics item %d: %s takes objects of its parameters, not one line of text", i+1, name)
			}
			raw, _ = json.Marshal(map[string]string{def.QueryParam: strings.Join(strings.Fields(v), " ")})
		case map[string]any:
			raw, _ = json.Marshal(v)
		default:
			return nil, fmt.Errorf("topics item %d: want a string or an object of %s's parameters", i+1, name)
		}
		p, err := Normalize(reg, name, raw)
		if err != nil {
			return nil, fmt.Errorf("topics item %d: %w", i+1, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("topics: %w", ErrNoTopics)
	}
	return out, nil
}
