module github.com/wecomkit/wecom

go 1.25.0

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/go-resty/resty/v2 v2.17.2
	github.com/jarcoal/httpmock v1.4.2
	github.com/redis/go-redis/v9 v9.22.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.43.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
)
