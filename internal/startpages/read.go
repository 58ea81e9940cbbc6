package startpages

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ReadLayout reads an executable's program headers and the targets of
// every relocation the loader applies: the tables the dynamic section names
// (DT_RELA, DT_REL, DT_JMPREL) and, to be safe, every allocated
// relocation section. A dynamic tag it does not know how to read (packed
// DT_RELR relocations, say) is recorded as Unknown so that Plan refuses.
func ReadLayout(r io.ReaderAt) (Layout, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return Layout{}, unexpected("not ELF: %v", err)
	}
	defer f.Close()
	l := Layout{Type: f.Type, TargetSize: 8}
	word := uint64(8)
	if f.Class == elf.ELFCLASS32 {
		word, l.TargetSize = 4, 4
	}
	// One read buffer serves every relocation table of the file: planning
	// runs while packages initialise, where its heap counts.
	buf := make([]byte, readBuffer)
	for _, p := range f.Progs {
		l.Progs = append(l.Progs, Prog{Type: p.Type, Flags: p.Flags, Off: p.Off, Vaddr: p.Vaddr, Filesz: p.Filesz, Memsz: p.Memsz})
	}
	if hasProg(f, elf.PT_DYNAMIC) && f.SectionByType(elf.SHT_DYNAMIC) == nil {
		// The loader reads the segment; without the section the tags
		// (and so the relocation tables) cannot be read here.
		l.Unknown = "dynamic segment without a dynamic section"
	} else if f.SectionByType(elf.SHT_DYNAMIC) != nil {
		if err := readDynamic(f, &l, word, buf); err != nil {
			return Layout{}, err
		}
	}
	for _, s := range f.Sections {
		if s.Type == shtRELR && s.Flags&elf.SHF_ALLOC != 0 {
			if s.Entsize != 0 && s.Entsize != word {
				return Layout{}, unexpected("section %s: entry size %d", s.Name, s.Entsize)
			}
			if err := l.readRELRTargets(s.Open(), s.Size, word, f.ByteOrder, buf); err != nil {
				return Layout{}, unexpected("section %s: %v", s.Name, err)
			}
			continue
		}
		if (s.Type != elf.SHT_RELA && s.Type != elf.SHT_REL) || s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		ent := 2 * word
		if s.Type == elf.SHT_RELA {
			ent = 3 * word
		}
		if s.Entsize != 0 {
			ent = s.Entsize
		}
		if err := l.readTargets(s.Open(), s.Size, ent, word, f.ByteOrder, buf); err != nil {
			return Layout{}, unexpected("section %s: %v", s.Name, err)
		}
	}
	return l, nil
}

func hasProg(f *elf.File, t elf.ProgType) bool {
	for _, p := range f.Progs {
		if p.Type == t {
			return true
		}
	}
	return false
}

// DT_RELR and its size tags: packed relative relocations (the shared C
// library of current distributions uses them), and the section type that
// holds them.
const (
	dtRELRSZ  elf.DynTag      = 35
	dtRELR    elf.DynTag      = 36
	dtRELRENT elf.DynTag      = 37
	shtRELR   elf.SectionType = 19
)

// readRELR reads the packed relative relocations the dynamic section
// names, if any. Any tag missing, or an entry size other than the word,
// is recorded as Unknown so that Plan refuses.
func readRELR(f *elf.File, l *Layout, word uint64, buf []byte, one func(elf.DynTag) (uint64, bool, error)) error {
	addr, hasAddr, err := one(dtRELR)
	if err != nil {
		return err
	}
	size, hasSize, err := one(dtRELRSZ)
	if err != nil {
		return err
	}
	ent, hasEnt, err := one(dtRELRENT)
	if err != nil {
		return err
	}
	if !hasAddr && !hasSize && !hasEnt {
		return nil
	}
	if !hasAddr || !hasSize || !hasEnt || ent != word {
		l.Unknown = "packed relative relocations without their address, size or word-sized entries"
		return nil
	}
	r, err := atVaddr(f, addr, size)
	if err != nil {
		return err
	}
	if err := l.readRELRTargets(r, size, word, f.ByteOrder, buf); err != nil {
		return unexpected("packed relocations at %#x: %v", addr, err)
	}
	return nil
}

// readRELRTargets decodes a DT_RELR table: an even entry is the address
// of a relocated word and starts a run; an odd entry is a bitmap whose bit
// i (from 1) relocates the i-th word after the run's last address
// covered. Like readTargets it keeps only targets near a read-only
// segment.
func (l *Layout) readRELRTargets(r io.Reader, size, word uint64, bo binary.ByteOrder, buf []byte) error {
	if size%word != 0 {
		return fmt.Errorf("%d bytes of %d-byte entries", size, word)
	}
	bits := word*8 - 1 // bitmap bits per odd entry
	var next uint64    // first address the next bitmap covers
	haveAddr := false
	if word > uint64(len(buf)) {
		buf = make([]byte, word)
	}
	buf = buf[:uint64(len(buf))/word*word]
	for size > 0 {
		n := min(uint64(len(buf)), size)
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return err
		}
		for o := uint64(0); o < n; o += word {
			var e uint64
			if word == 4 {
				e = uint64(bo.Uint32(buf[o:]))
			} else {
				e = bo.Uint64(buf[o:])
			}
			if e&1 == 0 {
				if l.nearReadOnly(e) {
					l.Targets = append(l.Targets, e)
				}
				next, haveAddr = e+word, true
				continue
			}
			if !haveAddr {
				return fmt.Errorf("bitmap before any address")
			}
			for i := uint64(0); i < bits; i++ {
				if e>>(i+1)&1 != 0 {
					if t := next + i*word; l.nearReadOnly(t) {
						l.Targets = append(l.Targets, t)
					}
				}
			}
			next += bits * word
		}
		size -= n
	}
	return nil
}

func readDynamic(f *elf.File, l *Layout, word uint64, buf []byte) error {
	one := func(tag elf.DynTag) (uint64, bool, error) {
		vs, err := f.DynValue(tag)
		if err != nil {
			return 0, false, unexpected("dynamic section: %v", err)
		}
		switch len(vs) {
		case 0:
			return 0, false, nil
		case 1:
			return vs[0], true, nil
		}
		return 0, false, unexpected("%d %v entries", len(vs), tag)
	}
	if _, ok, err := one(elf.DT_TEXTREL); err != nil {
		return err
	} else if ok {
		l.TextRel = true
	}
	if err := readRELR(f, l, word, buf, one); err != nil {
		return err
	}
	if flags, ok, err := one(elf.DT_FLAGS); err != nil {
		return err
	} else if ok && elf.DynFlag(flags)&elf.DF_TEXTREL != 0 {
		l.TextRel = true
	}
	tables := []struct {
		addr, size, ent elf.DynTag
		defEnt          uint64
	}{
		{elf.DT_RELA, elf.DT_RELASZ, elf.DT_RELAENT, 3 * word},
		{elf.DT_REL, elf.DT_RELSZ, elf.DT_RELENT, 2 * word},
		{elf.DT_JMPREL, elf.DT_PLTRELSZ, elf.DT_NULL, 0},
	}
	for _, tb := range tables {
		addr, ok, err := one(tb.addr)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		size, ok, err := one(tb.size)
		if err != nil {
			return err
		}
		if !ok {
			return unexpected("%v without %v", tb.addr, tb.size)
		}
		ent := tb.defEnt
		if tb.addr == elf.DT_JMPREL {
			kind, ok, err := one(elf.DT_PLTREL)
			if err != nil {
				return err
			}
			switch {
			case ok && elf.DynTag(kind) == elf.DT_RELA:
				ent = 3 * word
			case ok && elf.DynTag(kind) == elf.DT_REL:
				ent = 2 * word
			default:
				return unexpected("DT_JMPREL of unknown kind")
			}
		} else if v, ok, err := one(tb.ent); err != nil {
			return err
		} else if ok {
			ent = v
		}
		r, err := atVaddr(f, addr, size)
		if err != nil {
			return err
		}
		if err := l.readTargets(r, size, ent, word, f.ByteOrder, buf); err != nil {
			return unexpected("relocations at %#x: %v", addr, err)
		}
	}
	return nil
}

// atVaddr returns a reader of n bytes at link-time address a, from the
// segment holding them in the file.
func atVaddr(f *elf.File, a, n uint64) (io.Reader, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || a < p.Vaddr || a+n < a || a+n > p.Vaddr+p.Filesz {
			continue
		}
		return io.NewSectionReader(p, int64(a-p.Vaddr), int64(n)), nil
	}
	return nil, unexpected("relocations at %#x+%#x outside the file's segments", a, n)
}

// readBuffer is the size of the one buffer ReadLayout reads relocation
// tables through.
const readBuffer = 32 << 10

// readTargets streams relocation entries of ent bytes and keeps the
// r_offset (first word) of those that overlap a non-writable segment:
// Plan releases only whole pages inside such a segment, so a target
// outside every one cannot reach them. A position-independent build has
// hundreds of thousands of relocations, all in writable or RELRO ranges
// the plan excludes whole; holding them would cost more memory than
// releasing saves.
func (l *Layout) readTargets(r io.Reader, size, ent, word uint64, bo binary.ByteOrder, buf []byte) error {
	if ent < word || size%ent != 0 {
		return fmt.Errorf("entry size %d for %d bytes", ent, size)
	}
	if ent > uint64(len(buf)) {
		buf = make([]byte, ent)
	}
	buf = buf[:uint64(len(buf))/ent*ent]
	for size > 0 {
		n := min(uint64(len(buf)), size)
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return err
		}
		for o := uint64(0); o < n; o += ent {
			var t uint64
			if word == 4 {
				t = uint64(bo.Uint32(buf[o:]))
			} else {
				t = bo.Uint64(buf[o:])
			}
			if l.nearReadOnly(t) {
				l.Targets = append(l.Targets, t)
			}
		}
		size -= n
	}
	return nil
}

func (l *Layout) nearReadOnly(t uint64) bool {
	for _, p := range l.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_W != 0 {
			continue
		}
		if t+l.TargetSize > p.Vaddr && t < p.Vaddr+p.Memsz {
			return true
		}
	}
	return false
}

// ParseMaps returns the lines of a /proc/<pid>/maps text that map the file
// with the given inode at path.
func ParseMaps(r io.Reader, path string, inode uint64) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		// address perms offset device inode path
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 {
			continue
		}
		ino, err := strconv.ParseUint(fs[4], 10, 64)
		if err != nil {
			return nil, unexpected("maps line %q", sc.Text())
		}
		if ino != inode || strings.Join(fs[5:], " ") != path {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		if !ok {
			return nil, unexpected("maps line %q", sc.Text())
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(fs[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || b <= a {
			return nil, unexpected("maps line %q", sc.Text())
		}
		out = append(out, Mapping{Start: a, End: b, Perms: fs[1], Offset: off})
	}
	if err := sc.Err(); err != nil {
		return nil, unexpected("reading maps: %v", err)
	}
	return out, nil
}
