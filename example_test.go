package wecom_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

// exampleClient starts a fake WeCom with one app and two users, and returns a
// client of that app.
func exampleClient() (c *wecom.Client, stop func()) {
	m, err := mock.New(mock.Config{})
	if err != nil {
		log.Fatal(err)
	}
	m.AddApp("wwexample", "example-secret")
	m.AddUsers("wwexample", "zhangsan", "lisi")
	srv := m.Start()
	c, err = wecom.New("wwexample", "example-secret", wecom.WithBaseURL(srv.URL))
	if err != nil {
		log.Fatal(err)
	}
	return c, srv.Close
}

// Create a contact tag, add members (one of them unknown to WeCom) and read
// them back.
func Example() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	id, err := c.Tags.Create(ctx, wecom.TagCreateRequest{Name: "VIP"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Tags.AddMembers(ctx, wecom.TagMembersRequest{TagID: id, Users: []string{"zhangsan", "lisi", "ghost"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("invalid:", res.InvalidUsers)
	m, err := c.Tags.Members(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	for _, u := range m.Users {
		fmt.Println("member:", u.UserID)
	}
	// Output:
	// invalid: [ghost]
	// member: lisi
	// member: zhangsan
}

// Mark a customer tag on many customers from many goroutines: the client keeps
// WeCom's limits (5 mark_tag calls in flight per corp, one per customer) by
// itself, so no worker pool is needed.
func ExampleCustomerTagService_Mark() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	g, err := c.CustomerTags.Add(ctx, wecom.CorpTagAddRequest{GroupName: "campaign", Tags: []wecom.CorpTagSpec{{Name: "2026-spring"}}})
	if err != nil {
		log.Fatal(err)
	}
	errs := make(chan error)
	for i := range 50 {
		go func() {
			errs <- c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{
				UserID:         "zhangsan",
				ExternalUserID: fmt.Sprintf("wm%03d", i%10), // each customer five times
				AddTags:        []string{g.Tags[0].ID},
			})
		}()
	}
	failed := 0
	for range 50 {
		if <-errs != nil {
			failed++
		}
	}
	fmt.Println("failed:", failed)
	// Output: failed: 0
}

// Several clients (one per corp or app) share one limiter and one token store,
// and every limit can be overridden.
func ExampleNew() {
	limiter := throttle.NewMemory()
	tokens := wecom.NewMemoryTokenStore()
	// Another system shares the corp's mark_tag budget: keep 3 of its 5
	// slots; the per-minute and per-hour windows stay as documented.
	strict := wecom.Limits{Concurrency: 3}
	for _, app := range []struct{ corp, secret string }{{"wwcorp1", "secret-1"}, {"wwcorp2", "secret-2"}} {
		c, err := wecom.New(app.corp, app.secret,
			wecom.WithLimiter(limiter),
			wecom.WithTokenStore(tokens),
			wecom.WithLimits("/cgi-bin/externalcontact/mark_tag", strict),
			wecom.WithAttemptTimeout(10*time.Second),
		)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("client for", c.CorpID())
	}
	// Output:
	// client for wwcorp1
	// client for wwcorp2
}

// Branch on the class of a failure with errors.Is and errors.As.
func ExampleRateLimitError() {
	c, stop := exampleClient()
	defer stop()
	_, err := c.Tags.Members(context.Background(), 404)
	var rl *wecom.RateLimitError
	var ae *wecom.APIError
	switch {
	case errors.As(err, &rl):
		fmt.Println("rate limited; retry after", rl.RetryAfter)
	case errors.Is(err, wecom.ErrConcurrencyLimited):
		fmt.Println("too many calls at once")
	case errors.As(err, &ae):
		fmt.Println("WeCom errcode", ae.Code)
	}
	// Output: WeCom errcode 40068
}

// APIs the SDK does not wrap go through Do, with the same limits and retries.
func ExampleClient_Do() {
	c, stop := exampleClient()
	defer stop()
	var out struct {
		Tags []struct {
			ID   int    `json:"tagid"`
			Name string `json:"tagname"`
		} `json:"taglist"`
	}
	if err := c.Do(context.Background(), "GET", "/cgi-bin/tag/list", nil, nil, &out); err != nil {
		log.Fatal(err)
	}
	fmt.Println("tags:", len(out.Tags))
	// Output: tags: 0
}

// Tag every customer of some members: walk their (member, customer) pairs
// with ByMembers, page after page as the loop asks for them, and mark the
// pairs that lack the tag. Breaking out of the loop, or an error, ends the
// walk; no page is read twice or skipped.
func ExampleCustomerService_ByMembers() {
	m, err := mock.New(mock.Config{})
	if err != nil {
		log.Fatal(err)
	}
	m.AddApp("wwexample", "example-secret")
	m.AddCustomers("wwexample", "zhangsan", "wmA", "wmB")
	m.AddCustomers("wwexample", "lisi", "wmB")
	srv := m.Start()
	defer srv.Close()
	c, err := wecom.New("wwexample", "example-secret", wecom.WithBaseURL(srv.URL))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	g, err := c.CustomerTags.Add(ctx, wecom.CorpTagAddRequest{GroupName: "campaign", Tags: []wecom.CorpTagSpec{{Name: "2026-autumn"}}})
	if err != nil {
		log.Fatal(err)
	}
	members, err := c.Customers.FollowUsers(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for mc, err := range c.Customers.ByMembers(ctx, members) {
		if err != nil {
			log.Fatal(err)
		}
		err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: mc.Follow.UserID, ExternalUserID: mc.Contact.ExternalUserID, AddTags: []string{g.Tags[0].ID}})
		fmt.Println(mc.Follow.UserID, mc.Contact.ExternalUserID, err)
	}
	// Output:
	// lisi wmB <nil>
	// zhangsan wmA <nil>
	// zhangsan wmB <nil>
}

// A call that must wait more than a second for its limits says so before it
// waits: here the tag list is limited to one call a minute, and the caller
// of the second call gives up when told how long it would wait.
func ExampleWithStallObserver() {
	m, err := mock.New(mock.Config{})
	if err != nil {
		log.Fatal(err)
	}
	m.AddApp("wwexample", "example-secret")
	srv := m.Start()
	defer srv.Close()
	ctx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	c, err := wecom.New("wwexample", "example-secret", wecom.WithBaseURL(srv.URL),
		wecom.WithLimits("/cgi-bin/tag/list", wecom.Limits{Concurrency: 5, PerMinute: 1}),
		wecom.WithStallObserver(func(_ context.Context, path string, s throttle.Stall) {
			fmt.Printf("%s waits for a full %s window, about %s\n", path, s.Reason, time.Until(s.Until).Round(time.Minute))
			giveUp()
		}))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Tags.List(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = c.Tags.List(ctx)
	fmt.Println(errors.Is(err, context.Canceled))
	// Output:
	// /cgi-bin/tag/list waits for a full rate window, about 1m0s
	// true
}

// Upload a file, streamed from any reader, and download it again, streamed
// to any writer.
func ExampleMediaService_Upload() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	m, err := c.Media.Upload(ctx, wecom.UploadRequest{Type: wecom.MediaFile, Filename: "季度报告.txt", Body: strings.NewReader("revenue up 12%")})
	if err != nil {
		log.Fatal(err)
	}
	var out strings.Builder
	f, err := c.Media.Download(ctx, m.ID, &out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Name, f.Size, out.String())
	// Output:
	// 季度报告.txt 14 revenue up 12%
}

// The JS-SDK ticket is cached and shared as the access token is: the two
// calls below fetch it once.
func ExampleClient_JSAPITicket() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	first, err := c.JSAPITicket(ctx)
	if err != nil {
		log.Fatal(err)
	}
	again, err := c.JSAPITicket(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first == again, len(first) > 0)
	// Output:
	// true true
}

// Send a message to two members. Send waits until each has room in the
// windows of 30 a minute and 1,000 an hour per app, beyond which WeCom
// would drop it without an error.
func ExampleMessageService_Send() {
	c, stop := exampleClient()
	defer stop()
	res, err := c.Messages.Send(context.Background(), wecom.Message{
		ToUser:         []string{"zhangsan", "lisi", "nobody"},
		AgentID:        1000002,
		Content:        &wecom.TextMessage{Content: "The build is green"},
		DuplicateCheck: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("unknown to WeCom:", res.InvalidUsers)
	// Output: unknown to WeCom: [nobody]
}

// Send a group robot's messages with its webhook key alone: no corp id,
// secret or token. A run of sends waits for room in the robot's 20 messages
// a minute instead of being refused.
func ExampleNewRobot() {
	m, err := mock.New(mock.Config{})
	if err != nil {
		log.Fatal(err)
	}
	const key = "693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa" // from the webhook URL's key=
	m.AddRobot(key)
	srv := m.Start()
	defer srv.Close()

	robot, err := wecom.NewRobot(key, wecom.WithBaseURL(srv.URL))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	err = robot.Send(ctx, &wecom.RobotText{Content: "广州今日天气：29度", Mentioned: []string{"wangqing"}})
	if err != nil {
		log.Fatal(err)
	}
	file, err := robot.Upload(ctx, wecom.UploadRequest{Type: wecom.MediaFile, Filename: "report.csv", Body: strings.NewReader("day,sent\nmon,20\n")})
	if err != nil {
		log.Fatal(err)
	}
	if err := robot.Send(ctx, &wecom.RobotFile{MediaID: file.ID}); err != nil {
		log.Fatal(err)
	}
	for _, msg := range m.RobotMessages(key) {
		fmt.Println(msg.MsgType)
	}
	// Output:
	// text
	// file
}
