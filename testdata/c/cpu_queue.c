// cpu_queue: threads that queue for a CPU beside threads that do not, as a
// saturated JVM shows them (busy workers beside a JIT compiler that wakes
// now and then and an attach listener that never runs).
//
// usage: cpu_queue CPUS BUSY BURSTY IDLE PERIOD_MS
//   CPUS    binds the process to its first CPUS allowed CPUs (0: leave it)
//   BUSY    threads "busy-N" compute without pause
//   BURSTY  threads "bursty-N" compute 0.3 ms every PERIOD_MS
//   IDLE    threads "idle-N" block forever on a condition variable
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static useconds_t period_us;

static void *busy(void *arg) {
	volatile unsigned long x = (unsigned long)arg;
	for (;;) x = x * 6364136223846793005UL + 1442695040888963407UL;
	return NULL;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *bursty(void *arg) {
	volatile unsigned long x = (unsigned long)arg;
	for (;;) {
		// 0.3 ms of CPU, whatever the waiting in between.
		double until = now() + 0.0003;
		while (now() < until)
			for (int i = 0; i < 100; i++) x = x * 6364136223846793005UL + 1;
		usleep(period_us);
	}
	return NULL;
}

static void *idle(void *arg) {
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) pthread_cond_wait(&never, &mu);
	return NULL;
}

static void start(void *(*fn)(void *), const char *prefix, int n) {
	char name[16];
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, fn, (void *)(long)i) != 0) { perror("pthread_create"); exit(1); }
		snprintf(name, sizeof name, "%s-%d", prefix, i);
		pthread_setname_np(t, name);
	}
}

int main(int argc, char **argv) {
	if (argc != 6) { fprintf(stderr, "usage: cpu_queue CPUS BUSY BURSTY IDLE PERIOD_MS\n"); return 2; }
	int cpus = atoi(argv[1]);
	period_us = (useconds_t)atoi(argv[5]) * 1000;
	if (cpus > 0) {
		// Keep the first CPUS of the CPUs we may use; threads inherit it.
		cpu_set_t allowed, keep;
		if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) { perror("sched_getaffinity"); return 1; }
		CPU_ZERO(&keep);
		for (int c = 0, kept = 0; c < CPU_SETSIZE && kept < cpus; c++)
			if (CPU_ISSET(c, &allowed)) { CPU_SET(c, &keep); kept++; }
		if (sched_setaffinity(0, sizeof keep, &keep) != 0) { perror("sched_setaffinity"); return 1; }
	}
	start(busy, "busy", atoi(argv[2]));
	start(bursty, "bursty", atoi(argv[3]));
	start(idle, "idle", atoi(argv[4]));
	printf("READY\n");
	fflush(stdout);
	for (;;) pause();
}
