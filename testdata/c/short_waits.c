// short_waits: N named threads ("short-N") compute most of the time and
// take one global mutex for a few microseconds between bursts, so each
// blocks on it very often and very briefly: a sample catches a thread in
// futex(2) now and then, though it spent nearly all of the interval on a
// CPU or waiting for one. Queued time counted as whole intervals would
// exceed the threads' time off the CPU.
//
// On SIGUSR1 it prints "ITERS N T": the loop iterations all threads have
// done and the CLOCK_MONOTONIC time in nanoseconds (the futex tracer's
// cost benchmark reads its throughput so).
//
// usage: short_waits THREADS OUTSIDE_ITERS INSIDE_ITERS
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_COUNTED 256
// One cache line per thread's counter, so counting adds no sharing.
static struct {
	_Atomic unsigned long n;
	char pad[56];
} iters[MAX_COUNTED];
static volatile sig_atomic_t print_requested;

static void on_usr1(int sig) {
	(void)sig;
	print_requested = 1;
}

pthread_mutex_t short_lock = PTHREAD_MUTEX_INITIALIZER;
static long outside_iters, inside_iters;
volatile unsigned long sink;

static void spin(long n) {
	for (long i = 0; i < n; i++)
		sink += i;
}

static void *worker(void *arg) {
	_Atomic unsigned long *n = &iters[(long)arg % MAX_COUNTED].n;
	for (;;) {
		spin(outside_iters);
		pthread_mutex_lock(&short_lock);
		spin(inside_iters);
		pthread_mutex_unlock(&short_lock);
		atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: %s THREADS OUTSIDE_ITERS INSIDE_ITERS\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	outside_iters = atol(argv[2]);
	inside_iters = atol(argv[3]);
	struct sigaction sa = {.sa_handler = on_usr1};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL); // the workers never take it
	for (int i = 0; i < n; i++) {
		pthread_t t;
		char name[16];
		if (pthread_create(&t, NULL, worker, (void *)(long)i) != 0) {
			perror("pthread_create");
			return 1;
		}
		snprintf(name, sizeof name, "short-%d", i);
		pthread_setname_np(t, name);
	}
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	printf("READY\n");
	fflush(stdout);
	for (;;) {
		pause();
		if (print_requested) {
			print_requested = 0;
			unsigned long total = 0;
			for (int i = 0; i < MAX_COUNTED; i++)
				total += atomic_load_explicit(&iters[i].n, memory_order_relaxed);
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			printf("ITERS %lu %lu\n", total, (unsigned long)ts.tv_sec * 1000000000UL + (unsigned long)ts.tv_nsec);
			fflush(stdout);
		}
	}
}
