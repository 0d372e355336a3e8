package nativewait

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// stack builds a stack innermost first from "module:function" items
// ("module:" alone is an unnamed frame of that module).
func stack(items ...string) []symbolize.StackFrame {
	out := make([]symbolize.StackFrame, len(items))
	for i, it := range items {
		m, fn, _ := strings.Cut(it, ":")
		out[i] = symbolize.StackFrame{PC: uint64(0x1000 + i), Module: m, Function: fn, Offset: uint64(0x40 * (i + 1))}
		if off, ok := strings.CutPrefix(fn, "+0x"); ok {
			// "module:+0x1234": an unnamed frame at that offset.
			v, _ := strconv.ParseUint(off, 16, 64)
			out[i].Function, out[i].Offset = "", v
		}
	}
	return out
}

// threadStart and mainStart are the plumbing below a thread's and the
// main thread's own code.
var (
	threadStart = []string{"libc.so.6:start_thread", "libc.so.6:clone3"}
	mainStart   = []string{"libc.so.6:__libc_start_call_main", "libc.so.6:__libc_start_main", "app:_start"}
)

func with(top []string, bottom []string) []symbolize.StackFrame {
	return stack(append(append([]string{}, top...), bottom...)...)
}

func futexWait(kind procfs.FutexKind, st []symbolize.StackFrame) Thread {
	return Thread{State: 'S', Syscall: unix.SYS_FUTEX, FutexKind: kind, Stack: st}
}

func TestClassify(t *testing.T) {
	condTop := []string{"libc.so.6:", "libc.so.6:pthread_cond_wait"}
	mutexTop := []string{"libc.so.6:__lll_lock_wait", "libc.so.6:pthread_mutex_lock"}
	tests := []struct {
		name    string
		thread  Thread
		verdict string
		kind    Kind
		site    string
	}{
		{"a pool worker's start routine waits for its next task",
			futexWait(procfs.FutexCondition, with(append(condTop, "app:worker_main"), threadStart)),
			Idle, Condition, "worker_main"},
		{"a trampoline's loop waits (varnish's WRK_thread → Pool_Work_Thread, through its own Lck_CondWaitUntil)",
			futexWait(procfs.FutexCondition, with(append(condTop, "varnishd:Lck_CondWaitUntil", "varnishd:Pool_Work_Thread", "varnishd:WRK_thread"), threadStart)),
			Idle, Condition, "Pool_Work_Thread ← WRK_thread"},
		{"a C++ pool's helpers of one class (MariaDB's tpool)",
			futexWait(procfs.FutexCondition, with([]string{"libc.so.6:", "libc.so.6:pthread_cond_clockwait",
				"mariadbd:std::condition_variable::wait_until<std::chrono::_V2::steady_clock>(std::unique_lock<std::mutex>&)",
				"mariadbd:tpool::thread_pool_generic::wait_for_tasks(std::unique_lock<std::mutex>&, tpool::worker_data*)",
				"mariadbd:tpool::thread_pool_generic::get_task(tpool::worker_data*, tpool::task**)",
				"mariadbd:tpool::thread_pool_generic::worker_main(tpool::worker_data*)",
				"mariadbd:std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (tpool::thread_pool_generic::*)(tpool::worker_data*), tpool::thread_pool_generic*, tpool::worker_data*> > >::_M_run()",
				"libstdc++.so.6:"}, threadStart)),
			Idle, Condition, "tpool::thread_pool_generic::wait_for_tasks(std::unique_lock<std::mutex>&, tpool::worker_data*) ← tpool::thread_pool_generic::get_task(tpool::worker_data*, tpool::task**)"},
		{"a request thread's row-lock wait deep in its work",
			futexWait(procfs.FutexCondition, with([]string{"libc.so.6:", "libc.so.6:pthread_cond_timedwait",
				"mariadbd:inline_mysql_cond_timedwait", "mariadbd:lock_wait(que_thr_t*)", "mariadbd:row_mysql_handle_errors",
				"mariadbd:row_search_mvcc", "mariadbd:ha_innobase::index_read", "mariadbd:handler::ha_index_read_map",
				"mariadbd:mysql_update", "mariadbd:mysql_execute_command", "mariadbd:dispatch_command", "mariadbd:do_command",
				"mariadbd:do_handle_one_connection", "mariadbd:handle_one_connection"}, threadStart)),
			Contention, Condition, "lock_wait(que_thr_t*) ← row_mysql_handle_errors"},
		{"a mutex is contention even at the top of a loop",
			futexWait(procfs.FutexLock, with(append(mutexTop, "app:worker_main"), threadStart)),
			Contention, Mutex, "worker_main"},
		{"an rwlock by its name",
			futexWait(procfs.FutexCondition, with([]string{"libc.so.6:", "libc.so.6:pthread_rwlock_wrlock", "app:update", "app:serve", "app:worker"}, threadStart)),
			Contention, RWLock, "update ← serve"},
		{"a std::mutex inlined into the program",
			futexWait(procfs.FutexLock, with([]string{"libc.so.6:__lll_lock_wait", "libc.so.6:pthread_mutex_lock", "app:__gthread_mutex_lock(pthread_mutex_t*)", "app:std::mutex::lock()", "app:Cache::get(int)", "app:serve"}, threadStart)),
			Contention, Mutex, "Cache::get(int) ← serve"},
		{"a stripped program's deep condition wait",
			futexWait(procfs.FutexCondition, with(append(condTop, "srv:", "srv:", "srv:", "srv:"), threadStart)),
			Contention, Condition, "srv+0xc0 ← srv+0x100"},
		{"a raw futex with no name is a futex",
			futexWait(procfs.FutexUnknown, with([]string{"libc.so.6:syscall", "app:wait_gen", "app:flush", "app:commit", "app:serve"}, threadStart)),
			Contention, Futex, "wait_gen ← flush"},
		{"the runtime's own thread",
			futexWait(procfs.FutexCondition, stack("libc.so.6:", "libc.so.6:pthread_cond_wait", "libc.so.6:timer_helper_thread", "libc.so.6:start_thread", "libc.so.6:clone3")),
			Idle, Condition, ""},
		{"no stack: a condition is not counted as contention",
			futexWait(procfs.FutexCondition, nil), Idle, Condition, ""},
		{"no stack: a locked word queues",
			futexWait(procfs.FutexLock, nil), Contention, Mutex, ""},
		{"a stack cut short says nothing of the loop",
			futexWait(procfs.FutexCondition, stack("libc.so.6:", "libc.so.6:pthread_cond_wait", "app:f", "app:g")), Idle, Condition, "f ← g"},
		{"JNI: native code a Java method called",
			Thread{State: 'S', Syscall: unix.SYS_FUTEX, FutexKind: procfs.FutexCondition, FromJava: true, Stack: stack("libc.so.6:", "libc.so.6:pthread_cond_wait",
				"librocksdbjni.so:std::condition_variable::wait(std::unique_lock<std::mutex>&)", "librocksdbjni.so:rocksdb::WriteThread::AwaitState", "librocksdbjni.so:Java_org_rocksdb_RocksDB_put")},
			Contention, Condition, "rocksdb::WriteThread::AwaitState ← Java_org_rocksdb_RocksDB_put"},
		{"an event loop in a library (memcached's worker in libevent)",
			Thread{State: 'S', Syscall: unix.SYS_EPOLL_WAIT, Stack: with([]string{"libc.so.6:epoll_wait", "libevent-2.1.so.7:", "libevent-2.1.so.7:event_base_loop", "memcached:"}, threadStart)},
			Idle, "", "libevent-2.1.so.7+0x80 ← event_base_loop"},
		{"main's event loop",
			Thread{State: 'S', Syscall: unix.SYS_EPOLL_WAIT, Stack: with([]string{"libc.so.6:epoll_wait", "redis:aeApiPoll", "redis:aeMain", "redis:main"}, mainStart)},
			Idle, "", "aeApiPoll ← aeMain"},
		{"a poll for the client's reply inside work",
			Thread{State: 'S', Syscall: unix.SYS_POLL, Args: [5]uint64{0x7f00, 1, 28800000}, Stack: with([]string{"libc.so.6:poll", "mariadbd:vio_io_wait", "mariadbd:vio_socket_io_wait", "mariadbd:vio_read", "mariadbd:my_net_read_packet", "mariadbd:do_command", "mariadbd:handle_one_connection"}, threadStart)},
			IO, "", "vio_io_wait ← vio_socket_io_wait"},
		{"a poll of one descriptor at the top of its run loop (a prefork child's wait for a connection)",
			Thread{State: 'S', Syscall: unix.SYS_POLL, Args: [5]uint64{0x7f00, 1, ^uint64(0)}, Stack: with([]string{"libc.so.6:poll", "server:accept_loop", "server:main"}, mainStart)},
			Idle, "", "accept_loop ← main"},
		{"a session file's flock inside a request (PHP's session handler)",
			Thread{State: 'S', Syscall: unix.SYS_FLOCK, Args: [5]uint64{5, unix.LOCK_EX}, Stack: with([]string{"libc.so.6:flock", "php-fpm8.2:", "php-fpm8.2:", "php-fpm8.2:php_session_start", "php-fpm8.2:execute_ex", "php-fpm8.2:main"}, mainStart)},
			Contention, FileLock, "php-fpm8.2+0x80 ← php-fpm8.2+0xc0"},
		{"a file lock is contention even at the top of a loop, and the program's wrapper named for a lock is the lock's own",
			Thread{State: 'S', Syscall: unix.SYS_FCNTL, Args: [5]uint64{3, unix.F_SETLKW}, Stack: with([]string{"libc.so.6:fcntl64", "libc.so.6:lockf64", "app:mutex_lock_file", "app:main"}, mainStart)},
			Contention, FileLock, "main"},
		{"an open file description's lock without a stack",
			Thread{State: 'S', Syscall: unix.SYS_FCNTL, Args: [5]uint64{3, unix.F_OFD_SETLKW}}, Contention, FileLock, ""},
		{"fcntl that does not wait for a lock", Thread{State: 'S', Syscall: unix.SYS_FCNTL, Args: [5]uint64{3, unix.F_GETFL}}, IO, "", ""},
		{"flock without waiting (LOCK_NB) is not a lock wait", Thread{State: 'S', Syscall: unix.SYS_FLOCK, Args: [5]uint64{3, unix.LOCK_EX | unix.LOCK_NB}}, IO, "", ""},
		{"a sleep", Thread{State: 'S', Syscall: unix.SYS_CLOCK_NANOSLEEP}, Sleep, "", ""},
		{"disk I/O", Thread{State: 'D', Syscall: unix.SYS_PREAD64}, IO, "", ""},
		{"running", Thread{State: 'R', Syscall: procfs.SyscallRunning}, "", "", ""},
		{"unreadable", Thread{State: 'S', Syscall: procfs.SyscallUnknown, WChan: "futex_wait_queue"}, Idle, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := Classify(tc.thread)
			assert.Equal(t, tc.verdict, w.Verdict, w.Reason)
			assert.Equal(t, tc.kind, w.Kind)
			assert.Equal(t, tc.site, w.Site)
			if tc.verdict != "" {
				assert.NotEmpty(t, w.Reason)
			}
		})
	}
}

func TestWords(t *testing.T) {
	for in, want := range map[string]string{
		"Lck_CondWaitUntil":     "lck cond wait until",
		"pthread_rwlock_wrlock": "pthread rwlock wrlock",
		"RWLock::lock":          "rw lock lock",
		"__new_sem_wait_slow64": "new sem wait slow",
		"ssux_lock_impl::rd":    "ssux lock impl rd",
	} {
		assert.Equal(t, want, strings.Join(words(in), " "), in)
	}
}

func TestQualifiedName(t *testing.T) {
	assert.Equal(t, "ns::Cls::f", qualifiedName("ns::Cls<std::mutex>::f(std::mutex&, int)"))
	assert.Equal(t, "(anonymous namespace)::f", qualifiedName("(anonymous namespace)::f(int)"))
	assert.Equal(t, "ns::Cls", scope("ns::Cls::f"))
	assert.Equal(t, "", scope("f"))
}

// MariaDB's threads all start through one of its own wrappers (a
// profiling layer's spawn trampoline, unnamed in the stripped binary):
// once two threads show it going on into different start routines, it is
// plumbing, and the thread cache's wait for a new connection is at the top
// of its loop.
func TestTrampolines(t *testing.T) {
	start := []string{"mariadbd:+0xc7f647", "libc.so.6:start_thread", "libc.so.6:clone3"}
	cached := futexWait(procfs.FutexCondition, with(append([]string{"libc.so.6:", "libc.so.6:pthread_cond_timedwait"}, "mariadbd:do_handle_one_connection", "mariadbd:handle_one_connection"), start))
	manager := with([]string{"libc.so.6:", "libc.so.6:pthread_cond_wait", "mariadbd:handle_manager"}, start)
	var tr Trampolines
	tr.Note(cached.Stack)
	cached.Trampolines = &tr
	assert.Equal(t, Contention, Classify(cached).Verdict, "one start routine seen: the wrapper is the entry")
	tr.Note(manager)
	assert.Equal(t, 1, tr.Gen)
	w := Classify(cached)
	assert.Equal(t, Idle, w.Verdict, w.Reason)
	assert.Equal(t, "do_handle_one_connection ← handle_one_connection", w.Site)
	assert.Equal(t, "handle_one_connection", w.Entry)
	var none *Trampolines
	assert.False(t, none.has(manager[0]))
}

// The C library's futex call inside pthread_cond_timedwait does not make
// a condition a raw futex.
func TestKindIsWhatTheProgramCalled(t *testing.T) {
	w := Classify(futexWait(procfs.FutexCondition, with([]string{"libc.so.6:__futex_abstimed_wait_common", "libc.so.6:pthread_cond_timedwait", "srv:", "srv:", "srv:", "srv:"}, threadStart)))
	assert.Equal(t, Condition, w.Kind)
	w = Classify(futexWait(procfs.FutexUnknown, with([]string{"libc.so.6:syscall", "srv:futex_wait", "srv:", "srv:", "srv:"}, threadStart)))
	assert.Equal(t, Futex, w.Kind)
}

// A start routine that calls the C library (a sleep, a lock) or its own
// helpers from different call sites is no trampoline: only one call site
// leading into different functions is.
func TestNoFalseTrampolines(t *testing.T) {
	var tr Trampolines
	tr.Note(with([]string{"libc.so.6:__lll_lock_wait", "libc.so.6:pthread_mutex_lock", "app:convoy"}, threadStart))
	tr.Note(with([]string{"libc.so.6:clock_nanosleep", "libc.so.6:usleep", "app:convoy"}, threadStart))
	helperA := with([]string{"libc.so.6:pthread_cond_wait", "app:a", "app:+0x40"}, threadStart)
	helperB := with([]string{"libc.so.6:pthread_cond_wait", "app:b", "app:+0x80"}, threadStart)
	tr.Note(helperA)
	tr.Note(helperB)
	assert.Zero(t, tr.Gen)
}

// An unwind that stopped inside the C library says nothing of the loop:
// the kernel's view decides, and the reason says so.
func TestStackCutInTheMachinery(t *testing.T) {
	w := Classify(futexWait(procfs.FutexCondition, stack("libc.so.6:__futex_abstimed_wait_common", "libc.so.6:pthread_cond_wait")))
	assert.Equal(t, Idle, w.Verdict)
	assert.Contains(t, w.Reason, "without its stack")
	w = Classify(futexWait(procfs.FutexCondition, stack("libc.so.6:", "libc.so.6:pthread_cond_wait", "srv:")))
	assert.Contains(t, w.Reason, "without its stack", "an unnamed caller is no _start")
}

// A lock library's unnamed static routine between two of its named
// primitives is machinery, not the wait site (Apache's apr).
func TestUnnamedFrameInsideTheMachinery(t *testing.T) {
	w := Classify(futexWait(procfs.FutexLock, with([]string{"libc.so.6:__futex_lock_pi64", "libc.so.6:__pthread_mutex_lock_full", "libapr-1.so.0:",
		"libapr-1.so.0:apr_global_mutex_lock", "mod_rewrite.so:", "mod_rewrite.so:", "apache2:ap_run_translate_name", "apache2:ap_process_request", "mod_mpm_event.so:"}, threadStart)))
	assert.Equal(t, Contention, w.Verdict)
	assert.Equal(t, Mutex, w.Kind)
	assert.Equal(t, "mod_rewrite.so+0x140 ← mod_rewrite.so+0x180", w.Site)
}

// A stripped start routine that takes a mutex itself is the program's
// frame, the wait site, not the machinery's (memcached's LRU maintainer).
func TestStrippedStartRoutineIsTheSite(t *testing.T) {
	w := Classify(futexWait(procfs.FutexLock, with([]string{"libc.so.6:__lll_lock_wait", "libc.so.6:pthread_mutex_lock", "memcached:+0x17a19"}, threadStart)))
	assert.Equal(t, "memcached+0x17a19", w.Site)
	assert.Equal(t, Contention, w.Verdict)
}

// A stack cut before the thread's start names no start routine: the pool
// of a thread is its start routine only where the unwind reached it.
func TestCutStackNamesNoEntry(t *testing.T) {
	cut := futexWait(procfs.FutexLock, stack("libc.so.6:__lll_lock_wait", "libc.so.6:pthread_mutex_lock", "mariadbd:inline_mysql_mutex_lock", "mariadbd:Protocol::net_send_ok"))
	w := Classify(cut)
	assert.Equal(t, Contention, w.Verdict, w.Reason)
	assert.Equal(t, "", w.Entry)
	whole := futexWait(procfs.FutexLock, stack("libc.so.6:__lll_lock_wait", "libc.so.6:pthread_mutex_lock", "mariadbd:inline_mysql_mutex_lock", "mariadbd:Protocol::net_send_ok",
		"mariadbd:dispatch_command", "mariadbd:do_command", "mariadbd:handle_one_connection", "libc.so.6:start_thread", "libc.so.6:clone3"))
	assert.Equal(t, "handle_one_connection", Classify(whole).Entry)
}

// PostgreSQL's backends and background processes wait in epoll_wait on
// sets the sweep reads: a set holding the client's socket is an event
// loop's (idle, however deep); a set of only the program's own wake-ups
// (a latch: signalfd and pipe) is ruled like a condition, whose name comes
// from WaitLatch above the frames named for waiting; with a timeout it is
// a pause.
func TestOwnEventSets(t *testing.T) {
	pgMain := []string{"postgres:PostgresMain", "postgres:+0x3efcbc", "postgres:PostmasterMain", "postgres:main"}
	latch := []string{"libc.so.6:epoll_wait", "postgres:WaitEventSetWait", "postgres:WaitLatch"}
	rowLock := with(append(append(append([]string{}, latch...), "postgres:ProcSleep", "postgres:+0x45d95d", "postgres:LockAcquireExtended",
		"postgres:XactLockTableWait", "postgres:heap_update", "postgres:ExecUpdate", "postgres:standard_ExecutorRun", "postgres:PortalRun"), pgMain...), mainStart)
	clientRead := with(append([]string{"libc.so.6:epoll_wait", "postgres:WaitEventSetWait", "postgres:secure_read", "postgres:pq_recvbuf", "postgres:pq_getbyte"}, pgMain...), mainStart)
	bgWriter := with(append(append([]string{}, latch...), "postgres:BackgroundWriterMain", "postgres:AuxiliaryProcessMain", "postgres:+0x3ec0a13", "postgres:PostmasterMain", "postgres:main"), mainStart)
	epoll := func(ev procfs.EventSet, timeout int32, st []symbolize.StackFrame) Thread {
		return Thread{State: 'S', Syscall: unix.SYS_EPOLL_WAIT, Args: [5]uint64{8, 0x55e9, 1, uint64(uint32(timeout))}, Events: ev, Stack: st}
	}
	tests := []struct {
		name          string
		thread        Thread
		verdict, site string
		kind          Kind
	}{
		{"a row-lock wait on the backend's latch", epoll(procfs.EventsOwn, -1, rowLock), Contention, "ProcSleep ← postgres+0x45d95d", Condition},
		{"the same stack, its set unread: an event loop as before", epoll(procfs.EventsUnread, -1, rowLock), Idle, "ProcSleep ← postgres+0x45d95d", ""},
		{"a wait for the client's next query", epoll(procfs.EventsOutside, -1, clientRead), Idle, "WaitEventSetWait ← secure_read", ""},
		{"the background writer between rounds (a timeout)", epoll(procfs.EventsOwn, 200, bgWriter), Sleep, "BackgroundWriterMain ← AuxiliaryProcessMain", ""},
		{"no stack, no timeout: cannot tell", epoll(procfs.EventsOwn, -1, nil), Idle, "", Condition},
		{"epoll_pwait2's timeout is a pointer", Thread{State: 'S', Syscall: unix.SYS_EPOLL_PWAIT2, Args: [5]uint64{8, 0x55e9, 1, 0x7ffe0000}, Events: procfs.EventsOwn, Stack: rowLock}, Sleep, "ProcSleep ← postgres+0x45d95d", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := Classify(tc.thread)
			assert.Equal(t, tc.verdict, w.Verdict, w.Reason)
			assert.Equal(t, tc.site, w.Site)
			if tc.kind != "" {
				assert.Equal(t, tc.kind, w.Kind)
			}
		})
	}
}

// Frames named for waiting are the primitive's only below a function
// named for one, and only a few of them.
func TestWaitingRun(t *testing.T) {
	n, k := waitingRun(stack("postgres:WaitEventSetWait", "postgres:WaitLatch", "postgres:ProcSleep"))
	assert.Equal(t, 2, n)
	assert.Equal(t, Condition, k)
	n, _ = waitingRun(stack("app:wait_for_reply", "app:handle_request", "app:queue_worker"))
	assert.Zero(t, n, "a frame that is not named for waiting ends the run")
	n, _ = waitingRun(stack("app:await_a", "app:await_b", "app:wait_c", "app:wait_d", "app:wait_e", "app:sem_wait_f"))
	assert.Zero(t, n, "too long a run of waiting frames")
}
