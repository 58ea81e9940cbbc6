package startpages

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"reflect"
	"testing"
)

// A DT_RELR table decodes to the words the loader relocates: an even
// entry is one address, an odd entry a bitmap over the 63 words after the
// last address covered. Only targets near a read-only segment are kept.
func TestReadRELRTargetsDecodesAddressesAndBitmaps(t *testing.T) {
	l := Layout{Type: elf.ET_DYN, TargetSize: 8, Progs: []Prog{
		{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0, Vaddr: 0, Filesz: 0x10000, Memsz: 0x10000},
		{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 0x10000, Vaddr: 0x20000, Filesz: 0x1000, Memsz: 0x2000},
	}}
	entries := []uint64{
		0x1000,                  // 0x1000; the next bitmap starts at 0x1008
		1 | 1<<1 | 1<<3 | 1<<63, // 0x1008, 0x1018, 0x1008+62*8 = 0x11f8
		1 | 1<<2,                // next bitmap at 0x1008+63*8 = 0x1200: bit 2 is 0x1208
		0x20008,                 // in the writable segment: not kept
		1 | 1<<1,                // 0x20010: not kept
		0xfffc,                  // straddles the read-only segment's end: kept
	}
	data := make([]byte, 8*len(entries))
	for i, e := range entries {
		binary.LittleEndian.PutUint64(data[8*i:], e)
	}
	if err := l.readRELRTargets(bytes.NewReader(data), uint64(len(data)), 8, binary.LittleEndian, make([]byte, readBuffer)); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0x1000, 0x1008, 0x1018, 0x11f8, 0x1208, 0xfffc}; !reflect.DeepEqual(l.Targets, want) {
		t.Fatalf("targets %x, want %x", l.Targets, want)
	}
	// Any buffer gives the same targets, however the entries fall across
	// reads.
	for _, n := range []int{0, 1, 7, 8, 12, 16, 24, 1000} {
		l2 := l
		l2.Targets = nil
		if err := l2.readRELRTargets(bytes.NewReader(data), uint64(len(data)), 8, binary.LittleEndian, make([]byte, n)); err != nil {
			t.Fatalf("buffer of %d: %v", n, err)
		}
		if !reflect.DeepEqual(l2.Targets, l.Targets) {
			t.Fatalf("buffer of %d: targets %x, want %x", n, l2.Targets, l.Targets)
		}
	}
	// Each target keeps its page out of the plan.
	maps := []Mapping{{Start: 0x7f0000000000, End: 0x7f0000010000, Perms: "r--p", Offset: 0}}
	got, err := Plan(l, maps, 0x1000)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Range{{0x7f0000000000, 0x7f0000001000}, {0x7f0000002000, 0x7f000000f000}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("plan %x, want %x", got, want)
	}

	// 32-bit entries: 31 bits a bitmap.
	l32 := Layout{Type: elf.ET_DYN, TargetSize: 4, Progs: l.Progs}
	data32 := make([]byte, 8)
	binary.LittleEndian.PutUint32(data32, 0x2000)
	binary.LittleEndian.PutUint32(data32[4:], 1|1<<31)
	if err := l32.readRELRTargets(bytes.NewReader(data32), 8, 4, binary.LittleEndian, make([]byte, readBuffer)); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0x2000, 0x2004 + 30*4}; !reflect.DeepEqual(l32.Targets, want) {
		t.Fatalf("32-bit targets %x, want %x", l32.Targets, want)
	}

	// A bitmap with no address before it, or a partial entry, is refused.
	bad := Layout{Type: elf.ET_DYN, TargetSize: 8, Progs: l.Progs}
	if err := bad.readRELRTargets(bytes.NewReader(data[8:16]), 8, 8, binary.LittleEndian, make([]byte, readBuffer)); err == nil {
		t.Fatal("a bitmap before any address was accepted")
	}
	if err := bad.readRELRTargets(bytes.NewReader(data[:12]), 12, 8, binary.LittleEndian, make([]byte, readBuffer)); err == nil {
		t.Fatal("a table that is not a whole number of entries was accepted")
	}
}
