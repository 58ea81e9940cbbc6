// Package startpages releases the pages of the running executable that
// start-up faulted in and that the rest of the run may never touch again.
//
// Initialising every package of the product touches code and tables all
// over the binary. Where the kernel counts each touched page of a private
// file mapping as the process's own memory, those pages stay in the
// resident set for the whole run. A page that no one ever wrote can be
// dropped with madvise(MADV_DONTNEED) at no risk: the next access maps the
// same bytes from the file again. A page the loader wrote (a relocation,
// including one in a read-only-after-relocation range) would come back
// unrelocated, so the plan here proves, from the executable's own headers,
// that every page it names is outside everything the loader can write, and
// names nothing at all when the headers or the process's mappings look
// different from what it expects. The same proof applies, file by file, to
// the shared objects the process maps (the C library and the loader of a
// cgo build), whose packed relative relocations (DT_RELR) it decodes.
package startpages

import (
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Prog is the part of a program header the plan reads.
type Prog struct {
	Type   elf.ProgType
	Flags  elf.ProgFlag
	Off    uint64 // file offset
	Vaddr  uint64 // link-time virtual address
	Filesz uint64
	Memsz  uint64
}

// Layout is what the plan needs to know of an executable.
type Layout struct {
	Type  elf.Type // ET_EXEC loads at its link addresses; ET_DYN anywhere
	Progs []Prog
	// Targets are the link-time addresses of every dynamic relocation: the
	// words the loader writes.
	Targets []uint64
	// TargetSize is the size of the widest word a relocation writes.
	TargetSize uint64
	// TextRel says the executable asks for relocations in non-writable
	// segments (DT_TEXTREL or DF_TEXTREL); Unknown that it carries some
	// relocation table the plan cannot read (say, DT_RELR). Either refuses
	// the plan.
	TextRel bool
	Unknown string
}

// Mapping is one line of /proc/self/maps that maps the executable.
type Mapping struct {
	Start, End uint64 // runtime addresses, End exclusive
	Perms      string // "r-xp", "r--p", ...
	Offset     uint64 // file offset of Start
}

// Range is a runtime address range, End exclusive.
type Range struct{ Start, End uint64 }

// Pages is a checked plan for the running executable: the ranges Plan
// accepted, kept so they can be released more than once.
type Pages struct{ ranges []Range }

// ErrUnexpected is wrapped by every refusal: the plan found something it
// does not account for and releases nothing.
var ErrUnexpected = errors.New("startpages: unexpected executable layout")

func unexpected(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUnexpected, fmt.Sprintf(format, a...))
}

// Plan returns the runtime ranges of whole pages that lie in a loaded,
// non-writable segment and outside every range the loader may write: any
// writable segment, every PT_GNU_RELRO range, PT_DYNAMIC, and the page of
// every relocation target. Each range is checked against the process's
// mappings of the executable (same file offsets, no write permission,
// private, the segment's own permissions); any disagreement, a text
// relocation or an unknown relocation table refuses the whole plan.
func Plan(l Layout, maps []Mapping, pageSize uint64) ([]Range, error) {
	if pageSize == 0 || pageSize&(pageSize-1) != 0 {
		return nil, unexpected("page size %d", pageSize)
	}
	if l.TextRel {
		return nil, unexpected("text relocations")
	}
	if l.Unknown != "" {
		return nil, unexpected("%s", l.Unknown)
	}
	if l.Type != elf.ET_EXEC && l.Type != elf.ET_DYN {
		return nil, unexpected("ELF type %v", l.Type)
	}
	if l.TargetSize == 0 {
		return nil, unexpected("relocation word size 0")
	}
	down := func(a uint64) uint64 { return a &^ (pageSize - 1) }
	up := func(a uint64) (uint64, bool) {
		b := (a + pageSize - 1) &^ (pageSize - 1)
		return b, b >= a
	}
	var candidates, excluded []Range
	// exclude adds [a, a+n) rounded out to whole pages.
	exclude := func(a, n uint64) error {
		end, ok := up(a + n)
		if a+n < a || !ok {
			return unexpected("range %#x+%#x overflows", a, n)
		}
		excluded = append(excluded, Range{down(a), end})
		return nil
	}
	var loads []Prog
	for _, p := range l.Progs {
		switch p.Type {
		case elf.PT_LOAD:
			if p.Filesz > p.Memsz {
				return nil, unexpected("segment at %#x: file size above memory size", p.Vaddr)
			}
			if (p.Vaddr-p.Off)%pageSize != 0 {
				return nil, unexpected("segment at %#x not page-congruent with its offset", p.Vaddr)
			}
			loads = append(loads, p)
			if p.Flags&elf.PF_W != 0 {
				if err := exclude(p.Vaddr, p.Memsz); err != nil {
					return nil, err
				}
				continue
			}
			// Only whole pages of file bytes: the partial pages at either
			// end may be shared with bytes another segment owns.
			start, ok := up(p.Vaddr)
			if !ok || p.Vaddr+p.Filesz < p.Vaddr {
				return nil, unexpected("segment at %#x overflows", p.Vaddr)
			}
			if end := down(p.Vaddr + p.Filesz); end > start {
				candidates = append(candidates, Range{start, end})
			}
		case elf.PT_GNU_RELRO, elf.PT_DYNAMIC:
			if err := exclude(p.Vaddr, p.Memsz); err != nil {
				return nil, err
			}
		}
	}
	if len(loads) == 0 {
		return nil, unexpected("no loadable segment")
	}
	for _, t := range l.Targets {
		if err := exclude(t, l.TargetSize); err != nil {
			return nil, err
		}
	}
	free := subtract(merge(candidates), merge(excluded))
	if len(free) == 0 {
		return nil, nil
	}
	bias, err := loadBias(l, loads, maps, pageSize)
	if err != nil {
		return nil, err
	}
	out := make([]Range, 0, len(free))
	for _, r := range free {
		seg, ok := segmentOf(loads, r)
		if !ok {
			return nil, unexpected("range %#x-%#x spans segments", r.Start, r.End)
		}
		rt := Range{r.Start + bias, r.End + bias}
		if rt.Start < r.Start {
			return nil, unexpected("load bias overflows")
		}
		if err := covered(rt, seg.Off+(r.Start-seg.Vaddr), seg.Flags, maps); err != nil {
			return nil, err
		}
		out = append(out, rt)
	}
	return out, nil
}

// loadBias is the difference between runtime and link-time addresses: 0
// for ET_EXEC, and for ET_DYN read from where the lowest segment's first
// page is mapped.
func loadBias(l Layout, loads []Prog, maps []Mapping, pageSize uint64) (uint64, error) {
	if l.Type == elf.ET_EXEC {
		return 0, nil
	}
	first := loads[0]
	for _, p := range loads[1:] {
		if p.Vaddr < first.Vaddr {
			first = p
		}
	}
	off := first.Off &^ (pageSize - 1)
	var found []uint64
	for _, m := range maps {
		if m.Offset == off {
			found = append(found, m.Start-(first.Vaddr&^(pageSize-1)))
		}
	}
	if len(found) != 1 {
		return 0, unexpected("%d mappings of the first segment's offset %#x", len(found), off)
	}
	if found[0]%pageSize != 0 {
		return 0, unexpected("load bias %#x not page-aligned", found[0])
	}
	return found[0], nil
}

func segmentOf(loads []Prog, r Range) (Prog, bool) {
	for _, p := range loads {
		if p.Flags&elf.PF_W == 0 && r.Start >= p.Vaddr && r.End <= p.Vaddr+p.Filesz {
			return p, true
		}
	}
	return Prog{}, false
}

// covered checks that the mappings cover rt entirely with the file bytes
// from off on, without write permission, privately, and with the segment's
// read and execute permissions.
func covered(rt Range, off uint64, flags elf.ProgFlag, maps []Mapping) error {
	want := []byte("---p")
	if flags&elf.PF_R != 0 {
		want[0] = 'r'
	}
	if flags&elf.PF_X != 0 {
		want[2] = 'x'
	}
	at := rt.Start
	for at < rt.End {
		i := slices.IndexFunc(maps, func(m Mapping) bool { return m.Start <= at && at < m.End })
		if i < 0 {
			return unexpected("%#x not mapped from the executable", at)
		}
		m := maps[i]
		if m.Perms != string(want) {
			return unexpected("%#x mapped %s, segment wants %s", at, m.Perms, want)
		}
		if m.Offset+(at-m.Start) != off+(at-rt.Start) {
			return unexpected("%#x maps file offset %#x, segment wants %#x", at, m.Offset+(at-m.Start), off+(at-rt.Start))
		}
		at = m.End
	}
	return nil
}

// merge sorts ranges and joins those that overlap or touch.
func merge(rs []Range) []Range {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	var out []Range
	for _, r := range rs {
		if r.End <= r.Start {
			continue
		}
		if n := len(out); n > 0 && r.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

// subtract returns the parts of a not covered by b; both merged.
func subtract(a, b []Range) []Range {
	var out []Range
	j := 0
	for _, r := range a {
		for j < len(b) && b[j].End <= r.Start {
			j++
		}
		start := r.Start
		for k := j; k < len(b) && b[k].Start < r.End; k++ {
			if b[k].Start > start {
				out = append(out, Range{start, b[k].Start})
			}
			start = max(start, b[k].End)
		}
		if start < r.End {
			out = append(out, Range{start, r.End})
		}
	}
	return out
}
