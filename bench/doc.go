// Package bench measures the Redis backend of the SDK's limiter (throttle/redis)
// and the Redis token store against a real Redis, and compares the limiter with
// github.com/go-redis/redis_rate.
//
// It is a separate module (github.com/wecomkit/wecom/bench) so that the peer
// library never enters the SDK's go.mod; the root module's `go test ./...` does
// not descend into it. Everything here is in redis_test.go, multiproc.sh,
// faults.sh (a fleet through a Redis restart or pause) and providers.sh (a
// service provider's 1,000 corps across three processes):
//
//	cd bench
//	REDIS_ADDR=127.0.0.1:6379 go test -run 'Test' -v -count=1 .
//	REDIS_ADDR=127.0.0.1:6379 go test -run XXX -bench . -benchtime 3s .
//	bash multiproc.sh
//	bash faults.sh; MODE=pause bash faults.sh
//	bash providers.sh
//
// Without REDIS_ADDR every test and benchmark skips, saying so. Keys are
// written under a random prefix and deleted when each test ends.
package bench
