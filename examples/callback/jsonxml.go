package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// xmlValue reads an XML document into a value: the root element's
// content, where an element with children is a map[string]any of them (a
// name seen twice becomes a []any) and an element without is its text.
func xmlValue(data []byte) (any, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("no root element")
			}
			return nil, err
		}
		if _, ok := tok.(xml.StartElement); ok {
			return element(d)
		}
	}
}

// element reads the content of the element just started, to its end.
func element(d *xml.Decoder) (any, error) {
	var text strings.Builder
	var children map[string]any
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			v, err := element(d)
			if err != nil {
				return nil, err
			}
			if children == nil {
				children = make(map[string]any)
			}
			name := t.Name.Local
			switch prev := children[name].(type) {
			case nil:
				children[name] = v
			case []any:
				children[name] = append(prev, v)
			default:
				children[name] = []any{prev, v}
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			if children != nil {
				return children, nil
			}
			return text.String(), nil
		}
	}
}
