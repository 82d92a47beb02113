// Package termui draws live displays on a terminal, a run's progress line
// and a batch's bar, each redrawn in place on one line; and it keeps a
// terminal from acting on the text it is given to show (Escaping).
package termui

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/input"
)

// IsTerminal reports whether f, a reader or a writer, is a terminal.
func IsTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// Progress draws a one-line live display of a run's events on a terminal:
// a spinner, the overall percentage, the stage and elapsed time.
type Progress struct {
	w     io.Writer
	start time.Time

	mu    sync.Mutex
	event madspark.Event
	done  chan struct{}
	wg    sync.WaitGroup
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// NewProgress starts drawing on w, until Stop.
func NewProgress(w io.Writer) *Progress {
	p := &Progress{w: w, start: time.Now(), done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.done:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case <-t.C:
				p.draw(spinner[i%len(spinner)])
			}
		}
	}()
	return p
}

// Event records the latest event; the ticker draws it.
func (p *Progress) Event(e madspark.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Progress < 0 {
		// A fallback notice: show it, keep the percentage.
		e.Progress = p.event.Progress
	}
	p.event = e
}

func (p *Progress) draw(spin string) {
	p.mu.Lock()
	e := p.event
	p.mu.Unlock()
	const width = 20
	filled := e.Progress * width / 100
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	fmt.Fprintf(p.w, "\r\033[K%s %s %3d%% %-11s %s %s", spin, bar, e.Progress, input.Show(e.Stage), input.Show(e.Message),
		time.Since(p.start).Round(100*time.Millisecond))
}

// Stop clears the line.
func (p *Progress) Stop() {
	close(p.done)
	p.wg.Wait()
}

// BatchBar draws a batch's progress on one line of a terminal: a bar of the
// items finished, how many failed and are running, and the time so far.
type BatchBar struct {
	w     io.Writer
	start time.Time
}

// NewBatchBar returns a bar for w; its time runs from now.
func NewBatchBar(w io.Writer) *BatchBar { return &BatchBar{w: w, start: time.Now()} }

// Draw redraws the line.
func (b *BatchBar) Draw(done, total, failed, running int) {
	const width = 24
	filled := done * width / max(total, 1)
	fmt.Fprintf(b.w, "\r\033[K%s%s %d/%d done · %d failed · %d running · %s",
		strings.Repeat("█", filled), strings.Repeat("░", width-filled), done, total, failed, running,
		time.Since(b.start).Round(time.Second))
}

// Clear erases the line.
func (b *BatchBar) Clear() { fmt.Fprint(b.w, "\r\033[K") }

// Escaper is a writer that shows on a terminal what it is given rather
// than have the terminal act on it: every control character but tab and
// line breaks, every bidirectional override and every byte that is not
// UTF-8 is written as an escape (input.ShowText), so that text from a
// store or a model (a topic, a reply) cannot retitle the window, clear the
// screen or fake output. Create one with Escaping; it is safe for
// concurrent use.
type Escaper struct {
	w       io.Writer
	mu      sync.Mutex
	pending []byte // an incomplete UTF-8 sequence, or a final carriage return
}

// Escaping returns an Escaper writing to w.
func Escaping(w io.Writer) *Escaper { return &Escaper{w: w} }

// Write writes p to the underlying writer, escaped. A character cut
// between two writes is escaped whole, with the second.
func (e *Escaper) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	buf := append(e.pending, p...)
	cut := len(buf) - partial(buf)
	if cut == len(buf) && cut > 0 && buf[cut-1] == '\r' {
		cut-- // a line break if a line feed follows
	}
	e.pending = append([]byte(nil), buf[cut:]...)
	if cut == 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(e.w, input.ShowText(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what a Write kept back for the next one, escaped.
func (e *Escaper) Flush() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(e.w, input.ShowText(string(e.pending)))
	e.pending = nil
	return err
}

// partial is the length of the UTF-8 sequence that b ends with when it is
// incomplete, else 0.
func partial(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}
