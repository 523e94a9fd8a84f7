// Decoding the fields whose type WeCom's own pages disagree on, so that one
// odd field never loses a whole answer.

package wecom

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// lenientStrings is a list of strings whose items WeCom may send as
// numbers: the remark_mobiles of externalcontact/get appear as numbers in
// some editions of its examples.
type lenientStrings []string

// UnmarshalJSON implements json.Unmarshaler: a list of strings and
// numbers (a number kept as written), or null.
func (s *lenientStrings) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		v, err := lenientString(r)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	if raw == nil {
		out = nil
	}
	*s = out
	return nil
}

// lenientString reads a JSON string, or a number kept as written.
func lenientString(r json.RawMessage) (string, error) {
	var str string
	if err := json.Unmarshal(r, &str); err == nil {
		return str, nil
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(r))
	d.UseNumber()
	if err := d.Decode(&n); err != nil {
		return "", fmt.Errorf("wecom: %s is neither a string nor a number", r)
	}
	return n.String(), nil
}

// lenientInt is a number that WeCom may send as a string of digits.
type lenientInt int64

// UnmarshalJSON implements json.Unmarshaler: a number, or a string of one
// ("" reads as 0), or null.
func (n *lenientInt) UnmarshalJSON(b []byte) error {
	s, err := lenientString(b)
	if err != nil || string(b) == "null" {
		return err
	}
	if s == "" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("wecom: %s is not a whole number", b)
	}
	*n = lenientInt(v)
	return nil
}

// UnmarshalJSON implements json.Unmarshaler. It reads remark_mobiles and
// tag_id as strings or numbers, and createtime and add_way as numbers or
// strings of digits: a follower is not lost, nor the customer with it, for
// a type WeCom's pages disagree on.
func (f *Follow) UnmarshalJSON(b []byte) error {
	type plain Follow // without this method
	aux := struct {
		*plain
		CreateTime    lenientInt     `json:"createtime"`
		RemarkMobiles lenientStrings `json:"remark_mobiles"`
		AddWay        lenientInt     `json:"add_way"`
		TagIDs        lenientStrings `json:"tag_id"`
	}{(*plain)(f), lenientInt(f.CreateTime), f.RemarkMobiles, lenientInt(f.AddWay), f.TagIDs} // a field absent keeps its value, as json does
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	f.CreateTime, f.RemarkMobiles, f.AddWay, f.TagIDs = int64(aux.CreateTime), aux.RemarkMobiles, int(aux.AddWay), aux.TagIDs
	return nil
}
