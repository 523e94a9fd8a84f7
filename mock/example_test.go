package mock_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/mock"
)

// Serve a fake WeCom over HTTP and create a contact tag on it.
func Example() {
	srv, err := mock.New(mock.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.AddApp("wwexample", "app-secret")
	ts := srv.Start()
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/cgi-bin/gettoken?corpid=wwexample&corpsecret=app-secret")
	if err != nil {
		fmt.Println(err)
		return
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("expires_in:", tok.ExpiresIn)

	resp, err = http.Post(ts.URL+"/cgi-bin/tag/create?access_token="+tok.AccessToken,
		"application/json", strings.NewReader(`{"tagname":"VIP"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))
	fmt.Printf("%+v\n", srv.Tags("wwexample"))
	// Output:
	// expires_in: 7200
	// {"errcode":0,"errmsg":"created","tagid":1}
	// [{ID:1 Name:VIP Users:[] Parties:[]}]
}

// Answer an http.Client through httpmock, here with a token that WeCom has
// invalidated early.
func ExampleServer_Register() {
	srv, err := mock.New(mock.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.AddApp("wwexample", "app-secret")
	mt := httpmock.NewMockTransport()
	srv.Register(mt, "https://qyapi.weixin.qq.com")
	client := &http.Client{Transport: mt}

	get := func(url string) map[string]any {
		resp, err := client.Get(url)
		if err != nil {
			return map[string]any{"error": err.Error()}
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	tok := get("https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=wwexample&corpsecret=app-secret")["access_token"].(string)
	srv.InvalidateTokens()
	fmt.Println(get("https://qyapi.weixin.qq.com/cgi-bin/tag/list?access_token=" + tok)["errcode"])
	fmt.Println(srv.Stats().Refusals)
	// Output:
	// 40014
	// map[40014:1]
}
