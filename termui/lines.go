package termui

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/llm"
)

// Lines writes a run's progress where no live display can be drawn (a
// file, a pipe, a service's log): one plain line per event, with the
// time, the stage, the percentage, the event's message and what the run
// has spent so far (usage), and a last line when the run ends.
//
//	14:05:02 generate 10% generating 5 ideas · 0 calls · 0 tokens
type Lines struct {
	w     io.Writer
	usage func() llm.Usage
	start time.Time

	mu   sync.Mutex
	last string
	pct  int
}

// NewLines writes to w; usage, if not nil, tells what the run has spent.
func NewLines(w io.Writer, usage func() llm.Usage) *Lines {
	return &Lines{w: w, usage: usage, start: time.Now()}
}

// Event writes e's line, unless it repeats the last one.
func (l *Lines) Event(e madspark.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Progress >= 0 {
		l.pct = e.Progress
	}
	line := fmt.Sprintf("%s %d%% %s", input.Show(e.Stage), l.pct, input.Show(e.Message))
	if line == l.last {
		return
	}
	l.last = line
	fmt.Fprintf(l.w, "%s %s · %s\n", time.Now().Format("15:04:05"), line, spent(l.usageNow()))
}

// Stop writes the last line, when a line was written: how long the run
// took and what it spent.
func (l *Lines) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == "" {
		return
	}
	fmt.Fprintf(l.w, "%s ended after %s · %s\n", time.Now().Format("15:04:05"), time.Since(l.start).Round(100*time.Millisecond), spent(l.usageNow()))
}

func (l *Lines) usageNow() llm.Usage {
	if l.usage == nil {
		return llm.Usage{}
	}
	return l.usage()
}

// spent is "3 calls · 1830 tokens", the calls made to the provider (not
// those the cache answered) and their tokens.
func spent(u llm.Usage) string {
	calls := "calls"
	if u.LLMCalls == 1 {
		calls = "call"
	}
	return fmt.Sprintf("%d %s · %d tokens", u.LLMCalls, calls, u.InputTokens+u.OutputTokens)
}

// JSONLines writes a run's progress for programs: one JSON object per
// line, for each event and for the run's end:
//
//	{"time":"…","run_id":"…","type":"progress","stage":"generate","progress":10,"message":"…","llm_calls":0,"cached_calls":0,"input_tokens":0,"output_tokens":0,"elapsed_ms":12}
//
// The last one's type is "end".
type JSONLines struct {
	w     io.Writer
	usage func() llm.Usage
	start time.Time

	mu  sync.Mutex
	run string
	pct int
}

// NewJSONLines writes to w; usage, if not nil, tells what the run has
// spent.
func NewJSONLines(w io.Writer, usage func() llm.Usage) *JSONLines {
	return &JSONLines{w: w, usage: usage, start: time.Now()}
}

// ProgressLine is one line JSONLines writes.
type ProgressLine struct {
	Time         time.Time `json:"time"`
	RunID        string    `json:"run_id,omitempty"`
	Type         string    `json:"type"`
	Stage        string    `json:"stage,omitempty"`
	Progress     int       `json:"progress"`
	Message      string    `json:"message,omitempty"`
	LLMCalls     int       `json:"llm_calls"`
	CachedCalls  int       `json:"cached_calls"`
	InputTokens  int       `json:"input_tokens"`
	OutputTokens int       `json:"output_tokens"`
	ElapsedMS    int64     `json:"elapsed_ms"`
}

// Event writes e's line.
func (j *JSONLines) Event(e madspark.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if e.Progress >= 0 {
		j.pct = e.Progress
	}
	j.run = e.RunID
	j.write(ProgressLine{RunID: e.RunID, Type: string(e.Type), Stage: e.Stage, Message: e.Message})
}

// Stop writes the line of the run's end, when a line was written.
func (j *JSONLines) Stop() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.run == "" {
		return
	}
	j.write(ProgressLine{RunID: j.run, Type: "end"})
}

func (j *JSONLines) write(p ProgressLine) {
	var u llm.Usage
	if j.usage != nil {
		u = j.usage()
	}
	p.Time, p.Progress, p.ElapsedMS = time.Now().UTC(), j.pct, time.Since(j.start).Milliseconds()
	p.LLMCalls, p.CachedCalls, p.InputTokens, p.OutputTokens = u.LLMCalls, u.CachedCalls, u.InputTokens, u.OutputTokens
	if p.Type == "" {
		p.Type = string(madspark.EventProgress)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return
	}
	_, _ = j.w.Write(append(b, '\n'))
}
