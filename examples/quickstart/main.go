// Command quickstart creates a contact tag, adds members to it and lists them.
//
// Without credentials it runs against an embedded mock WeCom:
//
//	go run ./examples/quickstart
//
// With real ones (the app must be allowed to manage contact tags):
//
//	WECOM_CORP_ID=ww... WECOM_SECRET=... go run ./examples/quickstart -users zhangsan,lisi
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	corpID := flag.String("corp-id", os.Getenv("WECOM_CORP_ID"), "corp id (default $WECOM_CORP_ID; empty: use the embedded mock)")
	secret := flag.String("secret", os.Getenv("WECOM_SECRET"), "app secret (default $WECOM_SECRET)")
	baseURL := flag.String("base-url", "", "API base URL (default: WeCom with credentials, else the embedded mock)")
	users := flag.String("users", "zhangsan,lisi,nobody", "comma-separated user ids to tag")
	flag.Parse()

	var opts []wecom.Option
	if *corpID == "" || *secret == "" {
		*corpID, *secret = "wwquickstart", "quickstart-secret"
		m, err := mock.New(mock.Config{Latency: 5 * time.Millisecond})
		if err != nil {
			return err
		}
		m.AddApp(*corpID, *secret)
		m.AddUsers(*corpID, "zhangsan", "lisi")
		srv := m.Start()
		defer srv.Close()
		*baseURL = srv.URL
		fmt.Println("using the embedded mock WeCom at", srv.URL)
	}
	if *baseURL != "" {
		opts = append(opts, wecom.WithBaseURL(*baseURL))
	}
	c, err := wecom.New(*corpID, *secret, opts...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	name := fmt.Sprintf("quickstart-%d", time.Now().Unix()%100000)
	id, err := c.Tags.Create(ctx, wecom.TagCreateRequest{Name: name})
	if err != nil {
		return fmt.Errorf("create tag: %w", err)
	}
	fmt.Printf("created tag %q with id %d\n", name, id)

	res, err := c.Tags.AddMembers(ctx, wecom.TagMembersRequest{TagID: id, Users: strings.Split(*users, ",")})
	if err != nil {
		return fmt.Errorf("add members: %w", err)
	}
	if len(res.InvalidUsers) > 0 {
		fmt.Println("WeCom did not know these users:", strings.Join(res.InvalidUsers, ", "))
	}

	members, err := c.Tags.Members(ctx, id)
	if err != nil {
		return fmt.Errorf("members: %w", err)
	}
	fmt.Printf("tag %q has %d members:", members.Name, len(members.Users))
	for _, u := range members.Users {
		fmt.Print(" ", u.UserID)
	}
	fmt.Println()

	tags, err := c.Tags.List(ctx)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	fmt.Printf("the corp has %d tags\n", len(tags))
	return nil
}
