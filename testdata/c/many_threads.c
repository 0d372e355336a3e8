// many_threads: starts N threads that sleep, then idles. With LIFETIME_MS > 0
// the whole process exits after that long (a target that dies mid-run).
//
// usage: many_threads N [LIFETIME_MS]
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *sleeper(void *arg) {
	(void)arg;
	for (;;) sleep(3600);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: %s N [LIFETIME_MS]\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	long lifetime = argc > 2 ? atol(argv[2]) : 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024); // thousands of threads, little memory
	char name[32]; // names stay under the kernel's 16 bytes for the counts used
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, sleeper, NULL) != 0) { perror("pthread_create"); return 1; }
		snprintf(name, sizeof name, "sleeper-%d", i);
		pthread_setname_np(t, name);
	}
	printf("READY\n");
	fflush(stdout);
	if (lifetime > 0) {
		usleep(lifetime * 1000);
		return 0;
	}
	for (;;) pause();
}
