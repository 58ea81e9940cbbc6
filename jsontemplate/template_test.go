package jsontemplate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/jsontemplate"
)

// names are the named values the tests' templates take.
var names = []string{"$delivery", "$event", "$hook"}

func values(t *testing.T, body string) jsontemplate.Values {
	t.Helper()
	v, err := jsontemplate.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return jsontemplate.Values{Body: v, Names: map[string]string{"$delivery": "msg_1", "$event": "refund.requested", "$hook": "shop"}}
}

func TestTemplate(t *testing.T) {
	in := values(t, `{"type":"refund.requested","order":{"id":"o-17","lines":[{"sku":"a/b~c","qty":2}]},"amount":900,"ok":true,"note":null,"price":12.5,"big":1e3,"payee":"bob","x/y":"slash","t~n":"tilde"}`)
	cases := []struct {
		name     string
		template string
		want     string // the rendered value's JSON; "" when refused
		words    string
	}{
		{"the value itself, typed", `{"type":"refund.requested/1","payload":{"refund_id":"{/order/id}","amount":"{/amount}","payee":"{/payee}","reason":"from {$hook}"}}`,
			`{"payload":{"amount":900,"payee":"bob","reason":"from shop","refund_id":"o-17"},"type":"refund.requested/1"}`, ""},
		{"written into a string", `"refund-{/order/id}-{/amount}-{/ok}"`, `"refund-o-17-900-true"`, ""},
		{"the delivery's names", `["{$delivery}","{$event}","{$hook}"]`, `["msg_1","refund.requested","shop"]`, ""},
		{"the whole body's part", `{"lines":"{/order/lines}"}`, `{"lines":[{"qty":2,"sku":"a/b~c"}]}`, ""},
		{"an array element", `"{/order/lines/0/sku}"`, `"a/b~c"`, ""},
		{"escaped pointer tokens", `["{/x~1y}","{/t~0n}"]`, `["slash","tilde"]`, ""},
		{"null kept", `{"n":"{/note}"}`, `{"n":null}`, ""},
		{"literal braces", `"{{not a placeholder}} {/payee}"`, `"{not a placeholder} bob"`, ""},
		{"a literal template", `{"a":[1,true,null,"x"]}`, `{"a":[1,true,null,"x"]}`, ""},
		{"the whole body with floats refused", `"{$body}"`, "", "/: {$body}: the number 1e3"},
		{"a fraction where taken", `{"p":"{/price}"}`, "", "/p: {/price}: the number 12.5 is not a 64-bit integer"},
		{"an exponent where taken", `"{/big}"`, "", "1e3"},
		{"nothing there", `{"a":{"b":"{/order/missing}"}}`, "", "/a/b: the body has nothing at {/order/missing}"},
		{"past an array's end", `"{/order/lines/1}"`, "", "nothing at {/order/lines/1}"},
		{"an index with a leading zero", `"{/order/lines/00}"`, "", "nothing at"},
		{"into a string", `"{/payee/0}"`, "", "nothing at"},
		{"an object into a string", `"order {/order}"`, "", "{/order} is an object, which cannot be written into a string"},
		{"null into a string", `"note {/note}"`, "", "null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp, err := jsontemplate.Compile([]byte(c.template), names...)
			if err != nil {
				t.Fatal(err)
			}
			v, err := tp.Render(in)
			if c.want == "" {
				if !isTemplateError(err) || !strings.Contains(err.Error(), c.words) || v != nil {
					t.Fatalf("got %v, %v; want a template refusal saying %q", v, err, c.words)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(v)
			if string(got) != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
			var want any
			_ = json.Unmarshal([]byte(c.want), &want)
			if !reflect.DeepEqual(numbersAsFloat(v), want) {
				t.Fatalf("value model: %#v", v)
			}
		})
	}
}

// numbersAsFloat is v with int64s as float64, for comparing with what
// encoding/json decodes; it also fails on any other number type.
func numbersAsFloat(v any) any {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[k] = numbersAsFloat(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = numbersAsFloat(e)
		}
		return a
	case string, bool, nil:
		return v
	}
	return struct{}{} // json.Number or anything else: never equal
}

func TestTemplateRefused(t *testing.T) {
	cases := []struct{ template, words string }{
		{`{"a":"{/x"}`, "/a: the { at byte 0 is not closed"},
		{`{"a":"x}"}`, "/a: a lone } at byte 1"},
		{`{"a":["{$run}"]}`, "/a/0: no placeholder {$run}"},
		{`"{payee}"`, "{payee} is not a placeholder"},
		{`"{/a~2}"`, "~ is written ~0"},
		{`"{/a{/b}}"`, "not closed"},
		{`{"n":1.5}`, "/n: the number 1.5"},
		{`{"a":1,"a":2}`, "named twice"},
		{`{`, "not JSON"},
	}
	for _, c := range cases {
		_, err := jsontemplate.Compile([]byte(c.template), names...)
		if !isTemplateError(err) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: %v; want a template refusal saying %q", c.template, err, c.words)
		}
	}
	if _, err := jsontemplate.CompileString("run-{$delivery", names...); err == nil {
		t.Error("an unclosed run id template compiled")
	}
}

func TestCondition(t *testing.T) {
	in := values(t, `{"action":"opened","labels":["refund"],"n":2,"price":1.5,"issue":{"number":7}}`)
	cases := []struct {
		pointer, value string
		holds          bool
	}{
		{"/action", `"opened"`, true},
		{"/action", `"closed"`, false},
		{"/n", `2`, true},
		{"/n", `"2"`, false},
		{"/labels", `["refund"]`, true},
		{"/labels", `["refund","x"]`, false},
		{"/issue", `{"number":7}`, true},
		{"/issue", `{"number":8}`, false},
		{"/missing", `null`, false},
		{"/price", `1`, false},
	}
	for _, c := range cases {
		cond, err := jsontemplate.NewCondition(c.pointer, []byte(c.value))
		if err != nil {
			t.Fatal(err)
		}
		if got := cond.Holds(in.Body); got != c.holds {
			t.Errorf("%s = %s: %v, want %v", c.pointer, c.value, got, c.holds)
		}
	}
	for _, bad := range []struct{ p, v string }{{"action", `"x"`}, {"", `"x"`}, {"/a", `1.5`}, {"/a", `{`}} {
		if _, err := jsontemplate.NewCondition(bad.p, []byte(bad.v)); !isTemplateError(err) {
			t.Errorf("condition %q = %s: %v; want a refusal", bad.p, bad.v, err)
		}
	}
}

func isTemplateError(err error) bool {
	var te *jsontemplate.Error
	return errors.As(err, &te)
}

func TestDecode(t *testing.T) {
	for _, c := range []struct{ text, words string }{
		{`{"a":1,"a":2}`, `"a" named twice in the top`},
		{`{"a":{"b":1,"b":1}}`, `"b" named twice in /a`},
		{`{} {}`, "more than one value"},
		{"\"\xff\"", "not UTF-8"},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), "nested more than 64 deep"},
		{`{`, "EOF"},
	} {
		if _, err := jsontemplate.Decode([]byte(c.text)); err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%q: %v; want an error saying %q", c.text, err, c.words)
		}
	}
	v, err := jsontemplate.Decode([]byte(`{"n":12345678901234567890,"f":1.5}`))
	if err != nil || fmt.Sprint(v) != "map[f:1.5 n:12345678901234567890]" {
		t.Fatalf("numbers kept exact: %v, %v", v, err)
	}
}

func TestReadsBody(t *testing.T) {
	for text, want := range map[string]bool{`{"a":"{$delivery}"}`: false, `["x","{/a}"]`: true, `{"a":{"b":"{$body}"}}`: true, `"plain"`: false} {
		tp, err := jsontemplate.Compile([]byte(text), names...)
		if err != nil || tp.ReadsBody() != want {
			t.Errorf("%s: ReadsBody %v, %v; want %v", text, tp.ReadsBody(), err, want)
		}
	}
}

func TestRenderStringAndCanonical(t *testing.T) {
	in := values(t, `{"b":2,"a":"x"}`)
	obj, _ := jsontemplate.Compile([]byte(`{"z":"{/b}","y":"{/a}"}`), names...)
	if b, err := obj.RenderCanonical(in); err != nil || string(b) != `{"y":"x","z":2}` {
		t.Fatalf("canonical: %s, %v", b, err)
	}
	if _, err := obj.RenderString(in); err == nil || !strings.Contains(err.Error(), "makes an object, not a string") {
		t.Fatalf("an object as a string: %v", err)
	}
	str, _ := jsontemplate.CompileString("r-{/a}-{$hook}", names...)
	if got, err := str.RenderString(in); err != nil || got != "r-x-shop" {
		t.Fatalf("string: %q, %v", got, err)
	}
}
