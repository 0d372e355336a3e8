// thread_churn: keeps creating short-lived threads that spin briefly and
// exit, beside a few long-lived ones, so tids come and go between samples.
//
// usage: thread_churn
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *short_lived(void *arg) {
	(void)arg;
	volatile unsigned long x = 0;
	for (int i = 0; i < 200000; i++) x += i;
	usleep(2000);
	return NULL;
}

static void *long_lived(void *arg) {
	(void)arg;
	for (;;) usleep(10 * 1000);
	return NULL;
}

int main(void) {
	for (int i = 0; i < 3; i++) {
		pthread_t t;
		pthread_create(&t, NULL, long_lived, NULL);
		pthread_setname_np(t, "steady");
	}
	printf("READY\n");
	fflush(stdout);
	for (;;) {
		pthread_t t[8];
		for (int i = 0; i < 8; i++) {
			pthread_create(&t[i], NULL, short_lived, NULL);
			pthread_setname_np(t[i], "ephemeral");
		}
		for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
	}
}
