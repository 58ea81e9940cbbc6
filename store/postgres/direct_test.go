package postgres

import (
	"bytes"
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// The direct path encodes every parameter to the bytes and format pgx
// sends for it, whatever the value and the parameter's type: the types it
// encodes itself and, through pgx's type map, any other.
func TestDirectEncodesAsPgx(t *testing.T) {
	m := pgtype.NewMap()
	rapid.Check(t, func(t *rapid.T) {
		str := rapid.StringN(0, 8, -1)
		strp := rapid.Custom(func(t *rapid.T) *string {
			if rapid.Bool().Draw(t, "null") {
				return nil
			}
			s := str.Draw(t, "s")
			return &s
		})
		bs := rapid.Custom(func(t *rapid.T) []byte {
			if rapid.Bool().Draw(t, "null") {
				return nil
			}
			return rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "b")
		})
		type param struct {
			oid uint32
			v   any
		}
		gens := []*rapid.Generator[param]{
			rapid.Just(param{oidText, nil}),
			rapid.Custom(func(t *rapid.T) param {
				return param{rapid.SampledFrom([]uint32{oidText, oidVarchar, oidInt8}).Draw(t, "oid"), str.Draw(t, "v")}
			}),
			rapid.Custom(func(t *rapid.T) param {
				// As a string is: the commit sends the tick's strings as
				// pointers to them, whatever the parameter's type.
				return param{rapid.SampledFrom([]uint32{oidText, oidVarchar, oidInt8}).Draw(t, "oid"), strp.Draw(t, "v")}
			}),
			rapid.Custom(func(t *rapid.T) param {
				return param{rapid.SampledFrom([]uint32{oidInt8, 23, oidText}).Draw(t, "oid"), rapid.Int64Range(-1<<20, 1<<20).Draw(t, "v")}
			}),
			rapid.Custom(func(t *rapid.T) param { return param{oidInt8, rapid.Int64().Draw(t, "v")} }),
			rapid.Custom(func(t *rapid.T) param {
				return param{rapid.SampledFrom([]uint32{oidBool, oidText}).Draw(t, "oid"), rapid.Bool().Draw(t, "v")}
			}),
			rapid.Custom(func(t *rapid.T) param { return param{oidBytea, bs.Draw(t, "v")} }),
			rapid.Custom(func(t *rapid.T) param {
				var v []string
				if !rapid.Bool().Draw(t, "null") {
					v = rapid.SliceOfN(str, 0, 4).Draw(t, "v")
				}
				return param{oidTextArray, v}
			}),
			rapid.Custom(func(t *rapid.T) param {
				var v []*string
				if !rapid.Bool().Draw(t, "null") {
					v = rapid.SliceOfN(strp, 0, 4).Draw(t, "v")
				}
				return param{oidTextArray, v}
			}),
			rapid.Custom(func(t *rapid.T) param {
				var v [][]byte
				if !rapid.Bool().Draw(t, "null") {
					v = rapid.SliceOfN(bs, 0, 4).Draw(t, "v")
				}
				return param{oidByteaArray, v}
			}),
			rapid.Custom(func(t *rapid.T) param {
				return param{1016, rapid.SliceOfN(rapid.Int64(), 0, 3).Draw(t, "v")} // bigint[], through the type map
			}),
			// As what they point to (a nil pointer NULL): the commit sends
			// a tick's numbers and columns as pointers into one allocation.
			rapid.Custom(func(t *rapid.T) param {
				oid := rapid.SampledFrom([]uint32{oidInt8, 23, oidText}).Draw(t, "oid")
				if rapid.Bool().Draw(t, "null") {
					return param{oid, (*int64)(nil)}
				}
				v := rapid.Int64().Draw(t, "v")
				return param{oid, &v}
			}),
			rapid.Custom(func(t *rapid.T) param {
				oid := rapid.SampledFrom([]uint32{oidBytea, oidText}).Draw(t, "oid")
				if rapid.Bool().Draw(t, "null") {
					return param{oid, (*[]byte)(nil)}
				}
				v := bs.Draw(t, "v")
				return param{oid, &v}
			}),
			rapid.Custom(func(t *rapid.T) param {
				oid := rapid.SampledFrom([]uint32{oidTextArray, oidText}).Draw(t, "oid")
				if rapid.Bool().Draw(t, "null") {
					return param{oid, (*[]string)(nil)}
				}
				var v []string
				if !rapid.Bool().Draw(t, "nil") {
					v = rapid.SliceOfN(str, 0, 4).Draw(t, "v")
				}
				return param{oid, &v}
			}),
			rapid.Custom(func(t *rapid.T) param {
				oid := rapid.SampledFrom([]uint32{oidByteaArray, oidBytea}).Draw(t, "oid")
				if rapid.Bool().Draw(t, "null") {
					return param{oid, (*[][]byte)(nil)}
				}
				var v [][]byte
				if !rapid.Bool().Draw(t, "nil") {
					v = rapid.SliceOfN(bs, 0, 4).Draw(t, "v")
				}
				return param{oid, &v}
			}),
		}
		ps := rapid.SliceOfN(rapid.OneOf(gens...), 0, 12).Draw(t, "params")
		oids, args := make([]uint32, len(ps)), make([]any, len(ps))
		for i, p := range ps {
			oids[i], args[i] = p.oid, p.v
		}

		var eqb pgx.ExtendedQueryBuilder
		pgxErr := eqb.Build(m, &pgconn.StatementDescription{ParamOIDs: oids}, args)
		var d directConn
		d.buf = rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "left over") // a reset buffer's bytes are not sent
		d.reset()
		err := d.encode(m, oids, args)
		if (err != nil) != (pgxErr != nil) {
			t.Fatalf("direct: %v; pgx: %v", err, pgxErr)
		}
		if err != nil {
			return
		}
		vals, fmts := d.params(0, len(d.spans))
		if len(vals) != len(eqb.ParamValues) {
			t.Fatalf("%d parameters, pgx %d", len(vals), len(eqb.ParamValues))
		}
		for i := range vals {
			if (vals[i] == nil) != (eqb.ParamValues[i] == nil) || !bytes.Equal(vals[i], eqb.ParamValues[i]) || fmts[i] != eqb.ParamFormats[i] {
				t.Fatalf("parameter %d (%T for type %d): %x (format %d, null %v), pgx %x (format %d, null %v)",
					i, args[i], oids[i], vals[i], fmts[i], vals[i] == nil, eqb.ParamValues[i], eqb.ParamFormats[i], eqb.ParamValues[i] == nil)
			}
		}
	})
}

// A value the type map cannot encode fails the encoding, before anything
// is sent.
func TestDirectEncodingFailure(t *testing.T) {
	var d directConn
	if err := d.encode(pgtype.NewMap(), []uint32{oidInt8}, []any{struct{}{}}); err == nil {
		t.Fatal("a struct encoded as a bigint")
	}
	if err := d.encode(pgtype.NewMap(), []uint32{oidInt8, oidInt8}, []any{int64(1)}); err == nil {
		t.Fatal("one argument encoded for two parameters")
	}
}

// Ticks commit through the direct path, each statement prepared once on
// the connection; when the server has lost the connection's prepared
// statements, the tick that finds out is committed all the same (the
// one-round-trip attempt fails before COMMIT, the other path prepares
// them again) and the next ones go directly again.
func TestDirectPathPreparesOnceAndRecovers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{MaxConns: 1})
	if err := s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	head := int64(0)
	commit := func() {
		t.Helper()
		ev := storetest.Ev("E", `{"n":`+itoa(int(head))+`}`)
		if err := s.Commit(ctx, l, store.Tick{ExpectHead: head, Events: []store.Event{ev}}); err != nil {
			t.Fatalf("tick %d: %v", head, err)
		}
		head++
	}
	prepared := func() (map[string]string, int) {
		t.Helper()
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		d := directOf(c.Conn().PgConn())
		names := map[string]string{}
		for sql, sd := range d.stmts {
			names[sql] = sd.Name
		}
		return names, d.seq
	}
	for range 3 {
		commit()
	}
	names, seq := prepared()
	if len(names) == 0 {
		t.Fatal("no statement prepared for the direct path")
	}
	for range 3 {
		commit()
	}
	if again, seq2 := prepared(); seq2 != seq || len(again) != len(names) {
		t.Fatalf("statements prepared again for ticks of the same shape: %d then %d", seq, seq2)
	}

	c, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if _, err := c.Exec(ctx, `DEALLOCATE `+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	c.Release()
	commit()
	commit()
	run, err := s.Run(ctx, "r")
	if err != nil || run.Head != head {
		t.Fatalf("run at %d (%v), want %d", run.Head, err, head)
	}
	if _, seq3 := prepared(); seq3 <= seq {
		t.Fatal("the lost statements were not prepared again")
	}
	evs, err := s.Events(ctx, "r", 0)
	if err != nil || int64(len(evs)) != head {
		t.Fatalf("%d events (%v), want %d", len(evs), err, head)
	}
}

// An event hash column pair holds, per hash, its sum when it is canonical
// (the sum hashSum gives and encoding/hex agrees with) and else its text.
func TestHashColumns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		canon := rapid.Custom(func(t *rapid.T) string {
			return hashPrefix + hex.EncodeToString(rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "sum"))
		})
		other := rapid.OneOf(rapid.String(), rapid.Custom(func(t *rapid.T) string {
			h := []byte(canon.Draw(t, "h"))
			h[rapid.IntRange(0, len(h)-1).Draw(t, "at")] = rapid.Byte().Draw(t, "c")
			return string(h)
		}))
		hs := rapid.SliceOfN(rapid.OneOf(canon, other), 0, 8).Draw(t, "hashes")
		c := newHashColumns(rapid.IntRange(0, 8).Draw(t, "capacity"))
		for _, h := range hs {
			c.add(h)
		}
		texts := c.texts()
		anyText := false
		for i, h := range hs {
			want, err := hex.DecodeString(strings.TrimPrefix(h, hashPrefix))
			isCanon := err == nil && len(want) == 32 && strings.HasPrefix(h, hashPrefix) && strings.ToLower(h) == h
			if !isCanon {
				want = nil
			}
			anyText = anyText || !isCanon
			if !bytes.Equal(c.sums[i], want) || (c.sums[i] == nil) != (want == nil) || !bytes.Equal(hashSum(h), want) {
				t.Fatalf("%q: sum %x, want %x", h, c.sums[i], want)
			}
			if isCanon != (texts[i] == nil) || (texts[i] != nil && *texts[i] != h) {
				t.Fatalf("%q: text %v", h, texts[i])
			}
		}
		if c.anyText != anyText {
			t.Fatalf("anyText %v, want %v", c.anyText, anyText)
		}
	})
}
