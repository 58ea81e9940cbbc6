package clockish

func Now() int64 { return 0 }
