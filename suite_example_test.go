package wecom_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/callback"
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

// A provider's command URL: the suite's ticket and its corps'
// authorizations received by callback (the mock pushes them), each corp's
// permanent code kept, and a corp's client from the registry, on its corp
// token; a cancelled corp is dropped.
func ExampleInstallations() {
	m, err := mock.New(mock.Config{})
	if err != nil {
		log.Fatal(err)
	}
	m.AddSuite("wwsuite", "suite-secret", "")
	api := m.Start()
	defer api.Close()
	suite, err := wecom.NewSuite("wwsuite", "suite-secret", wecom.WithBaseURL(api.URL))
	if err != nil {
		log.Fatal(err)
	}
	codes := &wecom.MemoryPermanentCodes{} // or redisstore.PermanentCodes, shared by the fleet
	corps, err := wecom.NewInstallations(suite, codes, wecom.WithClientOptions(wecom.WithBaseURL(api.URL)))
	if err != nil {
		log.Fatal(err)
	}

	const token, key = "commandToken", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	crypto, _ := callback.NewCrypto(token, key, "wwsuite")
	h, _ := callback.NewHandler(crypto)
	defer h.Close(context.Background())
	corps.Handle(h, func(_ context.Context, ev *callback.AuthEvent, a *wecom.Authorization) error {
		fmt.Println(ev.InfoType, ev.AuthCorpID)
		return nil
	})
	cmd := httptest.NewServer(h) // the suite's command URL
	defer cmd.Close()

	ctx := context.Background()
	_ = m.SetSuiteCallback("wwsuite", mock.CallbackConfig{URL: cmd.URL, Token: token, EncodingAESKey: key})
	_ = m.WaitCallbacks(ctx) // the suite_ticket
	_, _ = m.Authorize("wwsuite", "wwcorp")
	_ = m.WaitCallbacks(ctx) // create_auth
	c, err := corps.Client(ctx, "wwcorp")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Tags.List(ctx); err != nil {
		log.Fatal(err)
	}
	_ = m.Deauthorize("wwsuite", "wwcorp")
	_ = m.WaitCallbacks(ctx) // cancel_auth
	fmt.Println(codes.Len(), "permanent codes,", corps.Registry().Len(), "clients")
	// Output:
	// create_auth wwcorp
	// cancel_auth wwcorp
	// 0 permanent codes, 0 clients
}
