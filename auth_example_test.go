package wecom_test

import (
	"context"
	"fmt"
	"log"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
)

// Sign a member in: send the browser to WeCom's OAuth page, then read who
// the code WeCom sent back names, and the member's consented fields.
func ExampleAuthService_SignIn() {
	m, err := mock.New(mock.Config{})
	if err != nil {
		log.Fatal(err)
	}
	m.AddApp("wwexample", "example-secret")
	srv := m.Start()
	defer srv.Close()
	c, err := wecom.New("wwexample", "example-secret", wecom.WithBaseURL(srv.URL), wecom.WithAgentID(1000002))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	// 1. Redirect the browser there, keeping the state in the session.
	u, err := c.Auth.AuthorizeURL(wecom.AuthorizeRequest{
		RedirectURI: "https://app.example.com/signin", Scope: wecom.ScopePrivateInfo, State: "s3ss10n"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(u)

	// 2. WeCom redirects to https://app.example.com/signin?code=CODE&state=s3ss10n;
	// on the mock, the member's consent makes the code.
	code := m.SignInCode("wwexample", mock.SignIn{UserID: "zhangsan", Private: &mock.PrivateInfo{Gender: "1", Email: "zhangsan@example.com"}})
	si, err := c.Auth.SignIn(ctx, code)
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case si.Member != nil:
		fmt.Println("member:", si.Member.UserID)
		info, err := c.Auth.PrivateInfo(ctx, si.Member.Ticket)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("email:", info.Email, "gender:", info.Gender)
	case si.Visitor != nil:
		fmt.Println("visitor:", si.Visitor.OpenID)
	}
	// Output:
	// https://open.weixin.qq.com/connect/oauth2/authorize?appid=wwexample&redirect_uri=https%3A%2F%2Fapp.example.com%2Fsignin&response_type=code&scope=snsapi_privateinfo&state=s3ss10n&agentid=1000002#wechat_redirect
	// member: zhangsan
	// email: zhangsan@example.com gender: 1
}
