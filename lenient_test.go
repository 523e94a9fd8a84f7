package wecom

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A follower whose fields come with the types some of WeCom's pages give
// them (phone numbers and tag ids as numbers, times as strings) reads as
// one whose fields come as documented; a field of no type WeCom uses is
// still an error.
func TestFollowLenientTypes(t *testing.T) {
	want := Follow{UserID: "u1", CreateTime: 1700000000, RemarkMobiles: []string{"13800000000", "+86 139"}, AddWay: 1, TagIDs: []string{"et1", "42"}, State: "s"}
	for _, tc := range []struct {
		name, raw string
		bad       bool
	}{
		{"as documented", `{"userid":"u1","createtime":1700000000,"remark_mobiles":["13800000000","+86 139"],"add_way":1,"tag_id":["et1","42"],"state":"s"}`, false},
		{"numbers for strings", `{"userid":"u1","createtime":1700000000,"remark_mobiles":[13800000000,"+86 139"],"add_way":1,"tag_id":["et1",42],"state":"s"}`, false},
		{"strings for numbers", `{"userid":"u1","createtime":"1700000000","remark_mobiles":["13800000000","+86 139"],"add_way":"1","tag_id":["et1","42"],"state":"s"}`, false},
		{"an object for a phone", `{"userid":"u1","remark_mobiles":[{"n":1}]}`, true},
		{"a word for a time", `{"userid":"u1","createtime":"soon"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Follow
			err := json.Unmarshal([]byte(tc.raw), &got)
			if tc.bad {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("decoded %+v, %v; want %+v", got, err, want)
			}
		})
	}
	var none Follow
	if err := json.Unmarshal([]byte(`{"userid":"u","remark_mobiles":null}`), &none); err != nil || none.RemarkMobiles != nil {
		t.Errorf("null remark_mobiles: %+v, %v", none, err)
	}
}

// Whatever a follower's JSON holds, decoding it never panics, and what
// decodes re-encodes to JSON that decodes to the same follower.
func FuzzFollowJSON(f *testing.F) {
	f.Add(`{"userid":"u1","createtime":"17","remark_mobiles":[138,"139"],"add_way":"2","tag_id":[1,"et"]}`)
	f.Add(`{"remark_mobiles":null,"createtime":null}`)
	f.Add(`{"createtime":1e3}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var a Follow
		if json.Unmarshal([]byte(raw), &a) != nil {
			return
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var again Follow
		if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(normal(a), normal(again)) {
			t.Fatalf("%s decoded to %+v, re-encoded as %s, decoded again to %+v, %v", raw, a, b, again, err)
		}
	})
}

// normal makes the empty lists of f nil, as omitempty writes neither.
func normal(f Follow) Follow {
	if len(f.RemarkMobiles) == 0 {
		f.RemarkMobiles = nil
	}
	if len(f.TagIDs) == 0 {
		f.TagIDs = nil
	}
	if len(f.Tags) == 0 {
		f.Tags = nil
	}
	return f
}

// Decoding into a follower already filled keeps the fields the JSON does
// not name, as encoding/json does for every other field.
func TestFollowLenientKeepsAbsentFields(t *testing.T) {
	f := Follow{UserID: "u1", CreateTime: 7, RemarkMobiles: []string{"138"}, AddWay: 2, TagIDs: []string{"et"}}
	if err := json.Unmarshal([]byte(`{"remark":"r"}`), &f); err != nil {
		t.Fatal(err)
	}
	want := Follow{UserID: "u1", Remark: "r", CreateTime: 7, RemarkMobiles: []string{"138"}, AddWay: 2, TagIDs: []string{"et"}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("decoded %+v, want %+v", f, want)
	}
}
