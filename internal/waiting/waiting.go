// Package waiting is for the module's test binaries, called from their
// TestMain. Run (or Main, or redistest's Main) first spares a binary built
// with -race the race runtime's second of sleep at exit (SkipExitSleep), a
// second for each of the module's 16 test binaries. Main also lets a
// package whose parallel tests mostly wait (on servers they kill and
// restart, on time windows, on child processes) run more of them at once
// than the testing package's GOMAXPROCS, which on a 2-core machine leaves
// such a package sleeping through most of its run. (Its tests are
// throttle's TestWaitingBound and TestExitSleepSkipped, and the root
// package's TestEveryTestMainSkipsTheExitSleep: a package of its own would
// cost the test run a binary.)
package waiting

import (
	"flag"
	"strconv"
	"testing"
)

// Main runs m's tests (call it from TestMain) with n parallel tests at
// once, unless the command line gives -test.parallel. It returns m.Run's
// exit code.
func Main(m *testing.M, n int) int {
	SkipExitSleep()
	Bound(n)
	return m.Run()
}

// Run runs m's tests (call it from TestMain) after SkipExitSleep. It
// returns m.Run's exit code.
func Run(m *testing.M) int {
	SkipExitSleep()
	return m.Run()
}

// Bound sets -test.parallel to n unless the command line gives it. Call it
// from TestMain, before m.Run.
func Bound(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
