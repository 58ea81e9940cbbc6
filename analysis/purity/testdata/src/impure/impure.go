package impure

import (
	"os"
	"time"
)

// Not listed as pure: nothing here is reported.
func Now() time.Time { go func() {}(); _ = os.Getenv("X"); return time.Now() }
