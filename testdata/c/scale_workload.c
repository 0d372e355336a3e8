// scale_workload: one worker thread per CPU it may use (its affinity mask),
// each repeating a fixed piece of computation. In "contended" mode every
// piece runs inside one global mutex, so the work is serialized; in
// "independent" mode the threads share nothing. It prints its throughput
// twice a second as "throughput <ops> ops/s", the way load generators do.
//
// usage: scale_workload contended|independent
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static int contended;
// Per-thread counters on their own cache lines: a shared counter would
// itself serialize the "independent" threads.
struct counter {
	_Atomic unsigned long ops;
	volatile unsigned long sink;
	char pad[64 - 2 * sizeof(unsigned long)];
};
static struct counter counters[256];
static int nworkers;

static unsigned long piece(unsigned long x) {
	// About a millisecond: long enough that a waiter sleeps on the mutex
	// rather than spinning through wake-ups.
	for (int i = 0; i < 1000000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static void *worker(void *arg) {
	struct counter *c = arg;
	unsigned long x = (unsigned long)(c - counters) + 1;
	for (;;) {
		if (contended) pthread_mutex_lock(&work_lock);
		x = piece(x);
		if (contended) pthread_mutex_unlock(&work_lock);
		c->sink = x;
		atomic_store_explicit(&c->ops, atomic_load_explicit(&c->ops, memory_order_relaxed) + 1, memory_order_relaxed);
	}
	return NULL;
}

static unsigned long total_ops(void) {
	unsigned long t = 0;
	for (int i = 0; i < nworkers; i++) t += atomic_load_explicit(&counters[i].ops, memory_order_relaxed);
	return t;
}

int main(int argc, char **argv) {
	if (argc != 2 || (strcmp(argv[1], "contended") && strcmp(argv[1], "independent"))) {
		fprintf(stderr, "usage: %s contended|independent\n", argv[0]);
		return 2;
	}
	contended = strcmp(argv[1], "contended") == 0;
	cpu_set_t set;
	sched_getaffinity(0, sizeof set, &set);
	int n = CPU_COUNT(&set);
	if (n > 256) n = 256;
	nworkers = n;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		pthread_create(&t, NULL, worker, &counters[i]);
		pthread_setname_np(t, "worker");
	}
	printf("READY\n");
	fflush(stdout);
	struct timespec last;
	clock_gettime(CLOCK_MONOTONIC, &last);
	unsigned long before = 0;
	for (;;) {
		usleep(500 * 1000);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		unsigned long total = total_ops();
		double dt = (now.tv_sec - last.tv_sec) + (now.tv_nsec - last.tv_nsec) / 1e9;
		printf("throughput %.0f ops/s\n", (total - before) / dt);
		fflush(stdout);
		before = total;
		last = now;
	}
}
