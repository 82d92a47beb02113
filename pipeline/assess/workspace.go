package assess

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/madspark/madspark/atomicfile"
)

// The layout under the output directory, as the seed has it.
const (
	analysesDir  = "analyses"
	logsDir      = "logs/runs"
	iterDir      = "iterations"
	historyDir   = "history"
	analysisFile = "analysis.md"
	metadataFile = "metadata.json"
	evalFile     = "evaluation.json"
	messagesFile = "messages.jsonl"
	summaryFile  = "run_summary.json"
	stampLayout  = "20060102_150405"
)

func iterationFile(n int) string { return fmt.Sprintf("iteration_%d.md", n) }
func feedbackFile(n int) string  { return fmt.Sprintf("reviewer_feedback_iteration_%d.json", n) }
func factFile(n int) string      { return fmt.Sprintf("fact_check_iteration_%d.json", n) }

// workspace is where one run writes: analyses/{slug}/ and
// logs/runs/{timestamp}_{slug}/ under the output directory.
type workspace struct {
	root   string
	slug   string
	dir    string
	logDir string
	// symlink replaces newname by a symbolic link to oldname atomically.
	symlink func(oldname, newname string) error
	// release gives the analysis directory back to other runs.
	release func()
}

// path returns the absolute-or-root-relative path of name in the analysis
// directory.
func (w *workspace) path(name ...string) string {
	return filepath.Join(append([]string{w.dir}, name...)...)
}

// rel returns p relative to the output directory, slash-separated.
func (w *workspace) rel(p string) string {
	if r, err := filepath.Rel(w.root, p); err == nil {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(p)
}

// pointLatest schedules analysis.md to point at iteration n: a relative
// symbolic link, swapped in atomically; where links cannot be made, a copy
// of text, written atomically.
func (w *workspace) pointLatest(out *writer, n int, text string) {
	link := w.path(analysisFile)
	target := filepath.Join(iterDir, iterationFile(n))
	out.enqueue(link, func() error {
		if err := w.symlink(target, link); err == nil {
			return nil
		}
		return atomicfile.Write(link, []byte(text))
	})
}

// claimDir picks the analysis directory of idea under root and prepares it.
// The directory is the idea's slug, or slug-2, slug-3, … when another idea
// already has it (its metadata.json names that idea) or busy says another
// run holds it. Files of an earlier run of the same idea are moved to
// history/{timestamp}_{run}/ so that nothing is lost and nothing stale
// stays beside the new files.
func claimDir(root, idea string, busy func(dir string) bool, now time.Time) (slug, dir string, err error) {
	base := Slug(idea)
	for i := 1; i < 1000; i++ {
		slug = base
		if i > 1 {
			suffix := fmt.Sprintf("-%d", i)
			slug = cut(base, MaxSlugLen-len(suffix)) + suffix
		}
		if !filepath.IsLocal(slug) {
			return "", "", fmt.Errorf("slug %q is not a local path", slug)
		}
		dir = filepath.Join(root, analysesDir, slug)
		if busy(dir) {
			continue
		}
		prev, err := readMetadata(filepath.Join(dir, metadataFile))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			// Unreadable metadata: the directory is not ours to reuse.
			continue
		case prev.Idea != idea:
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", "", fmt.Errorf("analysis directory: %w", err)
		}
		if err := archive(dir, prev, now); err != nil {
			return "", "", err
		}
		return slug, dir, nil
	}
	return "", "", fmt.Errorf("no free analysis directory for %q under %s", base, filepath.Join(root, analysesDir))
}

func readMetadata(path string) (*Metadata, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// archive moves everything in dir but history/ into
// history/{timestamp}_{run}/, named after the earlier run when its
// metadata is known.
func archive(dir string, prev *Metadata, now time.Time) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("analysis directory: %w", err)
	}
	var move []string
	for _, e := range entries {
		if e.Name() != historyDir && !strings.HasPrefix(e.Name(), ".") {
			move = append(move, e.Name())
		}
	}
	if len(move) == 0 {
		return nil
	}
	name := now.UTC().Format(stampLayout)
	if prev != nil {
		name = prev.CreatedAt.UTC().Format(stampLayout)
		if len(prev.RunID) >= 8 && filepath.IsLocal(prev.RunID) {
			name += "_" + prev.RunID[len(prev.RunID)-8:]
		}
	}
	dst := filepath.Join(dir, historyDir, name)
	for i := 2; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = filepath.Join(dir, historyDir, fmt.Sprintf("%s_%d", name, i))
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("archive earlier run: %w", err)
	}
	for _, n := range move {
		if err := os.Rename(filepath.Join(dir, n), filepath.Join(dst, n)); err != nil {
			return fmt.Errorf("archive earlier run: %w", err)
		}
	}
	return nil
}

// makeLogDir creates logs/runs/{timestamp}_{slug} under root, with a
// suffix when a run of the same slug started in the same second.
func makeLogDir(root, slug string, start time.Time) (string, error) {
	parent := filepath.Join(root, filepath.FromSlash(logsDir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("log directory: %w", err)
	}
	base := start.UTC().Format(stampLayout) + "_" + slug
	for i := 1; ; i++ {
		dir := filepath.Join(parent, base)
		if i > 1 {
			dir = filepath.Join(parent, fmt.Sprintf("%s_%d", base, i))
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || i > 1000 {
			return "", fmt.Errorf("log directory: %w", err)
		}
	}
}

// IterationMeta is one iteration as metadata.json lists it.
type IterationMeta struct {
	Number           int    `json:"number"`
	File             string `json:"file"`
	Words            int    `json:"words"`
	FeedbackFile     string `json:"feedback_file,omitempty"`
	Recommendation   string `json:"recommendation,omitempty"`
	FactCheckFile    string `json:"fact_check_file,omitempty"`
	FactCheckVerdict string `json:"fact_check_verdict,omitempty"`
}

// Metadata is analyses/{slug}/metadata.json: what the directory holds and
// how it was made. It is rewritten after every iteration.
type Metadata struct {
	Idea            string            `json:"idea"`
	Slug            string            `json:"slug"`
	RunID           string            `json:"run_id"`
	PipelineMode    Mode              `json:"pipeline_mode"`
	FactCheck       bool              `json:"fact_check"`
	Mode            string            `json:"mode"`
	Status          string            `json:"status"`
	Error           string            `json:"error,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
	Iterations      []IterationMeta   `json:"iterations"`
	LatestIteration int               `json:"latest_iteration"`
	Approved        bool              `json:"approved"`
	StopReason      string            `json:"stop_reason,omitempty"`
	WebTools        bool              `json:"web_tools"`
	WebNote         string            `json:"web_note,omitempty"`
	Searches        int               `json:"searches"`
	Evaluation      string            `json:"evaluation,omitempty"`
	WeightedScore   *float64          `json:"weighted_score,omitempty"`
	LogDir          string            `json:"log_dir"`
	Prompts         map[string]string `json:"prompts"`
	Params          Params            `json:"params"`
}

// writer writes a run's files in a goroutine of its own, in the order they
// are given, so that the pipeline's next call does not wait for the disk
// (each file is synced before it is renamed into place). A file given again
// before its earlier version was written is written once, with the later
// data, after everything given before it. Flush waits until every file
// given so far is written; settled waits for those given before a mark. It
// is safe for concurrent use.
type writer struct {
	mu       sync.Mutex
	idle     sync.Cond
	pending  []writeOp
	busy     bool   // a goroutine is writing
	seq      uint64 // of the last file given
	inflight uint64 // seq of the file being written, 0 if none
	err      error
}

type writeOp struct {
	seq  uint64
	path string
	do   func() error
}

func newWriter() *writer {
	w := &writer{}
	w.idle.L = &w.mu
	return w
}

// enqueue schedules do, which writes path.
func (w *writer) enqueue(path string, do func() error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = slices.DeleteFunc(w.pending, func(o writeOp) bool { return o.path == path })
	w.seq++
	w.pending = append(w.pending, writeOp{w.seq, path, do})
	if !w.busy {
		w.busy = true
		go w.drain()
	}
}

// drain writes the pending files until there are none, then ends.
func (w *writer) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 {
		op := w.pending[0]
		w.pending = w.pending[1:]
		w.inflight = op.seq
		w.mu.Unlock()
		err := op.do()
		w.mu.Lock()
		w.inflight = 0
		if err != nil && w.err == nil {
			w.err = err
		}
		w.idle.Broadcast()
	}
	w.busy = false
	w.idle.Broadcast()
}

// write schedules data to be written to path atomically. data must not be
// changed afterwards.
func (w *writer) write(path string, data []byte) {
	w.enqueue(path, func() error { return atomicfile.Write(path, data) })
}

// writeJSON encodes v now and schedules it to be written to path.
func (w *writer) writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	w.write(path, append(b, '\n'))
	return nil
}

// failed returns the first error of a write done so far.
func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// mark names the files given so far, for settled.
func (w *writer) mark() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// settled waits until every file given before mark m is written (or given
// again since, with later data), and returns the first error of a write
// done so far.
func (w *writer) settled(m uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.err == nil && w.before(m) {
		w.idle.Wait()
	}
	return w.err
}

// before reports whether a file given before mark m is still to be
// written. w.mu is held.
func (w *writer) before(m uint64) bool {
	if w.inflight != 0 && w.inflight <= m {
		return true
	}
	return slices.ContainsFunc(w.pending, func(o writeOp) bool { return o.seq <= m })
}

// flush waits until every file given so far is written, and returns the
// first error of any write.
func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.busy {
		w.idle.Wait()
	}
	return w.err
}
