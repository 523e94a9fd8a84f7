//go:build !race || !unix

package waiting

// SkipsExitSleep says whether SkipExitSleep does anything in this build.
const SkipsExitSleep = false

// SkipExitSleep does nothing here: a binary built without -race does not
// sleep at exit, and one elsewhere than on Unix cannot execute itself in
// place (exitsleep_race.go).
func SkipExitSleep() {}
