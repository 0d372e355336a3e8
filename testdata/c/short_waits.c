// short_waits: N named threads ("short-N") compute most of the time and
// take one global mutex for a few microseconds between bursts, so each
// blocks on it very often and very briefly: a sample catches a thread in
// futex(2) now and then, though it spent nearly all of the interval on a
// CPU or waiting for one. Queued time counted as whole intervals would
// exceed the threads' time off the CPU.
//
// usage: short_waits THREADS OUTSIDE_ITERS INSIDE_ITERS
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

pthread_mutex_t short_lock = PTHREAD_MUTEX_INITIALIZER;
static long outside_iters, inside_iters;
volatile unsigned long sink;

static void spin(long n) {
	for (long i = 0; i < n; i++)
		sink += i;
}

static void *worker(void *arg) {
	(void)arg;
	for (;;) {
		spin(outside_iters);
		pthread_mutex_lock(&short_lock);
		spin(inside_iters);
		pthread_mutex_unlock(&short_lock);
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
	for (int i = 0; i < n; i++) {
		pthread_t t;
		char name[16];
		if (pthread_create(&t, NULL, worker, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
		snprintf(name, sizeof name, "short-%d", i);
		pthread_setname_np(t, name);
	}
	printf("READY\n");
	fflush(stdout);
	for (;;) pause();
}
