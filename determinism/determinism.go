// Package determinism checks, in tests, that a pure step is what it claims:
// the same input gives the same output, and the input is left as it was.
//
// A step that reads a clock, ranges over a map into its output, or keeps a
// hidden cache will sooner or later give two answers to one question, and
// replay then breaks in production rather than in a test. Check runs the
// step twice on independent deep copies of its input and compares.
package determinism

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"flrh.dev/flrh/cjson"
)

// Check runs step on two independent deep copies of in. It fails t if the
// two outputs differ (by deep equality and, where the outputs have a
// canonical form, by digest) or if either call changed its copy of the input.
// It returns the first output so a test can go on asserting on it.
func Check[In, Out any](t testing.TB, in In, step func(In) Out) Out {
	t.Helper()
	pristine := Copy(in)
	a, b := Copy(in), Copy(in)
	outA := step(a)
	outB := step(b)
	if !reflect.DeepEqual(a, pristine) {
		t.Errorf("determinism: the step mutated its input\nbefore: %s\nafter:  %s", show(pristine), show(a))
	}
	if !reflect.DeepEqual(b, pristine) {
		t.Errorf("determinism: the step mutated its input on the second run")
	}
	if !reflect.DeepEqual(outA, outB) {
		t.Errorf("determinism: two runs on equal inputs differ\nfirst:  %s\nsecond: %s", show(outA), show(outB))
		return outA
	}
	da, errA := cjson.DigestOf(outA)
	db, errB := cjson.DigestOf(outB)
	if errA == nil && errB == nil && da != db {
		t.Errorf("determinism: outputs are deeply equal but their digests differ: %s vs %s", da, db)
	}
	return outA
}

// Check2 is Check for steps of two inputs (a prior state and a command, say).
func Check2[A, B, Out any](t testing.TB, a A, b B, step func(A, B) Out) Out {
	t.Helper()
	type pair struct {
		A A
		B B
	}
	return Check(t, pair{a, b}, func(p pair) Out { return step(p.A, p.B) })
}

func show(v any) string {
	if b, err := cjson.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprintf("%#v", v)
}

// Copy returns a deep copy of v: maps, slices, pointers (with sharing and
// cycles preserved), interfaces and structs, unexported fields included.
// Functions and channels are copied by reference.
func Copy[T any](v T) T {
	src := reflect.ValueOf(&v).Elem()
	dst := reflect.New(src.Type()).Elem()
	c := copier{seen: map[uintptr]reflect.Value{}}
	c.copy(dst, src)
	out, _ := dst.Interface().(T) // a nil interface value stays nil
	return out
}

type copier struct {
	seen map[uintptr]reflect.Value
}

// settable makes an unexported struct field writable; the copy is a test
// aid, not a way around encapsulation in production code.
func settable(v reflect.Value) reflect.Value {
	if v.CanSet() || !v.CanAddr() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

func readable(v reflect.Value) reflect.Value {
	if v.CanInterface() || !v.CanAddr() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// addressable returns v itself when it is addressable, else an addressable
// copy of it, so that its unexported fields can be reached (values inside
// interfaces and maps are not addressable).
func addressable(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return v
	}
	tmp := reflect.New(v.Type()).Elem()
	tmp.Set(v)
	return tmp
}

func (c *copier) copy(dst, src reflect.Value) {
	dst = settable(dst)
	src = readable(src)
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if p, ok := c.seen[src.Pointer()]; ok {
			dst.Set(p)
			return
		}
		p := reflect.New(src.Type().Elem())
		c.seen[src.Pointer()] = p
		c.copy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		inner := reflect.New(src.Elem().Type()).Elem()
		c.copy(inner, addressable(src.Elem()))
		dst.Set(inner)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			c.copy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Array:
		for i := 0; i < src.Len(); i++ {
			c.copy(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		iter := src.MapRange()
		for iter.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			c.copy(k, addressable(iter.Key()))
			val := reflect.New(src.Type().Elem()).Elem()
			c.copy(val, addressable(iter.Value()))
			m.SetMapIndex(k, val)
		}
		dst.Set(m)
	case reflect.Struct:
		src = addressable(src)
		for i := 0; i < src.NumField(); i++ {
			c.copy(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}
