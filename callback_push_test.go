package wecom_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/mock"
)

// TestWelcomeOnPushedCallback: end to end with no WeCom. The mock pushes
// add_external_contact to a callback.Handler behind httptest; the handler
// welcomes the customer with Customers.Welcome within the welcome code's
// 20 seconds, and the mock records the message as delivered.
func TestWelcomeOnPushedCallback(t *testing.T) {
	t.Parallel()
	const token, key = "pushToken", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv))
	t.Cleanup(srv.Close)
	crypto, err := callback.NewCrypto(token, key, testCorp)
	if err != nil {
		t.Fatal(err)
	}
	h, err := callback.NewHandler(crypto)
	if err != nil {
		t.Fatal(err)
	}
	welcomed := make(chan error, 1)
	callback.Handle(h, func(ctx context.Context, e *callback.ExternalContactEvent) error {
		if e.ChangeType != callback.ChangeAddExternalContact {
			return nil
		}
		err := c.Customers.Welcome(ctx, wecom.WelcomeMessage{WelcomeCode: e.WelcomeCode, Text: "Hello " + e.ExternalUserID + ", welcome!"})
		welcomed <- err
		return err
	})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	if err := srv.SetCallback(testCorp, mock.CallbackConfig{URL: hs.URL, Token: token, EncodingAESKey: key}); err != nil {
		t.Fatal(err)
	}
	srv.AddExternalContact(testCorp, "zhangsan", mock.Customer{ExternalUserID: "wmNewCustomer", Name: "Ann", Type: 1}, "")
	if err := srv.WaitCallbacks(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-welcomed; err != nil {
		t.Fatalf("Welcome: %v", err)
	}
	got := srv.Welcomes(testCorp, "wmNewCustomer")
	if len(got) != 1 || got[0].UserID != "zhangsan" || got[0].Text != "Hello wmNewCustomer, welcome!" {
		t.Errorf("welcomes %+v, want zhangsan's one", got)
	}
	if d := srv.CallbackDeliveries(); len(d) != 1 || !d[0].Delivered {
		t.Errorf("deliveries %+v, want one, delivered", d)
	}
}
