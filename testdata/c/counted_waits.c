// counted_waits: futex waits the program counts itself, for the exact
// futex tracer's tests (internal/futextrace).
//
// - "waiter" calls futex(FUTEX_WAIT_PRIVATE) on counted_word in a loop
//   and "waker" sets the word and wakes it every WAKE_US microseconds: the
//   waiter counts every call it makes, by outcome (woken, EAGAIN, other),
//   and times each with CLOCK_MONOTONIC around the system call.
// - "timer" waits on timed_word, which never changes, with a 5 ms timeout:
//   every call ends with ETIMEDOUT, and it counts them (timeouts=).
// - MUTEX_THREADS threads ("mutex-N") contend on a global pthread mutex
//   and on one on the heap (pthread_mutex_lock's own futex waits).
//
// On SIGUSR1 it prints one line:
//   COUNTS calls=C woken=W again=A other=O total_ns=T max_ns=M timeouts=N
// Addresses are printed at start: COUNTED 0x..., TIMED 0x..., GLOBAL 0x...,
// HEAP 0x...
//
// usage: counted_waits [WAKE_US [MUTEX_THREADS]]
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic unsigned int counted_word;
static unsigned int timed_word;
static _Atomic unsigned long timeouts;
pthread_mutex_t global_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *heap_mutex;
static long wake_us = 1000;

static _Atomic unsigned long calls, woken, again, other, total_ns, max_ns;
static volatile sig_atomic_t print_requested;
volatile unsigned long sink;

static unsigned long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000UL + (unsigned long)ts.tv_nsec;
}

__attribute__((noinline)) static long counted_wait(void) {
	return syscall(SYS_futex, &counted_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

static void *waiter(void *arg) {
	(void)arg;
	for (;;) {
		while (atomic_load(&counted_word) == 0) {
			unsigned long t0 = now_ns();
			long r = counted_wait();
			int e = errno;
			unsigned long d = now_ns() - t0;
			atomic_fetch_add(&calls, 1);
			if (r == 0) {
				atomic_fetch_add(&woken, 1);
				atomic_fetch_add(&total_ns, d);
				unsigned long m = atomic_load(&max_ns);
				while (d > m && !atomic_compare_exchange_weak(&max_ns, &m, d))
					;
			} else if (e == EAGAIN) {
				atomic_fetch_add(&again, 1);
			} else {
				atomic_fetch_add(&other, 1);
			}
		}
		atomic_store(&counted_word, 0);
	}
	return NULL;
}

static void *waker(void *arg) {
	(void)arg;
	struct timespec ts = {.tv_sec = wake_us / 1000000, .tv_nsec = (wake_us % 1000000) * 1000};
	for (;;) {
		nanosleep(&ts, NULL);
		atomic_store(&counted_word, 1);
		syscall(SYS_futex, &counted_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	return NULL;
}

static void *timer(void *arg) {
	(void)arg;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 5000000};
	for (;;) {
		long r = syscall(SYS_futex, &timed_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		if (r == -1 && errno == ETIMEDOUT)
			atomic_fetch_add(&timeouts, 1);
	}
	return NULL;
}

static void spin(long n) {
	for (long i = 0; i < n; i++)
		sink += i;
}

static void *mutex_worker(void *arg) {
	long i = (long)arg;
	for (;;) {
		pthread_mutex_t *m = (i++ & 1) ? &global_mutex : heap_mutex;
		pthread_mutex_lock(m);
		spin(20000);
		pthread_mutex_unlock(m);
		usleep(200);
	}
	return NULL;
}

static void on_usr1(int sig) {
	(void)sig;
	print_requested = 1;
}

static void start(void *(*fn)(void *), void *arg, const char *name) {
	pthread_t t;
	if (pthread_create(&t, NULL, fn, arg) != 0) {
		perror("pthread_create");
		exit(1);
	}
	pthread_setname_np(t, name);
}

int main(int argc, char **argv) {
	int mutex_threads = 3;
	if (argc > 1)
		wake_us = atol(argv[1]);
	if (argc > 2)
		mutex_threads = atoi(argv[2]);
	heap_mutex = malloc(sizeof *heap_mutex);
	pthread_mutex_init(heap_mutex, NULL);
	struct sigaction sa = {.sa_handler = on_usr1};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	// SIGUSR1 goes to the main thread only: the waiter's calls are never
	// interrupted by it.
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	start(waiter, NULL, "waiter");
	start(waker, NULL, "waker");
	start(timer, NULL, "timer");
	for (long i = 0; i < mutex_threads; i++) {
		char name[16];
		snprintf(name, sizeof name, "mutex-%d", (int)(i % 1000));
		start(mutex_worker, (void *)i, name);
	}
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	printf("COUNTED %p\nTIMED %p\nGLOBAL %p\nHEAP %p\nREADY\n", (void *)&counted_word, (void *)&timed_word, (void *)&global_mutex, (void *)heap_mutex);
	fflush(stdout);
	for (;;) {
		pause();
		if (print_requested) {
			print_requested = 0;
			printf("COUNTS calls=%lu woken=%lu again=%lu other=%lu total_ns=%lu max_ns=%lu timeouts=%lu\n",
			       atomic_load(&calls), atomic_load(&woken), atomic_load(&again), atomic_load(&other),
			       atomic_load(&total_ns), atomic_load(&max_ns), atomic_load(&timeouts));
			fflush(stdout);
		}
	}
}
