package unchanged

func String(b []byte) string { return string(b) }
