package pure

import (
	"fmt"
	"math/rand" // want `pure package imports math/rand, which reaches randomness`
	"os"        // want `pure package imports os, which reaches the process environment and filesystem`
	"path/filepath"
	"sort"
	"time"
)

func Clock() time.Time {
	return time.Now() // want `pure package calls time.Now, which reads the clock`
}

func Durations(t time.Time, d time.Duration) time.Time {
	return t.Add(d) // methods on values we were given are fine
}

func Env() string { return os.Getenv("HOME") }

func Rand() int { return rand.Int() }

func Walk() { _ = filepath.Walk(".", nil) } // want `pure package calls path/filepath.Walk, which reads the filesystem`

func Join() string { return filepath.Join("a", "b") }

func Print() {
	fmt.Println("x") // want `pure package calls fmt.Println, which writes to stdout`
	_ = fmt.Sprintf("%d", 1)
}

func Spawn() {
	go func() {}() // want `pure package starts a goroutine`
}

func Select(c chan int) {
	select { // want `pure package selects on channels`
	case <-c:
	default:
	}
}

func LeakOrder(m map[string]int) []string {
	var out []string
	for k := range m { // want `range over a map in a pure package`
		out = append(out, k)
	}
	return out
}

func SortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func Invert(m map[string]int) map[int]string {
	inv := map[int]string{}
	for k, v := range m {
		if v > 0 {
			inv[v] = k
		}
	}
	return inv
}

func Drop(m map[string]int) {
	for k := range m {
		delete(m, k)
	}
}

func Sum(m map[string]int) int {
	total := 0
	//flrh:orderfree integer addition commutes
	for _, v := range m {
		total += v
	}
	return total
}

func FloatSum(m map[string]float64) float64 {
	total := 0.0
	for _, v := range m { // want `range over a map in a pure package`
		total += v
	}
	return total
}

func InClosure(m map[string]int) func() []string {
	return func() []string {
		var out []string
		for k := range m { // want `range over a map in a pure package`
			out = append(out, k)
		}
		return out
	}
}
