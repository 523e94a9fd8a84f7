//go:build race && unix

package waiting

import (
	"os"
	"strings"
	"syscall"
)

// SkipsExitSleep says whether SkipExitSleep does anything in this build.
const SkipsExitSleep = true

// SkipExitSleep spares a test binary built with -race the race runtime's
// sleep at exit (GORACE's atexit_sleep_ms, 1000 by default), which gives
// goroutines still running after the last test a second to race before the
// final report. A test binary's goroutines have ended with its tests, and
// the testing package fails a test during which a race is found; a race
// found later still makes the binary exit 66. Unless GORACE already sets
// atexit_sleep_ms, it executes the binary again in place (the same process,
// arguments and descriptors) with atexit_sleep_ms=0 added to GORACE: the
// race runtime reads it only as the process starts. Call it first in
// TestMain, before anything starts a server or a process. If the binary
// cannot be executed again, the run goes on as it is.
func SkipExitSleep() {
	gorace := os.Getenv("GORACE")
	if strings.Contains(gorace, "atexit_sleep_ms") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := []string{"GORACE=" + strings.TrimSpace(gorace+" atexit_sleep_ms=0")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	_ = syscall.Exec(exe, os.Args, env) // returns only when it failed
}
