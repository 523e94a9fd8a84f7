package wecom

import (
	"context"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/catalog"
)

func TestCustomerTagServiceRequests(t *testing.T) {
	t.Parallel()
	agent := []Option{WithAgentID(1000002)}
	order := func(n uint32) *uint32 { return &n }
	name30 := strings.Repeat("客", 30) // 30 characters, 90 bytes
	ok := `{"errcode":0,"errmsg":"ok"}`
	runRequestCases(t, []requestCase{
		{
			name: "List everything",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.CustomerTags.List(ctx, CorpTagListRequest{})
				return err
			},
			method: "POST", path: catalog.CorpTagList.Path(),
			body:   `{}`,
			answer: `{"errcode":0,"errmsg":"ok","tag_group":[]}`,
		},
		{
			name: "List by tag and group ids",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.CustomerTags.List(ctx, CorpTagListRequest{TagIDs: []string{"etA", "etB"}, GroupIDs: []string{"etG"}})
				return err
			},
			method: "POST", path: catalog.CorpTagList.Path(),
			body:   `{"tag_id":["etA","etB"],"group_id":["etG"]}`,
			answer: `{"errcode":0,"errmsg":"ok","tag_group":[]}`,
		},
		{
			name: "Add to a new group takes the client's agent id",
			opts: agent,
			call: func(ctx context.Context, c *Client) error {
				_, err := c.CustomerTags.Add(ctx, CorpTagAddRequest{GroupName: "等级", Order: 1, Tags: []CorpTagSpec{{Name: "金牌", Order: 2}, {Name: "银牌"}}})
				return err
			},
			method: "POST", path: catalog.CorpTagAdd.Path(),
			body:   `{"group_name":"等级","order":1,"tag":[{"name":"金牌","order":2},{"name":"银牌"}],"agentid":1000002}`,
			answer: `{"errcode":0,"errmsg":"ok","tag_group":{"group_id":"etG","tag":[{"id":"etT","name":"VIP"}]}}`,
		},
		{
			name: "Add to a group by id keeps its own agent id",
			opts: agent,
			call: func(ctx context.Context, c *Client) error {
				_, err := c.CustomerTags.Add(ctx, CorpTagAddRequest{GroupID: "etG", Tags: []CorpTagSpec{{Name: name30}}, AgentID: 1000014})
				return err
			},
			method: "POST", path: catalog.CorpTagAdd.Path(),
			body:   `{"group_id":"etG","tag":[{"name":"` + name30 + `"}],"agentid":1000014}`,
			answer: `{"errcode":0,"errmsg":"ok","tag_group":{"group_id":"etG","tag":[{"id":"etT","name":"VIP"}]}}`,
		},
		{
			name: "Add without any agent id omits agentid",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.CustomerTags.Add(ctx, CorpTagAddRequest{GroupID: "etG", Tags: []CorpTagSpec{{Name: "VIP"}}})
				return err
			},
			method: "POST", path: catalog.CorpTagAdd.Path(),
			body:   `{"group_id":"etG","tag":[{"name":"VIP"}]}`,
			answer: `{"errcode":0,"errmsg":"ok","tag_group":{"group_id":"etG","tag":[{"id":"etT","name":"VIP"}]}}`,
		},
		{
			name: "Edit name with nil order omits order",
			opts: agent,
			call: func(ctx context.Context, c *Client) error {
				return c.CustomerTags.Edit(ctx, CorpTagEditRequest{ID: "etT", Name: "白金"})
			},
			method: "POST", path: catalog.CorpTagEdit.Path(),
			body:   `{"id":"etT","name":"白金","agentid":1000002}`,
			answer: ok,
		},
		{
			name: "Edit order zero is sent",
			call: func(ctx context.Context, c *Client) error {
				return c.CustomerTags.Edit(ctx, CorpTagEditRequest{ID: "etT", Order: order(0)})
			},
			method: "POST", path: catalog.CorpTagEdit.Path(),
			body:   `{"id":"etT","order":0}`,
			answer: ok,
		},
		{
			name: "Edit name and order",
			call: func(ctx context.Context, c *Client) error {
				return c.CustomerTags.Edit(ctx, CorpTagEditRequest{ID: "etG", Name: name30, Order: order(4294967295), AgentID: 7})
			},
			method: "POST", path: catalog.CorpTagEdit.Path(),
			body:   `{"id":"etG","name":"` + name30 + `","order":4294967295,"agentid":7}`,
			answer: ok,
		},
		{
			name: "Delete tags and groups",
			opts: agent,
			call: func(ctx context.Context, c *Client) error {
				return c.CustomerTags.Delete(ctx, CorpTagDeleteRequest{TagIDs: []string{"etA"}, GroupIDs: []string{"etG"}})
			},
			method: "POST", path: catalog.CorpTagDel.Path(),
			body:   `{"tag_id":["etA"],"group_id":["etG"],"agentid":1000002}`,
			answer: ok,
		},
		{
			name: "Delete groups only",
			call: func(ctx context.Context, c *Client) error {
				return c.CustomerTags.Delete(ctx, CorpTagDeleteRequest{GroupIDs: []string{"etG"}})
			},
			method: "POST", path: catalog.CorpTagDel.Path(),
			body:   `{"group_id":["etG"]}`,
			answer: ok,
		},
		{
			name: "Mark add and remove",
			call: func(ctx context.Context, c *Client) error {
				return c.CustomerTags.Mark(ctx, MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmX", AddTags: []string{"etA", "etB"}, RemoveTags: []string{"etC"}})
			},
			method: "POST", path: catalog.MarkTag.Path(),
			body:   `{"userid":"zhangsan","external_userid":"wmX","add_tag":["etA","etB"],"remove_tag":["etC"]}`,
			answer: ok,
		},
		{
			name: "Mark remove only omits add_tag",
			opts: agent,
			call: func(ctx context.Context, c *Client) error {
				return c.CustomerTags.Mark(ctx, MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmX", RemoveTags: []string{"etC"}})
			},
			method: "POST", path: catalog.MarkTag.Path(),
			body:   `{"userid":"zhangsan","external_userid":"wmX","remove_tag":["etC"]}`,
			answer: ok,
		},
	})
}

func TestCustomerTagServiceAnswers(t *testing.T) {
	t.Parallel()
	list := func(ctx context.Context, c *Client) (any, error) {
		return c.CustomerTags.List(ctx, CorpTagListRequest{})
	}
	add := func(ctx context.Context, c *Client) (any, error) {
		return c.CustomerTags.Add(ctx, CorpTagAddRequest{GroupName: "等级", Tags: []CorpTagSpec{{Name: "金牌"}, {Name: "银牌"}}})
	}
	edit := func(ctx context.Context, c *Client) (any, error) {
		return nil, c.CustomerTags.Edit(ctx, CorpTagEditRequest{ID: "etT", Name: "VIP"})
	}
	del := func(ctx context.Context, c *Client) (any, error) {
		return nil, c.CustomerTags.Delete(ctx, CorpTagDeleteRequest{TagIDs: []string{"etA"}})
	}
	mark := func(ctx context.Context, c *Client) (any, error) {
		return nil, c.CustomerTags.Mark(ctx, MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmX", AddTags: []string{"etA"}})
	}
	const listBody = `"tag_group":[
		{"group_id":"etG1","group_name":"等级","create_time":1557838797,"order":1,"deleted":false,
		 "tag":[{"id":"etA","name":"金牌","create_time":1557838797,"order":4294967295,"deleted":false},
		        {"id":"etB","name":"银牌","create_time":1557838798,"order":2,"deleted":true}]},
		{"group_id":"etG2","group_name":"来源","create_time":1557838800,"order":0,"deleted":true,"tag":[]}]`
	wantList := []CorpTagGroup{
		{GroupID: "etG1", GroupName: "等级", CreateTime: 1557838797, Order: 1, Tags: []CorpTag{
			{ID: "etA", Name: "金牌", CreateTime: 1557838797, Order: 4294967295},
			{ID: "etB", Name: "银牌", CreateTime: 1557838798, Order: 2, Deleted: true},
		}},
		{GroupID: "etG2", GroupName: "来源", CreateTime: 1557838800, Deleted: true, Tags: []CorpTag{}},
	}
	const addBody = `"tag_group":{"group_id":"etG1","group_name":"等级","create_time":1557838797,"order":1,
		"tag":[{"id":"etA","name":"金牌","create_time":1557838797,"order":1},{"id":"etB","name":"银牌","create_time":1557838797,"order":2}]}`
	wantAdd := &CorpTagGroup{GroupID: "etG1", GroupName: "等级", CreateTime: 1557838797, Order: 1, Tags: []CorpTag{
		{ID: "etA", Name: "金牌", CreateTime: 1557838797, Order: 1},
		{ID: "etB", Name: "银牌", CreateTime: 1557838797, Order: 2},
	}}
	runAnswerCases(t, []answerCase{
		{name: "List", method: "POST", path: catalog.CorpTagList.Path(), call: list,
			answer: `{"errcode":0,"errmsg":"ok",` + listBody + `}`, want: wantList},
		{name: "List empty", method: "POST", path: catalog.CorpTagList.Path(), call: list,
			answer: `{"errcode":0,"errmsg":"ok","tag_group":[]}`, want: []CorpTagGroup{}},
		{name: "Add", method: "POST", path: catalog.CorpTagAdd.Path(), call: add,
			answer: `{"errcode":0,"errmsg":"ok",` + addBody + `}`, want: wantAdd},
		{name: "Edit", method: "POST", path: catalog.CorpTagEdit.Path(), call: edit,
			answer: `{"errcode":0,"errmsg":"ok"}`, want: nil},
		{name: "Delete", method: "POST", path: catalog.CorpTagDel.Path(), call: del,
			answer: `{"errcode":0,"errmsg":"ok"}`, want: nil},
		{name: "Mark", method: "POST", path: catalog.MarkTag.Path(), call: mark,
			answer: `{"errcode":0,"errmsg":"ok"}`, want: nil},
	})
}

func TestCustomerTagServiceValidation(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("客", 31)
	order := uint32(3)
	add := func(req CorpTagAddRequest) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { _, err := c.CustomerTags.Add(ctx, req); return err }
	}
	edit := func(req CorpTagEditRequest) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { return c.CustomerTags.Edit(ctx, req) }
	}
	del := func(req CorpTagDeleteRequest) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { return c.CustomerTags.Delete(ctx, req) }
	}
	mark := func(req MarkTagRequest) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { return c.CustomerTags.Mark(ctx, req) }
	}
	tags := []CorpTagSpec{{Name: "VIP"}}
	runValidationCases(t, []validationCase{
		{"Add no tags", "POST", catalog.CorpTagAdd.Path(), add(CorpTagAddRequest{GroupID: "etG"})},
		{"Add empty tag list", "POST", catalog.CorpTagAdd.Path(), add(CorpTagAddRequest{GroupName: "等级", Tags: []CorpTagSpec{}})},
		{"Add neither group id nor group name", "POST", catalog.CorpTagAdd.Path(), add(CorpTagAddRequest{Tags: tags})},
		{"Add 31-character group name", "POST", catalog.CorpTagAdd.Path(), add(CorpTagAddRequest{GroupName: long, Tags: tags})},
		{"Add empty tag name", "POST", catalog.CorpTagAdd.Path(), add(CorpTagAddRequest{GroupID: "etG", Tags: []CorpTagSpec{{Name: "VIP"}, {}}})},
		{"Add 31-character tag name", "POST", catalog.CorpTagAdd.Path(), add(CorpTagAddRequest{GroupID: "etG", Tags: []CorpTagSpec{{Name: long}}})},
		{"Add invalid UTF-8 tag name", "POST", catalog.CorpTagAdd.Path(), add(CorpTagAddRequest{GroupID: "etG", Tags: []CorpTagSpec{{Name: "\xfe"}}})},
		{"Edit no id", "POST", catalog.CorpTagEdit.Path(), edit(CorpTagEditRequest{Name: "VIP"})},
		{"Edit neither name nor order", "POST", catalog.CorpTagEdit.Path(), edit(CorpTagEditRequest{ID: "etT"})},
		{"Edit neither name nor order with agent id", "POST", catalog.CorpTagEdit.Path(), edit(CorpTagEditRequest{ID: "etT", AgentID: 7})},
		{"Edit 31-character name", "POST", catalog.CorpTagEdit.Path(), edit(CorpTagEditRequest{ID: "etT", Name: long, Order: &order})},
		{"Delete no ids", "POST", catalog.CorpTagDel.Path(), del(CorpTagDeleteRequest{})},
		{"Delete empty id lists", "POST", catalog.CorpTagDel.Path(), del(CorpTagDeleteRequest{TagIDs: []string{}, GroupIDs: []string{}, AgentID: 7})},
		{"Mark no userid", "POST", catalog.MarkTag.Path(), mark(MarkTagRequest{ExternalUserID: "wmX", AddTags: []string{"etA"}})},
		{"Mark no external_userid", "POST", catalog.MarkTag.Path(), mark(MarkTagRequest{UserID: "zhangsan", AddTags: []string{"etA"}})},
		{"Mark nothing to add or remove", "POST", catalog.MarkTag.Path(), mark(MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmX"})},
		{"Mark empty tag lists", "POST", catalog.MarkTag.Path(), mark(MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmX", AddTags: []string{}, RemoveTags: []string{}})},
	})
}
