package startpages

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const page = 0x1000

// A layout like the default (non-PIE) build: code, read-only data holding
// the relocation tables, and a writable segment that all relocations
// target.
func execLayout() Layout {
	return Layout{
		Type: elf.ET_EXEC,
		Progs: []Prog{
			{Type: elf.PT_PHDR, Flags: elf.PF_R, Off: 0x40, Vaddr: 0x400040, Filesz: 0x1f8, Memsz: 0x1f8},
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0, Vaddr: 0x400000, Filesz: 0x10a10, Memsz: 0x10a10},
			{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0x11000, Vaddr: 0x411000, Filesz: 0x8148, Memsz: 0x8148},
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 0x1a000, Vaddr: 0x41a000, Filesz: 0x2220, Memsz: 0x9000},
			{Type: elf.PT_DYNAMIC, Flags: elf.PF_R | elf.PF_W, Off: 0x1b400, Vaddr: 0x41b400, Filesz: 0x130, Memsz: 0x130},
		},
		Targets:    []uint64{0x41b558, 0x41b560, 0x41b910},
		TargetSize: 8,
	}
}

func execMaps() []Mapping {
	return []Mapping{
		{Start: 0x400000, End: 0x411000, Perms: "r-xp", Offset: 0},
		{Start: 0x411000, End: 0x41a000, Perms: "r--p", Offset: 0x11000},
		{Start: 0x41a000, End: 0x41d000, Perms: "rw-p", Offset: 0x1a000},
	}
}

func TestPlanReleasesWholeReadOnlyPages(t *testing.T) {
	got, err := Plan(execLayout(), execMaps(), page)
	if err != nil {
		t.Fatal(err)
	}
	// Code: whole pages of [0x400000, 0x410a10); read-only data: whole
	// pages of [0x411000, 0x419148). The partial last pages stay.
	want := []Range{{0x400000, 0x410000}, {0x411000, 0x419000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

func TestPlanKeepsEveryPageTheLoaderMayWrite(t *testing.T) {
	l := execLayout()
	// A relocation straddling two pages of the code, a RELRO range in the
	// read-only data, and a read-only PT_DYNAMIC at its end.
	l.Targets = append(l.Targets, 0x403ffc)
	l.Progs = append(l.Progs,
		Prog{Type: elf.PT_GNU_RELRO, Flags: elf.PF_R, Off: 0x12800, Vaddr: 0x412800, Filesz: 0x100, Memsz: 0x100},
		Prog{Type: elf.PT_DYNAMIC, Flags: elf.PF_R, Off: 0x18000, Vaddr: 0x418000, Filesz: 0x10, Memsz: 0x10},
	)
	got, err := Plan(l, execMaps(), page)
	if err != nil {
		t.Fatal(err)
	}
	want := []Range{{0x400000, 0x403000}, {0x405000, 0x410000}, {0x411000, 0x412000}, {0x413000, 0x418000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

// A position-independent layout in which the loader writes everywhere:
// RELRO covers the read-only data and relocations hit every page of the
// code. Nothing may be released, and the load bias must not matter.
func TestPlanPIEWithRelocationsEverywhereReleasesNothing(t *testing.T) {
	l := Layout{
		Type: elf.ET_DYN,
		Progs: []Prog{
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0, Vaddr: 0, Filesz: 0x4000, Memsz: 0x4000},
			{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0x4000, Vaddr: 0x4000, Filesz: 0x3000, Memsz: 0x3000},
			{Type: elf.PT_GNU_RELRO, Flags: elf.PF_R, Off: 0x4000, Vaddr: 0x4000, Filesz: 0x3000, Memsz: 0x3000},
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 0x7000, Vaddr: 0x8000, Filesz: 0x1000, Memsz: 0x2000},
		},
		Targets:    []uint64{0x10, 0x1ff8, 0x1008, 0x2010, 0x3ffc, 0x8008},
		TargetSize: 8,
	}
	const bias = 0x5555_5555_4000
	maps := []Mapping{
		{Start: bias, End: bias + 0x4000, Perms: "r-xp", Offset: 0},
		{Start: bias + 0x4000, End: bias + 0x7000, Perms: "r--p", Offset: 0x4000},
		{Start: bias + 0x8000, End: bias + 0x9000, Perms: "rw-p", Offset: 0x7000},
	}
	got, err := Plan(l, maps, page)
	if err != nil || len(got) != 0 {
		t.Fatalf("got %x, %v; want nothing and no error", got, err)
	}
	// With one page of code left untouched, exactly that page is
	// released, at its runtime address.
	l.Targets = []uint64{0x10, 0x1ff8, 0x3ffc, 0x8008}
	got, err = Plan(l, maps, page)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Range{{bias + 0x2000, bias + 0x3000}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

func TestPlanRefusesWhatItCannotAccountFor(t *testing.T) {
	cases := map[string]func(*Layout, *[]Mapping){
		"text relocations":  func(l *Layout, _ *[]Mapping) { l.TextRel = true },
		"unknown relocs":    func(l *Layout, _ *[]Mapping) { l.Unknown = "packed relative relocations" },
		"core file":         func(l *Layout, _ *[]Mapping) { l.Type = elf.ET_CORE },
		"no segments":       func(l *Layout, _ *[]Mapping) { l.Progs = l.Progs[:1] },
		"unmapped code":     func(_ *Layout, m *[]Mapping) { *m = (*m)[1:] },
		"writable mapping":  func(_ *Layout, m *[]Mapping) { (*m)[1].Perms = "rw-p" },
		"shared mapping":    func(_ *Layout, m *[]Mapping) { (*m)[0].Perms = "r-xs" },
		"wrong permissions": func(_ *Layout, m *[]Mapping) { (*m)[0].Perms = "r--p" },
		"wrong offset":      func(_ *Layout, m *[]Mapping) { (*m)[1].Offset = 0x12000 },
		"hole in mapping": func(_ *Layout, m *[]Mapping) {
			(*m)[0].End = 0x408000
			*m = append(*m, Mapping{Start: 0x409000, End: 0x411000, Perms: "r-xp", Offset: 0x9000})
		},
		"incongruent segment": func(l *Layout, _ *[]Mapping) { l.Progs[2].Off += 0x10 },
		"file beyond memory":  func(l *Layout, _ *[]Mapping) { l.Progs[2].Filesz = l.Progs[2].Memsz + 1 },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			l, m := execLayout(), execMaps()
			change(&l, &m)
			got, err := Plan(l, m, page)
			if !errors.Is(err, ErrUnexpected) || got != nil {
				t.Fatalf("got %x, %v; want a refusal", got, err)
			}
		})
	}
	if _, err := Plan(execLayout(), execMaps(), 3000); !errors.Is(err, ErrUnexpected) {
		t.Fatalf("page size 3000: %v", err)
	}
}

func TestPlanPIEFindsTheBiasOrRefuses(t *testing.T) {
	l := execLayout()
	l.Type = elf.ET_DYN
	for i := range l.Progs {
		l.Progs[i].Vaddr -= 0x400000
	}
	for i := range l.Targets {
		l.Targets[i] -= 0x400000
	}
	const bias = 0x7f00_0000_0000
	maps := execMaps()
	for i := range maps {
		maps[i].Start += bias - 0x400000
		maps[i].End += bias - 0x400000
	}
	got, err := Plan(l, maps, page)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Range{{bias, bias + 0x10000}, {bias + 0x11000, bias + 0x19000}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
	// Two mappings of the first page: which one is this executable's is
	// ambiguous, so nothing is released.
	maps = append(maps, Mapping{Start: 0x1000_0000, End: 0x1000_1000, Perms: "r--p", Offset: 0})
	if got, err := Plan(l, maps, page); !errors.Is(err, ErrUnexpected) {
		t.Fatalf("got %x, %v; want a refusal", got, err)
	}
}

func TestParseMapsKeepsTheExecutablesLines(t *testing.T) {
	text := `00400000-01400000 r-xp 00000000 08:01 1234 /usr/bin/flrh
01400000-02000000 r--p 00ece000 08:01 1234 /usr/bin/flrh
02000000-02100000 rw-p 01e67000 08:01 1234 /usr/bin/flrh
02100000-02200000 rw-p 00000000 00:00 0 
7f0000000000-7f0000100000 r-xp 00000000 08:01 99 /usr/lib/libc.so.6
7f0000200000-7f0000300000 r--p 00000000 08:01 1234 /other/flrh
`
	got, err := ParseMaps(strings.NewReader(text), "/usr/bin/flrh", 1234)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{0x400000, 0x1400000, "r-xp", 0},
		{0x1400000, 0x2000000, "r--p", 0xece000},
		{0x2000000, 0x2100000, "rw-p", 0x1e67000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
	if _, err := ParseMaps(strings.NewReader("zz-01 r-xp 0 08:01 1234 /usr/bin/flrh\n"), "/usr/bin/flrh", 1234); !errors.Is(err, ErrUnexpected) {
		t.Fatalf("malformed line: %v", err)
	}
}

func TestSubtract(t *testing.T) {
	a := merge([]Range{{10, 20}, {30, 40}, {15, 25}})
	b := merge([]Range{{12, 14}, {20, 32}, {38, 50}})
	got := subtract(a, b)
	want := []Range{{10, 12}, {14, 20}, {32, 38}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// Only relocation targets that overlap a non-writable segment are kept:
// the others cannot reach a page the plan would release.
func TestReadTargetsKeepsOnlyThoseNearReadOnlySegments(t *testing.T) {
	l := execLayout()
	l.Targets = nil
	var data []byte
	for _, v := range []uint64{0x41b558, 0x400ff8, 0x3ffffc, 0x419140, 0x41a000, 0x10} {
		e := make([]byte, 24)
		binary.LittleEndian.PutUint64(e, v)
		data = append(data, e...)
	}
	if err := l.readTargets(bytes.NewReader(data), uint64(len(data)), 24, 8, binary.LittleEndian, make([]byte, readBuffer)); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0x400ff8, 0x3ffffc, 0x419140}; !reflect.DeepEqual(l.Targets, want) {
		t.Fatalf("kept %x, want %x", l.Targets, want)
	}
	// The table streams through whatever buffer it is given, shorter than
	// an entry or not a whole number of entries, with the same result.
	for _, n := range []int{0, 1, 23, 24, 40, 71, 72, 1000} {
		l.Targets = nil
		if err := l.readTargets(bytes.NewReader(data), uint64(len(data)), 24, 8, binary.LittleEndian, make([]byte, n)); err != nil {
			t.Fatalf("buffer of %d: %v", n, err)
		}
		if want := []uint64{0x400ff8, 0x3ffffc, 0x419140}; !reflect.DeepEqual(l.Targets, want) {
			t.Fatalf("buffer of %d: kept %x, want %x", n, l.Targets, want)
		}
	}
	if err := l.readTargets(bytes.NewReader(data[:30]), 30, 24, 8, binary.LittleEndian, make([]byte, readBuffer)); err == nil {
		t.Fatal("a table that is not a whole number of entries was accepted")
	}
}
