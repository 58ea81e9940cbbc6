package sqlite

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// A commit's log frames written with one pwrite.
//
// SQLite appends each page a transaction changed to the write-ahead log as
// a frame, its 24-byte header and its page written apart, so a governed
// step's 34 pages are 68 pwrites. The store opens every connection
// through a VFS of its own, walVFSName, which is SQLite's "unix" VFS but
// for the log file: there contiguous writes are gathered in a buffer and
// written with one pwrite before anything that needs them in the file.
//
// When the buffer is written (flush):
//   - in the write that appends a commit frame's page, after copying it:
//     the commit frame is the last a transaction appends, and SQLite makes
//     a commit visible (the log-index header in shared memory, which
//     readers of this process and others go by) only after that write
//     returns; at synchronous=NORMAL nothing else is called on the log in
//     between. A commit frame's header is one whose database size (bytes
//     4–7) is not zero. A commit frame header written with nothing
//     buffered before it (a commit of one page, or SQLite rewriting a
//     header's checksum in place after reading the frame back) is written
//     at once;
//   - before a write that does not continue the buffer, and when the
//     buffer would pass walBufMax;
//   - before every other method of the log file that reads it or depends
//     on its contents or size: xRead, xSync, xTruncate, xFileSize,
//     xClose, xFileControl, the lock and shared-memory methods and
//     xFetch/xUnfetch. Only xSectorSize and xDeviceCharacteristics, which
//     report what the file is, go straight through.
//
// Writes are never reordered or merged across a gap: what reaches the
// file is what SQLite wrote, in its order, later only by as long as the
// transaction's writes last, and never later than the commit's own write
// returns. A failed flush is the failed write's error (SQLITE_IOERR_WRITE
// or SQLITE_FULL, as the unix VFS reports it) returned from the method
// that flushed; the buffer is dropped, and SQLite treats the
// transaction's frames as unwritten (its log-index header is not moved),
// as after any failed write. A process killed with frames still buffered
// loses only frames of a transaction whose commit frame was not written:
// what a kill before those writes would have left.
//
// Every other file (the database, its shared memory, journals, temporary
// files) is the unix VFS's own, methods and all. The checkpoint's writes
// into the database file are not gathered (decision 1702): after its last
// page SQLite ignores what SQLITE_FCNTL_CKPT_DONE answers and, when it
// copied only part of the log, marks the frames copied (nBackfill) with
// no call in between, so a held-back write that failed would be counted
// as copied. Connections of this VFS
// and of the unix VFS can share a database: the file format, the locks
// (the unix VFS's, shared by inode) and the shared memory are the unix
// VFS's.

const walVFSName = "flrh-wal"

// walBufMax bounds a log file's buffer; a transaction larger than that
// is written in pieces of about that size.
const walBufMax = 1 << 20

// walWriteMax is the most the unix VFS writes in one call: it masks a
// write's length with 0x1ffff (seekAndWrite), so a longer one would be
// cut short and reported as SQLITE_FULL.
const walWriteMax = 0x1ffff

// walFile is the state a log file opened through walVFSName keeps after
// the unix VFS's own (sqlite3_file.szOsFile is enlarged by it). It lives
// in SQLite's memory, like the file it extends.
type walFile struct {
	methods    uintptr // the unix VFS's io methods for this file
	buf        uintptr // libc.Xmalloc'd; nil until first needed
	cap        int64
	n          int64 // bytes buffered
	start      int64 // the file offset of buf[0]
	name       uintptr
	commitNext int32 // the last write was a commit frame's header, buffered
	_          int32
}

var walVFS struct {
	once    sync.Once
	ok      bool
	unix    uintptr // the unix VFS
	ext     uintptr // walFile's offset in a file: the unix VFS's szOsFile, aligned
	methods uintptr // walMethods, in SQLite's memory
}

// walFlushTest, when set, is told of each flush: the log file's name and
// the bytes buffered. A non-zero answer is returned as the flush's error,
// nothing being written (tests count flushes and inject write failures
// with it).
var walFlushTest atomic.Pointer[func(name string, n int64) int32]

// walVFSParam is the DSN parameter that opens a connection through the
// store's VFS ("vfs=flrh-wal"), or "" if it cannot be registered (no unix
// VFS on this platform): then the unix VFS writes the log as it does.
func walVFSParam() string {
	walVFS.once.Do(registerWalVFS)
	if !walVFS.ok {
		return ""
	}
	return walVFSName
}

func registerWalVFS() {
	tls := libc.NewTLS()
	defer tls.Close()
	unixName, err := libc.CString("unix")
	if err != nil {
		return
	}
	defer libc.Xfree(tls, unixName)
	unix := sqlite3.Xsqlite3_vfs_find(tls, unixName)
	if unix == 0 {
		return
	}
	u := (*sqlite3.Tsqlite3_vfs)(cptr(unix))
	ext := (uintptr(u.FszOsFile) + 7) &^ 7
	name, err := libc.CString(walVFSName)
	if err != nil {
		return
	}
	pv := libc.Xmalloc(tls, types.Size_t(unsafe.Sizeof(sqlite3.Tsqlite3_vfs{})))
	pm := libc.Xmalloc(tls, types.Size_t(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{})))
	if pv == 0 || pm == 0 {
		return
	}
	v := (*sqlite3.Tsqlite3_vfs)(cptr(pv))
	*v = *u
	v.FpNext = 0
	v.FzName = name
	// pAppData stays unix's: its methods, copied, may read it.
	v.FszOsFile = int32(ext + unsafe.Sizeof(walFile{}))
	v.FxOpen = cFunc(walOpen)
	m := (*sqlite3.Tsqlite3_io_methods)(cptr(pm))
	*m = sqlite3.Tsqlite3_io_methods{
		FiVersion:               3,
		FxClose:                 cFunc(walClose),
		FxRead:                  cFunc(walRead),
		FxWrite:                 cFunc(walWrite),
		FxTruncate:              cFunc(walTruncate),
		FxSync:                  cFunc(walSync),
		FxFileSize:              cFunc(walFileSize),
		FxLock:                  cFunc(walLock),
		FxUnlock:                cFunc(walUnlock),
		FxCheckReservedLock:     cFunc(walCheckReservedLock),
		FxFileControl:           cFunc(walFileControl),
		FxSectorSize:            cFunc(walSectorSize),
		FxDeviceCharacteristics: cFunc(walDeviceCharacteristics),
		FxShmMap:                cFunc(walShmMap),
		FxShmLock:               cFunc(walShmLock),
		FxShmBarrier:            cFunc(walShmBarrier),
		FxShmUnmap:              cFunc(walShmUnmap),
		FxFetch:                 cFunc(walFetch),
		FxUnfetch:               cFunc(walUnfetch),
	}
	if sqlite3.Xsqlite3_vfs_register(tls, pv, 0) != sqlite3.SQLITE_OK {
		return
	}
	walVFS.unix, walVFS.ext, walVFS.methods, walVFS.ok = unix, ext, pm, true
}

// cFunc is f as SQLite's transpiled C calls a function pointer: a Go func
// value's word (https://golang.org/s/go11func), f being a top-level func.
func cFunc[T any](f T) uintptr {
	return *(*uintptr)(unsafe.Pointer(&struct{ f T }{f}))
}

// cptr is the address p of SQLite's memory (libc's allocator, never Go's
// heap) as a pointer, as the transpiled C uses it.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

func walOf(pFile uintptr) *walFile {
	return (*walFile)(cptr(pFile + walVFS.ext))
}

func ioMethods(p uintptr) *sqlite3.Tsqlite3_io_methods {
	return (*sqlite3.Tsqlite3_io_methods)(cptr(p))
}

// walOpen opens a file through the unix VFS and, for a log file whose
// methods are the unix VFS's full set (version 3), puts the buffering
// methods in front of them.
func walOpen(tls *libc.TLS, pVfs, zName, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	unix := walVFS.unix
	open := (*sqlite3.Tsqlite3_vfs)(cptr(unix)).FxOpen
	w := walOf(pFile)
	*w = walFile{}
	rc := (*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{open})))(tls, unix, zName, pFile, flags, pOutFlags)
	if rc != sqlite3.SQLITE_OK || flags&sqlite3.SQLITE_OPEN_WAL == 0 {
		return rc
	}
	f := (*sqlite3.Tsqlite3_file)(cptr(pFile))
	if f.FpMethods == 0 || ioMethods(f.FpMethods).FiVersion != 3 {
		return rc
	}
	w.methods, w.name = f.FpMethods, zName
	f.FpMethods = walVFS.methods
	return rc
}

// flush writes what is buffered with one write through the unix VFS. The
// buffer is emptied whatever the outcome.
func (w *walFile) flush(tls *libc.TLS, pFile uintptr) int32 {
	w.commitNext = 0
	if w.n == 0 {
		return sqlite3.SQLITE_OK
	}
	n, start := w.n, w.start
	w.n = 0
	if h := walFlushTest.Load(); h != nil {
		if rc := (*h)(libc.GoString(w.name), n); rc != 0 {
			return rc
		}
	}
	for p := w.buf; n > 0; {
		k := min(n, walWriteMax)
		if rc := w.write(tls, pFile, p, int32(k), start); rc != sqlite3.SQLITE_OK {
			return rc
		}
		p, n, start = p+uintptr(k), n-k, start+k
	}
	return sqlite3.SQLITE_OK
}

func (w *walFile) write(tls *libc.TLS, pFile, p uintptr, n int32, off int64) int32 {
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxWrite})))(tls, pFile, p, n, off)
}

// add copies p[:n] to the end of the buffer, growing it; false if it
// would pass walBufMax or memory is short.
func (w *walFile) add(tls *libc.TLS, p uintptr, n int64) bool {
	need := w.n + n
	if need > walBufMax {
		return false
	}
	if need > w.cap {
		c := max(w.cap*2, 64<<10)
		for c < need {
			c *= 2
		}
		c = min(c, walBufMax)
		nb := libc.Xrealloc(tls, w.buf, types.Size_t(c))
		if nb == 0 {
			return false
		}
		w.buf, w.cap = nb, c
	}
	copy(unsafe.Slice((*byte)(cptr(w.buf+uintptr(w.n))), n), unsafe.Slice((*byte)(cptr(p)), n))
	w.n = need
	return true
}

func walWrite(tls *libc.TLS, pFile, pBuf uintptr, amt int32, off int64) int32 {
	w := walOf(pFile)
	if w.commitNext != 0 {
		// A commit frame's page follows its buffered header: the end of
		// the transaction's frames.
		w.commitNext = 0
		if off == w.start+w.n && w.add(tls, pBuf, int64(amt)) {
			return w.flush(tls, pFile)
		}
		if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
			return rc
		}
		return w.write(tls, pFile, pBuf, amt, off)
	}
	commitHdr := amt == 24 && binary.BigEndian.Uint32(unsafe.Slice((*byte)(cptr(pBuf+4)), 4)) != 0
	if w.n > 0 && off == w.start+w.n && w.add(tls, pBuf, int64(amt)) {
		if commitHdr {
			w.commitNext = 1
		}
		return sqlite3.SQLITE_OK
	}
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	if commitHdr {
		// Nothing buffered before it: written at once, and its page
		// after it (if it follows) flushed with the write that brings it.
		w.start, w.commitNext = off+int64(amt), 1
		return w.write(tls, pFile, pBuf, amt, off)
	}
	w.start = off
	if w.add(tls, pBuf, int64(amt)) {
		return sqlite3.SQLITE_OK
	}
	return w.write(tls, pFile, pBuf, amt, off)
}

func walClose(tls *libc.TLS, pFile uintptr) int32 {
	w := walOf(pFile)
	rc := w.flush(tls, pFile)
	close := ioMethods(w.methods).FxClose
	if w.buf != 0 {
		libc.Xfree(tls, w.buf)
	}
	*w = walFile{}
	crc := (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{close})))(tls, pFile)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return crc
}

func walRead(tls *libc.TLS, pFile, pBuf uintptr, amt int32, off int64) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxRead})))(tls, pFile, pBuf, amt, off)
}

func walTruncate(tls *libc.TLS, pFile uintptr, size int64) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int64) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxTruncate})))(tls, pFile, size)
}

func walSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxSync})))(tls, pFile, flags)
}

func walFileSize(tls *libc.TLS, pFile, pSize uintptr) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxFileSize})))(tls, pFile, pSize)
}

func walLock(tls *libc.TLS, pFile uintptr, lock int32) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxLock})))(tls, pFile, lock)
}

// walUnlock unlocks whether or not the flush before it failed, and
// reports the flush's failure.
func walUnlock(tls *libc.TLS, pFile uintptr, lock int32) int32 {
	w := walOf(pFile)
	rc := w.flush(tls, pFile)
	urc := (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxUnlock})))(tls, pFile, lock)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return urc
}

func walCheckReservedLock(tls *libc.TLS, pFile, pResOut uintptr) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxCheckReservedLock})))(tls, pFile, pResOut)
}

func walFileControl(tls *libc.TLS, pFile uintptr, op int32, pArg uintptr) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxFileControl})))(tls, pFile, op, pArg)
}

func walSectorSize(tls *libc.TLS, pFile uintptr) int32 {
	return (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(walOf(pFile).methods).FxSectorSize})))(tls, pFile)
}

func walDeviceCharacteristics(tls *libc.TLS, pFile uintptr) int32 {
	return (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(walOf(pFile).methods).FxDeviceCharacteristics})))(tls, pFile)
}

func walShmMap(tls *libc.TLS, pFile uintptr, iPg, pgsz, bExtend int32, pp uintptr) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32, int32, int32, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxShmMap})))(tls, pFile, iPg, pgsz, bExtend, pp)
}

func walShmLock(tls *libc.TLS, pFile uintptr, offset, n, flags int32) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32, int32, int32) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxShmLock})))(tls, pFile, offset, n, flags)
}

// walShmBarrier cannot report an error: a flush that fails there keeps
// the buffer for the next method, which reports it. SQLite calls the
// shared-memory methods of the database file, never of a log file; they
// flush for completeness.
func walShmBarrier(tls *libc.TLS, pFile uintptr) {
	w := walOf(pFile)
	n, start := w.n, w.start
	if w.flush(tls, pFile) != sqlite3.SQLITE_OK {
		w.n, w.start = n, start
	}
	(*(*func(*libc.TLS, uintptr))(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxShmBarrier})))(tls, pFile)
}

func walShmUnmap(tls *libc.TLS, pFile uintptr, deleteFlag int32) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxShmUnmap})))(tls, pFile, deleteFlag)
}

func walFetch(tls *libc.TLS, pFile uintptr, off int64, amt int32, pp uintptr) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int64, int32, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxFetch})))(tls, pFile, off, amt, pp)
}

func walUnfetch(tls *libc.TLS, pFile uintptr, off int64, p uintptr) int32 {
	w := walOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int64, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{ioMethods(w.methods).FxUnfetch})))(tls, pFile, off, p)
}
