// spinners: N threads that compute without pause, so with more threads than
// CPUs they queue for the CPUs (run-queue wait, involuntary switches).
//
// usage: spinners N
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *spin(void *arg) {
	volatile unsigned long x = (unsigned long)arg;
	for (;;) x = x * 6364136223846793005UL + 1442695040888963407UL;
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 4;
	char name[32];
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, spin, (void *)(long)i) != 0) { perror("pthread_create"); return 1; }
		snprintf(name, sizeof name, "spin-%d", i);
		pthread_setname_np(t, name);
	}
	printf("READY\n");
	fflush(stdout);
	for (;;) pause();
}
