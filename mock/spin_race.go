//go:build race

package mock

// spinFor is 0 under the race detector: sleepCtx times a wait whole and
// answers up to a millisecond late. A yield costs many times as much there,
// so that the spinning of many calls in flight at once took a tenth of the
// module's test run in CPU (examples/directory's test: 7.4 s of CPU, 2.2 s
// without it), and nothing built for races measures a service time to the
// millisecond.
const spinFor = 0
