package flow_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark/flow"
)

// TestOutputSchemaStaysInTheFile: a pipeline file's output_schema is
// data: a reference that leaves it — to a file, a FIFO, the terminal, a
// URL — or a $schema other than a known draft, is the file's problem,
// named with its line, and nothing is opened; the same message whether
// the file named exists or not.
func TestOutputSchemaStaysInTheFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"object","properties":{"token":{"const":"s3cr3t"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	file := func(schema string) string {
		return "name: leaky\ninputs:\n  topic: {type: string, required: true}\nagents:\n  a:\n    prompt: \"About {{.topic}}\"\n    output_schema: " + schema + "\nsteps: [a]\n"
	}
	var seen []string
	for _, tc := range []struct{ schema, want string }{
		{`{type: object, properties: {x: {$ref: "file://` + secret + `"}}}`, `"file://` + secret + `"`},
		{`{type: object, properties: {x: {$ref: "file://` + filepath.Join(dir, "missing.json") + `"}}}`, `"file://` + filepath.Join(dir, "missing.json") + `"`},
		{`{type: object, properties: {x: {$ref: "file://` + fifo + `"}}}`, `"file://` + fifo + `"`},
		{`{type: object, properties: {x: {type: string}}, not: {$ref: "file:///dev/stdin"}}`, `"file:///dev/stdin"`},
		{`{$schema: "http://127.0.0.1:1/meta", type: object, properties: {x: {type: string}}}`, `"http://127.0.0.1:1/meta"`},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := flow.Parse("leaky.yaml", []byte(file(tc.schema)), nil)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: not refused within 5 s", tc.schema)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "leaky.yaml:") {
			t.Errorf("%s: %v, want the file's problem naming %s", tc.schema, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the problem %q shows the file's content", err)
		}
		seen = append(seen, strings.NewReplacer(secret, "P", filepath.Join(dir, "missing.json"), "P", fifo, "P").Replace(err.Error()))
	}
	if seen[0] != seen[1] || seen[0] != seen[2] {
		t.Errorf("the problems differ with the file named: %q", seen[:3])
	}
}
