package runner

import "flrh.dev/flrh/protocol"

// AppendIntent appends the bytes cjson.Marshal writes for pi, without the
// encoder's reflection, where the runner's own intent writer can write
// them (see appendIntent); ok is false otherwise, and b is then to be
// dropped. A reader that compares an intent with stored bytes (verify's
// replay) writes it as the runner wrote it.
func AppendIntent(b []byte, pi *protocol.EffectIntent) ([]byte, bool) { return appendIntent(b, pi) }
