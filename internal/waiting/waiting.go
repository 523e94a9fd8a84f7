// Package waiting is for the test binaries of packages whose parallel tests
// mostly wait (on servers they kill and restart, on time windows, on child
// processes) rather than use the CPU. The testing package runs at most
// GOMAXPROCS parallel tests at once, which on a 2-core machine leaves such a
// package sleeping through most of its run. (Its test is throttle's
// TestWaitingBound: a package of its own would cost the test run a binary.)
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
	Bound(n)
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
