package bundle

import (
	"bytes"
	"encoding/json"

	"flrh.dev/flrh/cjson"
)

func strictDecodeForTest(v any, dst any) error {
	b, err := cjson.Encode(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}
