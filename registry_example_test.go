package wecom_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

// A company with two corps: one registry builds each corp's client on
// first use from a file of credentials, every client sharing one limiter,
// one token store and one transport, and the per-IP limits of the egress
// they all leave from.
func ExampleRegistry() {
	m, err := mock.New(mock.Config{})
	if err != nil {
		log.Fatal(err)
	}
	m.AddApp("wwnorth", "north-secret")
	m.AddApp("wwsouth", "south-secret")
	srv := m.Start()
	defer srv.Close()

	creds, err := wecom.ReadCredentials(strings.NewReader(`[
		{"corp_id": "wwnorth", "secret": "north-secret"},
		{"corp_id": "wwsouth", "secret": "south-secret"}
	]`))
	if err != nil {
		log.Fatal(err)
	}
	reg, err := wecom.NewRegistry(creds, wecom.WithClientOptions(
		wecom.WithBaseURL(srv.URL),
		wecom.WithLimiter(throttle.NewMemory()), // or a Redis backend, for a fleet
		wecom.WithEgress("203.0.113.7"),
	))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, corp := range []string{"wwnorth", "wwsouth"} {
		c, err := reg.Client(ctx, wecom.App{CorpID: corp})
		if err != nil {
			log.Fatal(err)
		}
		id, err := c.Tags.Create(ctx, wecom.TagCreateRequest{Name: "VIP"})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: tag %d created\n", corp, id)
	}
	fmt.Println("clients:", reg.Len())
	// Output:
	// wwnorth: tag 1 created
	// wwsouth: tag 1 created
	// clients: 2
}
