package nativewait

import (
	"strconv"
	"strings"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// shape is what the rule reads of one unwound stack.
type shape struct {
	ok bool
	// site names the first frames of the program above the machinery,
	// module the first one's module; entry the thread's start routine,
	// loop the run loop (the entry, or the function it calls).
	site, module, entry, loop string
	// siteLine is the site's first frame's source position, sitePCs its
	// frames' program counters.
	siteLine string
	sitePCs  [siteFrames]uint64
	// work is the outermost frame of work between the loop and the wait
	// when the wait is not idle.
	work string
	idle bool
	// kind is the primitive the machinery's names say, "" when they say
	// none.
	kind Kind
}

func (s shape) loopName() string {
	if s.loop == "" {
		return s.entry
	}
	return s.loop
}

// runtimeModules are the C library's, the C++ runtime's and the dynamic
// loader's modules, by the start of their file names: the waiting
// machinery at the top of a stack and the thread-start plumbing at its
// bottom, never the program's own code.
var runtimeModules = []string{
	"libc.so", "libc-", "libpthread.so", "libpthread-", "ld-linux", "ld-musl", "libc.musl",
	"libstdc++.so", "libgcc_s.so", "libc++.so", "libc++abi.so", "[vdso]", "linux-vdso",
}

// runtimeNamespaces are the C++ runtime's code instantiated from its
// headers into the program (std::mutex::lock, std::condition_variable's
// templates, std::thread's start) and the Go runtime's package: runtime
// machinery in the program's module.
var runtimeNamespaces = []string{"std::", "runtime."}

// primitiveWords are the words of a function's name that say it is a
// waiting primitive: a program's or library's own lock, condition,
// semaphore or queue wrapper (apr_thread_cond_wait, Lck_CondWaitUntil,
// srw_mutex_impl::wait) is machinery, like Java's concurrency types
// outside the JDK. The outermost one names the primitive's kind (a
// queue, latch or future waits for a signal).
var primitiveWords = map[string]Kind{
	"mutex": Mutex, "rwlock": RWLock, "cond": Condition, "condition": Condition, "condvar": Condition,
	"sem": Semaphore, "semaphore": Semaphore, "futex": Futex, "queue": Condition, "deque": Condition,
	"latch": Condition, "barrier": Condition, "future": Condition, "promise": Condition,
}

func isRuntimeModule(m string) bool {
	for _, p := range runtimeModules {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// inRuntimeNamespace reports the C++ runtime's namespaces, the Go
// runtime's package, and the identifiers the C and C++ standards reserve
// for the implementation (a leading double underscore: the C library's
// internals in a statically linked program, __lll_lock_wait).
func inRuntimeNamespace(fn string) bool {
	if strings.HasPrefix(fn, "__") {
		return true
	}
	for _, p := range runtimeNamespaces {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// machineryKind says whether f is waiting machinery and, when its name
// tells, the primitive's kind.
func machineryKind(f symbolize.StackFrame) (bool, Kind) {
	name := qualifiedName(f.Function)
	k := primitiveKind(name)
	if isRuntimeModule(f.Module) || inRuntimeNamespace(name) {
		return true, k
	}
	return k != "", k
}

// primitiveKind is the kind a function's name says it waits on, "" when
// none of its words names a primitive.
func primitiveKind(name string) Kind {
	if name == "" {
		return ""
	}
	for _, w := range words(name) {
		if k, ok := primitiveWords[w]; ok {
			return k
		}
	}
	return ""
}

// words splits an identifier into lower-case words at underscores,
// scope separators, digits and camel-case humps: "Lck_CondWaitUntil" is
// lck, cond, wait, until.
func words(s string) []string {
	var out []string
	start := -1
	flush := func(i int) {
		if start >= 0 && i > start {
			out = append(out, strings.ToLower(s[start:i]))
		}
		start = -1
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			if start < 0 {
				start = i
			}
		case c >= 'A' && c <= 'Z':
			// A hump starts a word, unless it continues an acronym
			// ("RWLock": rw, lock).
			if start >= 0 && !(i > 0 && s[i-1] >= 'A' && s[i-1] <= 'Z' && !(i+1 < len(s) && s[i+1] >= 'a' && s[i+1] <= 'z')) {
				flush(i)
			}
			if start < 0 {
				start = i
			}
		default:
			flush(i)
		}
	}
	flush(len(s))
	return out
}

// qualifiedName is a demangled function name without its parameters and
// template arguments: "ns::Cls<T>::f(std::mutex&)" is "ns::Cls::f".
func qualifiedName(fn string) string {
	if fn == "" {
		return ""
	}
	var b strings.Builder
	depth := 0
	for i := 0; i < len(fn); i++ {
		c := fn[i]
		switch {
		case c == '<':
			depth++
		case c == '>':
			if depth > 0 {
				depth--
			}
		case c == '(' && depth == 0:
			if strings.HasPrefix(fn[i:], "(anonymous namespace)") {
				b.WriteString("(anonymous namespace)")
				i += len("(anonymous namespace)") - 1
				continue
			}
			return b.String()
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// scope is a qualified name's class or namespace: "ns::Cls::f" is
// "ns::Cls"; "" for a free C function.
func scope(qname string) string {
	if i := strings.LastIndex(qname, "::"); i > 0 {
		return qname[:i]
	}
	return ""
}

// threadEntries are the functions every thread's stack ends in, outermost:
// the C library's thread and process entries and the Go runtime's. A stack
// that ends elsewhere was not unwound to the thread's start.
var threadEntries = map[string]bool{
	"clone": true, "clone3": true, "__clone": true, "start_thread": true, "thread_start": true,
	"__libc_start_main": true, "__libc_start_main_impl": true, "__libc_start_call_main": true, "_start": true,
	"runtime.goexit": true, "runtime.mstart": true, "runtime.rt0_go": true,
}

// isPlumbing reports a frame that starts the thread rather than running
// its loop: the runtime's (clone, start_thread, __libc_start_main,
// std::thread's trampoline) and the C runtime's entry _start, which is
// linked into the program.
func isPlumbing(f symbolize.StackFrame) bool {
	if isRuntimeModule(f.Module) || inRuntimeNamespace(qualifiedName(f.Function)) {
		return true
	}
	return f.Function == "_start"
}

// readShape applies the rule to a stack, innermost frame first; tr are
// the process's known trampolines (nil: none).
func readShape(st []symbolize.StackFrame, tr *Trampolines) shape {
	s := shape{ok: true}
	// The top: the waiting machinery.
	// The kind is the outermost primitive the machinery names: the one
	// the program called (pthread_cond_timedwait), not the C library's
	// futex call inside it; a bare "futex" name only when nothing else
	// says more.
	top := 0
	for top < len(st) {
		m, k := machineryKind(st[top])
		if !m {
			// The program's functions named for waiting, between the
			// system call and a function named for a primitive, are
			// that primitive's own: PostgreSQL's WaitLatch reaches
			// epoll_wait through WaitEventSetWait.
			if n, pk := waitingRun(st[top:]); n > 0 {
				top += n
				if pk != Futex || s.kind == "" {
					s.kind = pk
				}
				continue
			}
			// An unnamed frame that a function named for a primitive
			// calls is that primitive's own (a lock library's static
			// routine between its pthread_mutex_lock and its exported
			// apr_global_mutex_lock). One that the C library's thread
			// start calls is a stripped start routine: the program's.
			if st[top].Function != "" || top+1 >= len(st) || primitiveKind(qualifiedName(st[top+1].Function)) == "" {
				break
			}
			top++
			continue
		}
		if k != "" && (k != Futex || s.kind == "") {
			s.kind = k
		}
		top++
	}
	// The bottom: the thread-start plumbing. An unnamed outermost frame
	// right below a runtime frame is the C runtime's entry of a stripped
	// program (its _start).
	bottom := len(st) - 1
	if bottom > top && st[bottom].Function == "" && threadEntries[st[bottom-1].Function] && !isPlumbing(st[bottom]) {
		bottom--
	}
	complete := bottom < len(st)-1 || bottom >= 0 && threadEntries[st[bottom].Function]
	for bottom >= top && (isPlumbing(st[bottom]) || tr.has(st[bottom])) {
		bottom--
	}
	if top > bottom {
		// Only machinery and plumbing: the runtime's own thread (a
		// timer's helper) waiting for its next event; or, when the
		// unwind stopped inside the machinery, a stack that says
		// nothing.
		s.idle, s.ok = complete, complete
		return s
	}
	prog := st[top : bottom+1] // the program's frames, the site first, the entry last
	s.site = JoinFrames(prog[:min(len(prog), siteFrames)])
	for i := range prog[:min(len(prog), siteFrames)] {
		s.sitePCs[i] = prog[i].PC
	}
	s.module = prog[0].Module
	s.siteLine = prog[0].FileLine()
	s.loop = prog[len(prog)-1].Name()
	if complete {
		// Only a stack unwound down to the thread's start names its
		// start routine: a cut one ends anywhere (MariaDB connection
		// threads cut at Protocol::net_send_ok became a pool of that
		// name).
		s.entry = s.loop
	}
	if len(prog) >= 2 {
		s.loop = prog[len(prog)-2].Name()
	}
	switch {
	case len(prog) <= 2 && !complete:
		// The unwind ended before the thread's start: its loop is not
		// known, so the stack cannot say idle.
		s.ok = false
	case len(prog) <= 2:
		// The start routine waits itself, or the one loop it calls does.
		s.idle = true
	case oneClass(prog[:len(prog)-1]) || oneClass(prog):
		// The loop and its helpers are one C++ class (a pool's
		// worker_main, get_task and wait_for_tasks).
		s.idle = true
		s.loop = prog[len(prog)-1].Name()
		if !oneClass(prog) {
			s.loop = prog[len(prog)-2].Name()
		}
	default:
		// The outermost frame between the loop and the wait is work.
		s.work = prog[len(prog)-3].Name()
	}
	return s
}

// maxWaitingRun bounds the frames named for waiting that a primitive's
// function may reach its system call through.
const maxWaitingRun = 4

// waitingRun reads the frames at the top of st that are named for waiting
// ("wait" is one of their words) up to the first one named for a
// primitive: it returns how many frames that is (the primitive's
// included) and the primitive's kind, or 0 when the run of waiting frames
// ends elsewhere.
func waitingRun(st []symbolize.StackFrame) (int, Kind) {
	for i := 0; i < len(st) && i <= maxWaitingRun; i++ {
		name := qualifiedName(st[i].Function)
		if k := primitiveKind(name); k != "" {
			return i + 1, k
		}
		if !hasWord(name, "wait") {
			return 0, ""
		}
	}
	return 0, ""
}

func hasWord(name, word string) bool {
	for _, w := range words(name) {
		if w == word {
			return true
		}
	}
	return false
}

// oneClass reports frames whose functions all belong to one C++ class
// (or namespace); free functions and unnamed frames have none.
func oneClass(fs []symbolize.StackFrame) bool {
	first := ""
	for i, f := range fs {
		sc := scope(qualifiedName(f.Function))
		if sc == "" {
			return false
		}
		if i == 0 {
			first = sc
		} else if sc != first {
			return false
		}
	}
	return first != ""
}

// JoinFrames names frames innermost first, each with its caller after an
// arrow: "post_entry ← worker_loop".
func JoinFrames(fs []symbolize.StackFrame) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString(" ← ")
		}
		b.WriteString(f.Name())
	}
	return b.String()
}

// Site is where a blocked thread's own code waits, by the rule's reading
// of its stack (innermost first): the first frames of the program above
// the waiting machinery; "" when the stack has no frame of the program.
func Site(st []symbolize.StackFrame) string {
	if len(st) == 0 {
		return ""
	}
	return readShape(st, nil).site
}

// SiteModule is the module of Site's innermost frame: the binary whose
// code waits; "" when the stack has no frame of the program.
func SiteModule(st []symbolize.StackFrame) string {
	if len(st) == 0 {
		return ""
	}
	return readShape(st, nil).module
}

// Trampolines learns a process's own thread-start trampolines: a frame
// right above the runtime's start plumbing whose one call site (return
// address) goes on into different functions of the program in different
// threads (a library's or a profiling layer's wrapper that every thread
// starts through, calling the start routine through a pointer) is
// plumbing too, as java.lang.Thread.run is below every Java run loop. The
// zero value is ready; a nil one knows none.
type Trampolines struct {
	// callees maps a bottom frame to the first callee seen above it, or
	// to "" once a second, different one was seen (a trampoline).
	callees map[string]string
	// Gen counts the trampolines found, so a cache of verdicts knows
	// when to forget.
	Gen int
}

// maxTrampolineFrames bounds the frames Trampolines follows.
const maxTrampolineFrames = 4096

// Note reads one thread's stack (innermost first).
func (tr *Trampolines) Note(st []symbolize.StackFrame) {
	b := len(st) - 1
	if b > 0 && st[b].Function == "" && threadEntries[st[b-1].Function] && !isPlumbing(st[b]) {
		b--
	}
	for b >= 0 && isPlumbing(st[b]) {
		b--
	}
	for b >= 1 && tr.has(st[b]) {
		b--
	}
	if b < 1 || b == len(st)-1 {
		return // no start plumbing below it, or nothing above it
	}
	if m, _ := machineryKind(st[b-1]); m || isPlumbing(st[b-1]) {
		return // it waits itself: a start routine, not a wrapper of one
	}
	name, callee := callSite(st[b]), st[b-1].Name()
	if tr.callees == nil {
		tr.callees = map[string]string{}
	}
	seen, ok := tr.callees[name]
	switch {
	case !ok:
		if len(tr.callees) < maxTrampolineFrames {
			tr.callees[name] = callee
		}
	case seen != "" && seen != callee:
		tr.callees[name] = ""
		tr.Gen++
	}
}

func (tr *Trampolines) has(f symbolize.StackFrame) bool {
	if tr == nil || tr.Gen == 0 {
		return false
	}
	c, ok := tr.callees[callSite(f)]
	return ok && c == ""
}

// callSite names a frame's return address: its function (or module) and
// the offset in it. A trampoline calls every start routine from one call
// site; a function that calls different functions does so from different
// ones.
func callSite(f symbolize.StackFrame) string {
	return f.Module + "|" + f.Function + "|" + strconv.FormatUint(f.Offset, 16)
}

// FunctionName is a frame's name without its parameters and template
// arguments ("tpool::thread_pool_generic::worker_main"); an unnamed
// frame's module+offset as it is.
func FunctionName(name string) string {
	if q := qualifiedName(name); q != "" {
		return q
	}
	return name
}
