package budget

import (
	"testing"

	"flrh.dev/flrh/aif/fixed"
	"flrh.dev/flrh/determinism"
	"pgregory.net/rapid"
)

func TestSharedBudgetNeverOversubscribed(t *testing.T) {
	// Two ranked fields that would each take 5 units alone; the shared
	// budget is 7, so a naive union (10) over-subscribes.
	fields := []Field{
		{"triage", 5, []Option{{"page-oncall", 5, 900}, {"open-ticket", 2, 500}}},
		{"repair", 5, []Option{{"rollback", 5, 1000}, {"restart", 3, 600}}},
	}
	res := determinism.Check(t, fields, func(f []Field) Result {
		r, err := Arbitrate(f, 7)
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
	if res.Used > 7 {
		t.Fatalf("used %d of 7", res.Used)
	}
	// Best within 7: open-ticket (2) + rollback (5) = 1500.
	if res.Value != 1500 || res.Allocations[0].Option != "open-ticket" || res.Allocations[1].Option != "rollback" {
		t.Fatalf("%+v", res)
	}
}

func TestSubBudgetsAndExclusions(t *testing.T) {
	res, err := Arbitrate([]Field{{"a", 2, []Option{{"big", 3, 100}, {"bad", 1, -5}, {"ok", 2, 10}}}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if res.Allocations[0].Option != "ok" || len(res.Excluded) != 2 {
		t.Fatalf("%+v", res)
	}
	if _, err := Arbitrate(nil, -1); err == nil {
		t.Fatal("negative budget accepted")
	}
	if _, err := Arbitrate([]Field{{"a", 1, []Option{{"x", -1, 1}}}}, 1); err == nil {
		t.Fatal("negative cost accepted")
	}
}

// Differential test against brute force over every combination.
func TestExactAgainstBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nf := rapid.IntRange(1, 4).Draw(t, "fields")
		var fields []Field
		for i := 0; i < nf; i++ {
			f := Field{Name: string(rune('a' + i)), SubBudget: int64(rapid.IntRange(0, 8).Draw(t, "sub"))}
			no := rapid.IntRange(0, 4).Draw(t, "opts")
			for j := 0; j < no; j++ {
				f.Options = append(f.Options, Option{ID: string(rune('p' + j)), Cost: int64(rapid.IntRange(0, 8).Draw(t, "cost")), Value: fixed.Num(rapid.IntRange(-5, 20).Draw(t, "value"))})
			}
			fields = append(fields, f)
		}
		budget := int64(rapid.IntRange(0, 15).Draw(t, "budget"))
		res, err := Arbitrate(fields, budget)
		if err != nil {
			t.Fatal(err)
		}
		var bestV fixed.Num
		var rec func(i int, used int64, v fixed.Num)
		rec = func(i int, used int64, v fixed.Num) {
			if i == len(fields) {
				if v > bestV {
					bestV = v
				}
				return
			}
			rec(i+1, used, v)
			for _, o := range fields[i].Options {
				if o.Cost <= fields[i].SubBudget && used+o.Cost <= budget {
					rec(i+1, used+o.Cost, v+o.Value)
				}
			}
		}
		rec(0, 0, 0)
		if res.Value != bestV {
			t.Fatalf("arbiter value %d, optimum %d", res.Value, bestV)
		}
		if res.Used > budget {
			t.Fatalf("over-subscribed: %d > %d", res.Used, budget)
		}
		var sum int64
		for i, a := range res.Allocations {
			sum += a.Cost
			if a.Cost > fields[i].SubBudget {
				t.Fatal("sub-budget exceeded")
			}
		}
		if sum != res.Used {
			t.Fatal("used does not match allocations")
		}
	})
}

// BenchmarkArbitrate splits a budget of 1,000 units across 20 fields of 10
// options each.
func BenchmarkArbitrate(b *testing.B) {
	var fields []Field
	for i := 0; i < 20; i++ {
		f := Field{Name: string(rune('A'+i/10)) + string(rune('a'+i%10)), SubBudget: 200}
		for j := 0; j < 10; j++ {
			f.Options = append(f.Options, Option{ID: string(rune('a' + j)), Cost: int64(10 + (i*7+j*13)%150), Value: fixed.Num(1000 + (i*31+j*17)%500)})
		}
		fields = append(fields, f)
	}
	for b.Loop() {
		if _, err := Arbitrate(fields, 1000); err != nil {
			b.Fatal(err)
		}
	}
}
