package cmdline

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/madspark/madspark"
)

// Interruption is the cause of a command's context ended by a signal
// (Ctrl-C, SIGTERM). It wraps madspark.ErrInterrupted, so that the runs
// the command was working are recorded as interrupted, to be resumed.
type Interruption struct{ Signal os.Signal }

func (i Interruption) Error() string {
	if i.Signal == os.Interrupt {
		return "interrupted (Ctrl-C)"
	}
	return "interrupted (" + signalName(i.Signal) + ")"
}

func (i Interruption) Unwrap() error { return madspark.ErrInterrupted }

// ExitCode is the exit status of a command stopped by the signal, as a
// shell reports a process killed by it: 130 for SIGINT, 143 for SIGTERM.
func (i Interruption) ExitCode() int {
	if s, ok := i.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// NotifyContext returns a copy of parent that ends, with an Interruption
// as its cause, at the first SIGINT or SIGTERM. A second signal is no
// longer caught: it stops the process as usual. stop releases the
// signals.
func NotifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			cancel(Interruption{Signal: s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}
