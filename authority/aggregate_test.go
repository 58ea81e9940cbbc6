package authority

import (
	"strings"
	"testing"

	"flrh.dev/flrh/logic"
)

// A gate rule may aggregate over the ticket's facts; its reason carries,
// after the facts the rule matched, the value the aggregate took and the
// facts it ranged over.
func TestGateRuleWithAnAggregate(t *testing.T) {
	p, err := CompilePolicy("authority/1", "q.dl", []byte(fixturePolicy+quorumDecl+`
quorum(2, "q.many-params") :- action(t, "artifact.publish"), count : param_sym(t, _, _) >= 3.
`), logic.Limits{MaxFirings: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		params map[string]any
		quorum int
	}{
		{"two parameters", map[string]any{"artifact": "pkg-1.0.tgz", "audience": "public"}, 0},
		{"three parameters", map[string]any{"artifact": "pkg-1.0.tgz", "audience": "public", "channel": "stable"}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, _ := fixtureInput(t, "public")
			in.Actions[0].Parameters = c.params
			in.Policy.Policy = p
			d, err := Authorize(in)
			if err != nil {
				t.Fatal(err)
			}
			o := d.Outcomes[0]
			if o.Kind != OutcomeApprovalRequest || o.Quorum != c.quorum {
				t.Fatalf("outcome %s quorum %d, want an approval request of %d", o.Kind, o.Quorum, c.quorum)
			}
			if c.quorum == 0 {
				return
			}
			why := o.QuorumReason
			n := len(why.Facts)
			if why == nil || why.Rule != "q.many-params" || n != 2 || !strings.HasPrefix(why.Facts[0], "action(") ||
				!strings.HasPrefix(why.Facts[1], "count : { param_sym(t, _, _) } = 3 over param_sym(") ||
				!strings.Contains(why.Facts[1], `"channel", "stable"`) {
				t.Fatalf("reason %+v", why)
			}
		})
	}
}
