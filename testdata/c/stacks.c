// stacks: threads that block in known call chains, for the native stack
// unwinder. Every chain's own functions are noinline and do work after
// their call, so that no optimization level folds or tail-calls them away.
//
//   heap-N:   worker_loop -> post_entry -> pthread_mutex_lock (a heap mutex)
//   global-N: global_loop -> take_global -> pthread_mutex_lock (a global one)
//   deep:     level_a -> level_b -> level_c -> nanosleep
//   cond:     cond_outer -> cond_inner -> pthread_cond_wait
//   holder:   holds both mutexes, in holder_main -> nanosleep
//   jit:      jit_main -> code copied into anonymous executable memory
//             (no symbol, no CFI; it keeps a frame pointer) -> jit_callee
//             -> nanosleep
//   signal:   signal_main -> signal_inner -> pthread_kill (to itself); the
//             handler, on an alternate signal stack, on_signal ->
//             in_handler -> nanosleep
//
// usage: stacks [WAITERS]   (WAITERS per mutex, 2 by default)
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

pthread_mutex_t global_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *heap_mutex;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t held;
volatile long counter;

NOINLINE void post_entry(pthread_mutex_t *m) {
	pthread_mutex_lock(m);
	counter++;
	pthread_mutex_unlock(m);
	counter++;
}

NOINLINE void *worker_loop(void *arg) {
	for (;;) {
		post_entry(heap_mutex);
		counter += (long)arg;
	}
	return NULL;
}

NOINLINE void take_global(void) {
	pthread_mutex_lock(&global_mutex);
	counter++;
	pthread_mutex_unlock(&global_mutex);
	counter++;
}

NOINLINE void *global_loop(void *arg) {
	for (;;) {
		take_global();
		counter += (long)arg;
	}
	return NULL;
}

NOINLINE void level_c(long n) {
	struct timespec ts = {3600, 0};
	while (nanosleep(&ts, NULL) != 0) {
	}
	counter += n;
}

NOINLINE void level_b(long n) {
	level_c(n + 1);
	counter += n;
}

NOINLINE void level_a(long n) {
	level_b(n + 1);
	counter += n;
}

NOINLINE void *deep_main(void *arg) {
	for (;;) {
		level_a((long)arg);
		counter++;
	}
	return NULL;
}

NOINLINE void cond_inner(void) {
	pthread_mutex_lock(&cond_mutex);
	for (;;)
		pthread_cond_wait(&cond, &cond_mutex);
	pthread_mutex_unlock(&cond_mutex);
	counter++;
}

NOINLINE void cond_outer(void) {
	cond_inner();
	counter++;
}

NOINLINE void *cond_main(void *arg) {
	cond_outer();
	counter += (long)arg;
	return NULL;
}

NOINLINE void holder_main(void) {
	pthread_mutex_lock(heap_mutex);
	pthread_mutex_lock(&global_mutex);
	pthread_barrier_wait(&held);
	for (;;) {
		struct timespec ts = {3600, 0};
		nanosleep(&ts, NULL);
		counter++;
	}
}

NOINLINE void jit_callee(void) {
	struct timespec ts = {3600, 0};
	while (nanosleep(&ts, NULL) != 0) {
	}
	counter++;
}

// JIT_OFFSET is where the stub starts in its page: its return address
// from jit_callee is anonymous memory+0x50 (JIT_OFFSET + 16).
#define JIT_OFFSET 64

NOINLINE void *jit_main(void *arg) {
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	// push rbp; mov rbp, rsp; movabs rax, jit_callee; call rax; pop rbp; ret
	unsigned char stub[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xd0, 0x5d, 0xc3};
	void (*target)(void) = jit_callee;
	memcpy(stub + 6, &target, sizeof target);
	memcpy(code + JIT_OFFSET, stub, sizeof stub);
	void (*fn)(void) = (void (*)(void))(code + JIT_OFFSET);
	for (;;) {
		fn();
		counter += (long)arg;
	}
	return NULL;
}

NOINLINE void in_handler(int sig) {
	struct timespec ts = {3600, 0};
	while (nanosleep(&ts, NULL) != 0) {
	}
	counter += sig;
}

NOINLINE void on_signal(int sig) {
	in_handler(sig);
	counter++;
}

NOINLINE void signal_inner(void) {
	pthread_kill(pthread_self(), SIGUSR1);
	counter++;
}

NOINLINE void *signal_main(void *arg) {
	stack_t ss = {.ss_size = 64 * 1024};
	ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL) != 0) {
		perror("sigaltstack");
		exit(1);
	}
	signal_inner();
	counter += (long)arg;
	for (;;)
		pause();
	return NULL;
}

static void *holder_thread(void *arg) {
	(void)arg;
	holder_main();
	return NULL;
}

static void start(const char *name, void *(*fn)(void *), long arg) {
	pthread_t t;
	if (pthread_create(&t, NULL, fn, (void *)arg) != 0) {
		perror("pthread_create");
		exit(1);
	}
	pthread_setname_np(t, name);
}

int main(int argc, char **argv) {
	int waiters = argc > 1 ? atoi(argv[1]) : 2;
	heap_mutex = malloc(sizeof *heap_mutex);
	pthread_mutex_init(heap_mutex, NULL);
	pthread_barrier_init(&held, NULL, 2);
	start("holder", holder_thread, 0);
	pthread_barrier_wait(&held);
	char name[16];
	for (int i = 0; i < waiters; i++) {
		snprintf(name, sizeof name, "heap-%d", i);
		start(name, worker_loop, i);
		snprintf(name, sizeof name, "global-%d", i);
		start(name, global_loop, i);
	}
	start("deep", deep_main, 1);
	start("cond", cond_main, 1);
	start("jit", jit_main, 1);
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_ONSTACK};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	start("signal", signal_main, 1);
	printf("READY\n");
	fflush(stdout);
	for (;;)
		pause();
}
