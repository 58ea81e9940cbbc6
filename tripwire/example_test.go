package tripwire_test

import (
	"fmt"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/tripwire"
)

// A run resting in WAIT_APPROVAL with nothing awaiting approval waits for
// something nobody was asked for: the wedge wire trips, and the run is
// parked in Degraded Safe Mode.
func Example() {
	m := control.Default()
	b := tripwire.Boundary{
		Phase:  tripwire.PhaseIdle,
		RunID:  "run-1",
		Before: control.Configuration{Table: m.Digest(), State: "WAIT_APPROVAL", Pending: []string{}, Seq: 4},
	}
	trips := tripwire.Check(b)
	for _, t := range trips {
		fmt.Println(t.Wire, t.Where)
	}
	rep, _ := tripwire.NewReport(b, trips)
	fmt.Println(rep.Kind, rep.Disposition.Park, rep.Disposition.Summon)
	// Output:
	// wedge /open_before
	// tripwire DEGRADED_SAFE_MODE mrp.leave_safe_mode
}
