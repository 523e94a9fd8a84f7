package throttle_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// At most 5 holders per key, and at most 10,000 acquisitions a minute and
// 150,000 an hour, among the goroutines sharing the backend.
func ExampleMemory() {
	lim := throttle.NewMemory()
	r := throttle.Request{
		Key:         "{corp}/cgi-bin/tag/list",
		Concurrency: 5,
		Windows:     []throttle.Window{{Limit: 10000, Period: time.Minute}, {Limit: 150000, Period: time.Hour}},
	}
	ctx := context.Background()
	l, err := lim.Acquire(ctx, r)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = lim.Release(ctx, l) }()
	fmt.Println("holds a slot:", l.HoldsSlot())
	// Output: holds a slot: true
}

// A call that edits one customer takes the API's slot and the customer's
// lock in one step: while the customer is locked by another call, it waits
// without holding one of the API's 5 slots.
func ExampleRequest_with() {
	lim := throttle.NewMemory()
	ctx := context.Background()
	l, err := lim.Acquire(ctx, throttle.Request{
		Key:         "{corp}/cgi-bin/externalcontact/mark_tag",
		Concurrency: 5,
		With:        []throttle.Request{{Key: "{corp}@customer-edit|zhangsan|wmXXXX", Concurrency: 1}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(l.With), l.With[0].HoldsSlot())
	// Release frees both.
	if err := lim.Release(ctx, l); err != nil {
		log.Fatal(err)
	}
	// Output: 1 true
}
