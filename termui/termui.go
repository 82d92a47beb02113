// Package termui draws live displays on a terminal: a run's progress line
// and a batch's bar, each redrawn in place on one line.
package termui

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/madspark/madspark"
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
	fmt.Fprintf(p.w, "\r\033[K%s %s %3d%% %-11s %s %s", spin, bar, e.Progress, e.Stage, e.Message,
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
