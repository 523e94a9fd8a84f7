module github.com/wecomkit/wecom/bench

go 1.25.0

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/jarcoal/httpmock v1.4.2
	github.com/redis/go-redis/v9 v9.22.0
	github.com/wecomkit/wecom v0.0.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-resty/resty/v2 v2.17.2 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.43.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
)

replace github.com/wecomkit/wecom => ../
