// Package gctarget lowers the collector's target while the product's
// packages initialise, for `flrh datalog` only (datalogstart.LowerGC does
// nothing for any other command line). It is a package of its own so that
// datalogstart need not import runtime/debug, which sorts late in the
// initialisation order and would hold datalogstart's first release back;
// this package is initialised where datalogstart used to be, and the
// target takes effect from there.
package gctarget

import (
	"runtime/debug"

	"flrh.dev/flrh/cmd/flrh/internal/datalogstart"
)

func init() {
	datalogstart.LowerGC(debug.SetGCPercent)
}
