package control

import (
	"regexp"
	"sync"

	"flrh.dev/flrh/cjson"
)

// MaxConfigurationBytes bounds one encoded configuration.
const MaxConfigurationBytes = 1 << 16

var reDigest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })

// EncodeConfiguration returns the canonical bytes of a configuration, the
// form a checkpoint stores.
func EncodeConfiguration(c Configuration) ([]byte, error) {
	if c.Pending == nil {
		c.Pending = []string{}
	}
	return cjson.Marshal(c)
}

// DecodeConfiguration parses a stored configuration strictly. Shape errors
// are typed *Error values with a pointer; use Machine.Validate to check the
// result against a table before stepping it.
func DecodeConfiguration(text []byte) (Configuration, error) {
	var c Configuration
	if len(text) > MaxConfigurationBytes {
		return c, errorf(CodeLimit, "", "configuration is %d bytes, more than %d", len(text), MaxConfigurationBytes)
	}
	v, err := decodeStrict(text)
	if err != nil {
		return c, err
	}
	o, err := asObj(v, "")
	if err != nil {
		return c, err
	}
	if c.Table, err = o.str("table", false, reDigest()); err != nil {
		return c, err
	}
	if c.State, err = o.str("state", true, reUpperID()); err != nil {
		return c, err
	}
	if c.Pending, err = o.strings("pending_interrupts", true, false, reUpperID()); err != nil {
		return c, err
	}
	if c.Pending == nil {
		c.Pending = []string{}
	}
	if ctx, err := o.object("context", false); err != nil {
		return c, err
	} else if ctx != nil && len(ctx.m) > 0 {
		// An empty context is stored as absent; decode it as absent too,
		// so that decoding and encoding round-trip exactly.
		c.Context = map[string]bool{}
		for _, k := range sortedKeys(ctx.m) {
			b, err := ctx.boolean(k, true)
			if err != nil {
				return c, err
			}
			c.Context[k] = b
		}
	}
	seq, _, err := o.integer("seq", true)
	if err != nil {
		return c, err
	}
	if seq < 0 {
		return c, errorf(CodeSchema, "/seq", "seq %d is negative", seq)
	}
	c.Seq = seq
	if c.Head, err = o.str("head", false, reDigest()); err != nil {
		return c, err
	}
	return c, o.done()
}

// Validate reports whether c is a configuration this machine can have
// produced: a declared state, sorted known pending interrupts only inside
// the deferral states, declared context fields, this table's digest. A
// checkpoint whose configuration fails is corrupt or from another table and
// must be quarantined, not stepped.
func (m *Machine) Validate(c Configuration) error {
	if ptr, detail := m.checkConfiguration(c); detail != "" {
		return errorf(CodeInput, ptr, "%s", detail)
	}
	return nil
}
