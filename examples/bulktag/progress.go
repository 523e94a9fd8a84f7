package main

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// progressEvery is how often progress is shown: on a terminal one line is
// rewritten in place; elsewhere (a log file, CI) a new line is written at a
// slower pace, so that a log holds a readable history.
func progressEvery(tty bool) time.Duration {
	if tty {
		return 500 * time.Millisecond
	}
	return 5 * time.Second
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// startProgress shows the marks ended so far on w, every interval (0:
// progressEvery's default), until the function it
// returns is called; that writes the final state (100% when every mark
// ended), ends the line, and returns once it is out. waiting says what the
// marks wait for besides slots, if anything, appended to the line. tick is
// called at every update (the fleet counter flushes there).
func startProgress(w io.Writer, tty bool, every time.Duration, n *counts, fed <-chan struct{}, start time.Time, waiting func(time.Time) string, tick func()) (stop func()) {
	if every <= 0 {
		every = progressEvery(tty)
	}
	stopc, done := make(chan struct{}), make(chan struct{})
	show := func() {
		ended, total, more := n.ok.Load()+n.failed.Load(), n.queued.Load(), "+"
		select {
		case <-fed:
			more = ""
		default:
		}
		line := fmt.Sprintf("marked %d/%d%s (%.0f%%, %.0f/s)", ended, total, more, 100*float64(ended)/float64(max(total, 1)),
			float64(ended)/max(time.Since(start).Seconds(), 1e-9))
		if why := waiting(time.Now()); why != "" {
			line += ", " + why
		}
		if tty {
			fmt.Fprintf(w, "\r%s   ", line)
		} else {
			fmt.Fprintln(w, line)
		}
	}
	// A tick may wait on a Redis that does not answer: it runs beside the
	// line, which then says so, one tick at a time.
	var ticking atomic.Bool
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stopc:
				tick()
				show()
				if tty {
					fmt.Fprintln(w)
				}
				return
			case <-t.C:
				show()
				if ticking.CompareAndSwap(false, true) {
					go func() {
						defer ticking.Store(false)
						tick()
					}()
				}
			}
		}
	}()
	return func() {
		close(stopc)
		<-done
	}
}
