package cjson

// WrittenString is Written's bytes as a string: written into the recycled
// buffer and copied out once, as the string, where converting Written's
// bytes would copy them a second time. write must keep no reference to the
// buffer, as for Written.
func WrittenString(write func(b []byte) []byte) string {
	s := scratchBufs.Get().(*[]byte)
	b := write((*s)[:0])
	out := string(b)
	releaseScratch(s, b)
	return out
}
