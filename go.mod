module github.com/wecomkit/wecom

go 1.25.0

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/go-resty/resty/v2 v2.17.2
	github.com/jarcoal/httpmock v1.4.2
)

require golang.org/x/net v0.43.0 // indirect
