package wecom_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
)

// A suite installed by a corp: the ticket WeCom pushed (here given by
// hand; callback.Handle(h, suite.ReceiveTicket) feeds them from the
// command URL), the installation's auth code spent for the permanent code,
// and a Client of the corp running on the suite's corp token.
func ExampleSuite_PermanentCode() {
	m, err := mock.New(mock.Config{})
	if err != nil {
		log.Fatal(err)
	}
	m.AddSuite("wwsuite", "suite-secret", "ticket-1")
	m.AddUsers("wwcorp", "zhangsan")
	srv := m.Start()
	defer srv.Close()
	ctx := context.Background()

	suite, err := wecom.NewSuite("wwsuite", "suite-secret", wecom.WithBaseURL(srv.URL))
	if err != nil {
		log.Fatal(err)
	}
	if err := suite.SetTicket(ctx, "ticket-1", time.Now()); err != nil {
		log.Fatal(err)
	}
	authCode, _ := m.Authorize("wwsuite", "wwcorp") // the create_auth callback's AuthCode
	auth, err := suite.PermanentCode(ctx, authCode)
	if err != nil {
		log.Fatal(err)
	}
	info, err := suite.AuthInfo(ctx, auth.Corp.CorpID, auth.PermanentCode)
	if err != nil {
		log.Fatal(err)
	}
	corp, err := wecom.New(auth.Corp.CorpID, "", wecom.WithBaseURL(srv.URL),
		wecom.WithTokenSource(suite.CorpTokenSource(auth.Corp.CorpID, auth.PermanentCode)), wecom.WithAgentID(info.Agents[0].AgentID))
	if err != nil {
		log.Fatal(err)
	}
	ids, err := corp.Users.ToOpenUserIDs(ctx, []string{"zhangsan"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(auth.Corp.CorpID, len(info.Agents), "app;", len(ids.ByUserID), "open_userid")
	// Output: wwcorp 1 app; 1 open_userid
}
