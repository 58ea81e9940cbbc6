package mrp

import "fmt"

// Move is what the resolved signals of a turn ask of the machine. Moves are
// totally ordered by conservativeness: a larger Move never does less to
// hold the system back than a smaller one.
type Move int

// Moves from least to most conservative.
const (
	MoveProceed   Move = iota // DECIDE; tier 4 may adjust tone and pace
	MoveConstrain             // DECIDE on the SHAPE-constrained ticket
	MoveTest                  // TEST: verify before relying on the path
	MoveHold                  // HOLD: clarify, check assumptions, cool down
	MoveOptions               // OPTIONS: contestable gate mode
	MoveAskFirst              // HOLD until a person approves
	MoveEscalate              // ESCALATE to a person
	MoveRefuse                // DECIDE(refusal)
	MoveFailsafe              // FAILSAFE
)

var moveNames = [...]string{"PROCEED", "CONSTRAIN", "TEST", "HOLD", "OPTIONS", "ASK_FIRST", "ESCALATE", "REFUSE", "FAILSAFE"}

func (m Move) String() string {
	if m < 0 || int(m) >= len(moveNames) {
		return fmt.Sprintf("Move(%d)", int(m))
	}
	return moveNames[m]
}

// MarshalText renders the move by name.
func (m Move) MarshalText() ([]byte, error) {
	if m < 0 || int(m) >= len(moveNames) {
		return nil, fmt.Errorf("mrp: unknown move %d", int(m))
	}
	return []byte(moveNames[m]), nil
}

// MarshalJSON renders the move as its name.
func (m Move) MarshalJSON() ([]byte, error) {
	b, err := m.MarshalText()
	if err != nil {
		return nil, err
	}
	return []byte(`"` + string(b) + `"`), nil
}

// ParseMove reads a move name.
func ParseMove(s string) (Move, bool) {
	for i, n := range moveNames {
		if n == s {
			return Move(i), true
		}
	}
	return 0, false
}

// Target is the state a move leads to from DECIDE (the reference row of
// the machine), and whether DECIDE is a refusal.
func (m Move) Target() (State, bool) {
	switch m {
	case MoveProceed, MoveConstrain:
		return Decide, false
	case MoveTest:
		return Test, false
	case MoveHold, MoveAskFirst:
		return Hold, false
	case MoveOptions:
		return Options, false
	case MoveEscalate:
		return Escalate, false
	case MoveRefuse:
		return Decide, true
	}
	return Failsafe, false
}
