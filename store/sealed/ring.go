package sealed

import (
	"fmt"
	"sync/atomic"

	"flrh.dev/flrh/store"
)

// Ring is a Keyring that can be replaced while stores use it: a server
// rotating its keys without a restart (flrh serve on SIGHUP). Every Seal
// and Open uses the keyring of the moment, whole; a replacement never
// drops the key records are being sealed under (Swap).
type Ring struct {
	k atomic.Pointer[Keyring]
}

var _ store.Sealer = (*Ring)(nil)

// NewRing returns a Ring holding k.
func NewRing(k *Keyring) *Ring {
	r := new(Ring)
	r.k.Store(k)
	return r
}

// Keyring is the keyring the Ring holds now.
func (r *Ring) Keyring() *Keyring { return r.k.Load() }

// Primary implements store.PrimaryKeyed: the id of the key new records
// are sealed with now.
func (r *Ring) Primary() string { return r.k.Load().primary }

// Seal implements store.Sealer.
func (r *Ring) Seal(ref store.SealRef, plain []byte) ([]byte, error) {
	return r.k.Load().Seal(ref, plain)
}

// Open implements store.Sealer.
func (r *Ring) Open(ref store.SealRef, stored []byte) ([]byte, error) {
	return r.k.Load().Open(ref, stored)
}

// Swap replaces the keyring with k, which must still hold the key new
// records are sealed with now: records this process wrote a moment ago
// must still open. A keyring without it is refused, the Ring unchanged.
// Rotation is a new key first with the current one after it; dropping a
// key once `flrh store reseal` moved every record off it is a keyring
// whose first key is the current one.
func (r *Ring) Swap(k *Keyring) error {
	cur := r.k.Load()
	if _, ok := k.aeads[cur.primary]; !ok {
		return fmt.Errorf("sealed: the new keys do not hold %s, the key records are sealed under now: put it after the new key", cur.primary)
	}
	if !r.k.CompareAndSwap(cur, k) {
		return fmt.Errorf("sealed: the keys were replaced meanwhile")
	}
	return nil
}
