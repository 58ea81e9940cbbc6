package seam

import "flrh.dev/flrh/cjson"

// Every string cjson.AppendChecked writes in any test of this package must be one
// cjson writes between quotes as it is: then the evidence rows and
// the verdict preimage are what cjson.AppendString wrote. A string that needs
// escaping panics the test that reached it (cjson tests AppendChecked
// itself).
func init() { cjson.CheckedHook = cjson.MustBePlain }
