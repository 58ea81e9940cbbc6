package workflow_test

import (
	"fmt"
	"os"
	"path/filepath"

	"flrh.dev/flrh/workflow"
)

// A refund bundle decides two inputs: a small refund is authorized
// outright; a large one plans the same kind of effect but waits for the
// person the approval policy names.
func Example() {
	dir := filepath.Join("..", "examples", "refund-agent")
	entries, _ := os.ReadDir(dir)
	files := map[string][]byte{}
	for _, e := range entries {
		files[e.Name()], _ = os.ReadFile(filepath.Join(dir, e.Name()))
	}
	w, err := workflow.Compile(files)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, in := range []string{
		`{"type":"refund.requested/1","payload":{"refund_id":"r-1","amount":40,"payee":"alice","reason":"damaged item"}}`,
		`{"type":"refund.requested/1","payload":{"refund_id":"r-2","amount":900,"payee":"bob","reason":"cancelled order"}}`,
	} {
		st, _ := w.Init(fmt.Sprintf("run-%d", i))
		r, err := w.Decide(st, workflow.Input{Seq: 1, Kind: workflow.KindInput, Body: []byte(in)})
		if err != nil {
			fmt.Println(err)
			return
		}
		e := r.Effects[0]
		fmt.Printf("%s risk=%s approval needed=%v\n", e.Intent.EffectType, e.Intent.AssessedRisk, e.Approval != nil)
	}
	// Output:
	// refund.pay risk=reversible approval needed=false
	// refund.pay risk=high_risk_external approval needed=true
}
