package stacks

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The frame vocabulary: what a frame means (it takes a lock, waits on a
// condition, runs a once-initialiser, waits in a collective, …), which of
// its arguments names the lock, whether the lock is recursive, and how a
// live attach could read its holder. It is data (vocabulary.json) so that
// teaching hangdoc a lock family is one row; the heuristics and attach's
// lock reader both read it, through FuncKey's spelling of a name.

// Role is what a frame of a vocabulary row does.
type Role string

const (
	RoleAcquire    Role = "acquire"    // takes a lock some thread holds
	RoleSpin       Role = "spin"       // takes a spin lock (one sample shows a lock wait, not a spin)
	RoleOnce       Role = "once"       // waits for a one-time initialiser to finish
	RoleCond       Role = "cond"       // sleeps until woken: nobody holds what it waits on
	RoleJoin       Role = "join"       // waits for a thread to exit
	RolePark       Role = "park"       // the low-level wait under the others: blocked, not saying on what
	RoleSyscall    Role = "syscall"    // the generic system call entry and its plumbing: under a futex wait as under a read
	RoleChannel    Role = "channel"    // a message queue's receive or send
	RoleCollective Role = "collective" // a rank waits for the other ranks
	RoleGIL        Role = "gil"        // takes CPython's GIL back
	RoleIO         Role = "io"         // a system call on a file descriptor
	RoleSleep      Role = "sleep"      // a timer
	RoleChild      Role = "child"      // waits for a child process
	RoleSigwait    Role = "sigwait"    // waits for a signal
	RoleYield      Role = "yield"      // gives the CPU away and runs again
	RoleHolds      Role = "holds"      // a library function that holds a lock of its own while it runs
	RoleTry        Role = "try"        // takes a lock without waiting (trylock): interrupted inside, it may hold it already
	RoleSigframe   Role = "sigframe"   // the kernel's signal frame, by name (__restore_rt)
	RoleHandler    Role = "handler"    // a signal handler, by its name
	RoleFork       Role = "fork"       // fork() and its callers, which go on in both processes
	RoleForkChild  Role = "forkchild"  // runs only in the child of fork()
	RoleForkParent Role = "forkparent" // runs only in the parent, before fork()
	RoleStackTrace Role = "stacktrace" // captures or prints the thread's own stack: a crash handler's work
	RolePool       Role = "pool"       // a thread-pool runtime's own code: a process that started the pool runs its workers
)

var roles = map[Role]bool{RoleAcquire: true, RoleSpin: true, RoleOnce: true, RoleCond: true, RoleJoin: true, RolePark: true, RoleSyscall: true,
	RoleChannel: true, RoleCollective: true, RoleGIL: true, RoleIO: true, RoleSleep: true, RoleChild: true, RoleSigwait: true,
	RoleYield: true, RoleHolds: true, RoleTry: true, RoleSigframe: true, RoleHandler: true, RoleFork: true, RoleForkChild: true, RoleForkParent: true,
	RoleStackTrace: true, RolePool: true}

// IsLock reports whether a frame of this role waits for a lock that some
// thread holds (a once-initialiser is held by the thread running it).
func (r Role) IsLock() bool { return r == RoleAcquire || r == RoleSpin || r == RoleOnce }

// OwnerPthreadMutex is VocabRow.Owner for a lock whose holder a live
// attach reads from glibc's pthread_mutex_t (__owner at +8).
const OwnerPthreadMutex = "pthread_mutex_t"

// VocabRow is one lock or wait API.
type VocabRow struct {
	Family  string   `json:"family"`
	Library string   `json:"library"`
	Role    Role     `json:"role"`
	Doc     string   `json:"doc,omitempty"`
	Funcs   []string `json:"funcs"`
	LockArg []string `json:"lock_arg,omitempty"`
	// Recursive: "no", "yes", or "kind" (the lock's type field says);
	// "" for what is not a lock.
	Recursive string `json:"recursive,omitempty"`
	// AnyReleaser: any thread may release the lock, not only the one
	// that took it (a semaphore in disguise).
	AnyReleaser bool `json:"any_releaser,omitempty"`
	// Owner says how a live attach can read the holder: OwnerPthreadMutex,
	// "none", or a sentence.
	Owner string `json:"owner"`
	// Runtime is set for a managed runtime's frames ("go"), which its own
	// reader (goroutine states) classifies better than frame names.
	Runtime string `json:"runtime,omitempty"`
	// Guard: the frames are a guard object's constructor, whose this is
	// the guard, not the lock (the lock is one of LockArg).
	Guard bool `json:"guard,omitempty"`
	// RW is "read" or "write" for the waits of a writer-preferring rwlock
	// (a new reader waits while a writer waits): the side its functions
	// wait to take; "" for any other row.
	RW string `json:"rw,omitempty"`
}

// RWSide is the row's RW, "" for no row.
func (r *VocabRow) RWSide() string {
	if r == nil {
		return ""
	}
	return r.RW
}

// IsRecursive reports whether the row's lock may be taken again by its
// holder.
func (r *VocabRow) IsRecursive() bool { return r != nil && r.Recursive == "yes" }

// HasLockArg reports whether name is one of the row's lock arguments.
func (r *VocabRow) HasLockArg(name string) bool {
	if r == nil {
		return false
	}
	for _, a := range r.LockArg {
		if a == name {
			return true
		}
	}
	return false
}

//go:embed vocabulary.json
var vocabularyJSON []byte

// Vocabulary is a loaded table: exact names and globs to rows.
type Vocabulary struct {
	Rows  []*VocabRow
	exact map[string]*VocabRow
	globs []vocabGlob
	memo  sync.Map // FuncKey → *VocabRow (nil: no row)
	// recent answers a name Lookup was just asked, by where its bytes are
	recent [recentSlots]atomic.Pointer[recentRow]
	// holding are the families of the rows of RoleHolds.
	holding map[string]bool
}

// Holding reports whether family is a library that holds a lock of its
// own while its functions run (a RoleHolds row's family: malloc, stdio).
func (v *Vocabulary) Holding(family string) bool { return v.holding[family] }

type vocabGlob struct {
	pattern string // as written: '*' stands for any run of bytes (globMatch)
	row     *VocabRow
}

// globMatch says whether s matches the table's glob pattern: its '*'
// stands for any run of bytes, its other bytes match themselves, ASCII
// letters without regard to case. The 309 globs were (?i) regular
// expressions: 1.5 MB of compiled programs, resident for the whole run,
// and 4 ms to build, for what a scan with one back-track point does.
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	star, from := -1, 0 // the last '*' seen, and where in s its run ends for now
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, from = p, i
			p++
		case p < len(pattern) && asciiLower(pattern[p]) == asciiLower(s[i]):
			p++
			i++
		case star >= 0:
			from++ // the '*' takes one byte more
			p, i = star+1, from
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// ParseVocabulary reads a table in vocabulary.json's form and checks it:
// every row has a family, a known role and functions; no name is in two
// rows.
func ParseVocabulary(data []byte) (*Vocabulary, error) {
	var doc struct {
		Rows []*VocabRow `json:"rows"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	v := &Vocabulary{Rows: doc.Rows, exact: map[string]*VocabRow{}, holding: map[string]bool{}}
	for i, r := range doc.Rows {
		switch {
		case r.Family == "":
			return nil, fmt.Errorf("vocabulary: row %d has no family", i+1)
		case !roles[r.Role]:
			return nil, fmt.Errorf("vocabulary: row %d (%s): unknown role %q", i+1, r.Family, r.Role)
		case len(r.Funcs) == 0:
			return nil, fmt.Errorf("vocabulary: row %d (%s) has no funcs", i+1, r.Family)
		}
		switch r.Recursive {
		case "", "no", "yes", "kind":
		default:
			return nil, fmt.Errorf("vocabulary: row %d (%s): recursive is %q, want no, yes or kind", i+1, r.Family, r.Recursive)
		}
		if r.RW != "" && r.RW != "read" && r.RW != "write" {
			return nil, fmt.Errorf("vocabulary: row %d (%s): rw is %q, want read or write", i+1, r.Family, r.RW)
		}
		if r.Role == RoleHolds {
			v.holding[r.Family] = true
		}
		for _, f := range r.Funcs {
			if !strings.Contains(f, "*") {
				if FuncKey(f) != f {
					return nil, fmt.Errorf("vocabulary: row %d (%s): %q is not in FuncKey's spelling (%q)", i+1, r.Family, f, FuncKey(f))
				}
				if o := v.exact[f]; o != nil {
					return nil, fmt.Errorf("vocabulary: %q is in two rows (%s and %s)", f, o.Family, r.Family)
				}
				v.exact[f] = r
				continue
			}
			v.globs = append(v.globs, vocabGlob{f, r})
		}
	}
	return v, nil
}

var (
	builtinVocab     *Vocabulary
	builtinVocabOnce sync.Once
	// inForce is the table FrameRow reads: the builtin one unless a
	// caller chose another (UseVocabulary).
	inForce atomic.Pointer[Vocabulary]
)

// WithRows returns a table of v's rows and then the rows of data (a
// document in vocabulary.json's form): a user's or a test's additions,
// checked like the builtin ones.
func (v *Vocabulary) WithRows(data []byte) (*Vocabulary, error) {
	var doc struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	all := struct {
		Rows []any `json:"rows"`
	}{}
	for _, r := range v.Rows {
		all.Rows = append(all.Rows, r)
	}
	for _, r := range doc.Rows {
		all.Rows = append(all.Rows, r)
	}
	b, err := json.Marshal(all)
	if err != nil {
		return nil, err
	}
	return ParseVocabulary(b)
}

// UseVocabulary makes v the table every frame is read with (nil: the
// builtin one) and returns the function that restores the previous one.
func UseVocabulary(v *Vocabulary) (restore func()) {
	prev := inForce.Swap(v)
	return func() { inForce.Store(prev) }
}

// VocabularyInForce is the table frames are read with.
func VocabularyInForce() *Vocabulary {
	if v := inForce.Load(); v != nil {
		return v
	}
	return BuiltinVocabulary()
}

// BuiltinVocabulary is the embedded table; a broken table is a build
// defect, which its test catches.
func BuiltinVocabulary() *Vocabulary {
	builtinVocabOnce.Do(func() {
		v, err := ParseVocabulary(vocabularyJSON)
		if err != nil {
			panic(err)
		}
		builtinVocab = v
	})
	return builtinVocab
}

// Lookup returns the row a function name belongs to, or nil: the name in
// FuncKey's spelling exactly, then the globs in table order, then the
// name as a system call (CallName: "__libc_read" is read).
func (v *Vocabulary) Lookup(name string) *VocabRow {
	if name == "" {
		return nil
	}
	slot := &v.recent[recentSlot(name)]
	if e := slot.Load(); e != nil && e.name == name {
		return e.row
	}
	if r, ok := v.memo.Load(name); ok {
		slot.Store(&recentRow{name, r.(*VocabRow)})
		return r.(*VocabRow)
	}
	k := FuncKey(name)
	r := v.exact[k]
	// a destructor (Locker::~Locker) releases what its class's
	// constructor took: no glob row's wait
	if r == nil && !strings.Contains(k, "::~") {
		for _, g := range v.globs {
			if globMatch(g.pattern, k) {
				r = g.row
				break
			}
		}
	}
	if r == nil {
		r = v.exact[CallName(name)]
	}
	v.memo.Store(name, r)
	slot.Store(&recentRow{name, r})
	return r
}

// PrefixTakesLock says whether a function whose name the dump cut (a
// paste that ends inside it: "std::sys::sync::mutex::futex::Mutex::")
// takes a lock: the names of the table that begin so, and the globs the
// cut name completes, are all of rows that take a lock (acquire, spin,
// once) or of the low-level waits under one, with one lock at least.
func (v *Vocabulary) PrefixTakesLock(prefix string) bool {
	k := FuncKey(prefix)
	if k == "" {
		return false
	}
	locks := 0
	// ok: a row that takes a lock, or the low-level wait under one
	ok := func(r *VocabRow) bool {
		if r.Role.IsLock() && r.Runtime == "" {
			locks++
			return true
		}
		return r.Role == RolePark || r.Role == RoleSyscall
	}
	for name, r := range v.exact {
		if strings.HasPrefix(name, k) && !ok(r) {
			return false
		}
	}
	for _, g := range v.globs {
		if globCompletes(g, k) && !ok(g.row) {
			return false
		}
	}
	return locks > 0
}

// globCompletes: the cut name k, completed with the end of the glob's
// last literal part (the "lock_contended" of "std::sys::*Mutex::lock_contended"
// after a k that ends in "Mutex::"; the "wait" of "std::sys::*Condvar::wait*"
// after one that ends in "Condvar::"), matches the glob.
func globCompletes(g vocabGlob, k string) bool {
	p := strings.TrimRight(g.pattern, "*")
	tail := p[strings.LastIndexByte(p, '*')+1:]
	if tail == "" {
		return false
	}
	lk, lt := strings.ToLower(k), strings.ToLower(tail)
	for j := 3; j < len(lt); j++ { // three letters in common at least: "o" + "nForkChild" is no completion
		if strings.HasSuffix(lk, lt[:j]) && globMatch(g.pattern, k+tail[j:]) {
			return true
		}
	}
	return false
}

// The heuristics ask Lookup about every frame of every thread, and a
// parser shares the strings of a frame it has seen (share.go): a slot
// chosen by where the name's bytes are answers a repeated name without
// hashing it (sync.Map hashes the whole name, through an interface).
// A name whose bytes are elsewhere only misses the slot.
type recentRow struct {
	name string
	row  *VocabRow
}

const recentSlots = 1 << 12

func recentSlot(name string) uintptr {
	p := uintptr(unsafe.Pointer(unsafe.StringData(name)))
	return (p>>3 ^ p>>15 ^ uintptr(len(name))) & (recentSlots - 1)
}

// Call returns the row of a system call by its name (attach's syscall
// table, or a libc wrapper in CallName's spelling), or nil.
func (v *Vocabulary) Call(name string) *VocabRow { return v.exact[CallName(name)] }

// FrameRow is the vocabulary's row for a frame, nil for a frame
// it does not know (and for signal frames).
func FrameRow(f Frame) *VocabRow {
	if f.Signal || f.Func == "" {
		return nil
	}
	return VocabularyInForce().Lookup(f.Func)
}
