package callback_test

import "encoding/xml"

func xmlUnmarshal(b []byte, v any) error { return xml.Unmarshal(b, v) }
