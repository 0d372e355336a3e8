// jni_locks: the native half of testdata/java/JniLocks.java, built as the
// JNI library libjnilocks.so (internal/testjvm.BuildJNI: cc -shared -fPIC
// -O1 -g -pthread against the JDK's headers) and loaded with System.load.
// It has no main: it is not one of testnative's programs.
//
// Java threads call into it and queue on its native locks, as a JVM's
// threads do in a JNI library of their own:
//
//   - JniLocks.globalWork takes jni_global_lock, a pthread mutex in the
//     library's data (named by its symbol: "jni_global_lock
//     (libjnilocks.so+0x…)"), holds it for the given time asleep in
//     nanosleep, and lets it go;
//   - JniLocks.heapWork does the same on a mutex the library allocated
//     with malloc when it was loaded (JNI_OnLoad, on the Java thread that
//     called System.load: a malloc arena of that thread, not the primordial
//     thread's [heap]).
//
// The locks' addresses are returned to Java, which prints them, so a test
// can match them with the futex addresses in /proc/<pid>/task/<tid>/syscall.
// JniLocks.nameNativeThread renames the calling OS thread (its comm), as
// native libraries do to their threads: the Java name then comes only from
// a thread dump, joined by its nid.
#define _GNU_SOURCE
#include <jni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

pthread_mutex_t jni_global_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *jni_heap_lock;

// Counted under each lock, so the critical sections do something.
volatile unsigned long jni_global_calls, jni_heap_calls;

static void hold_for(jlong nanos) {
	struct timespec ts = {.tv_sec = nanos / 1000000000L, .tv_nsec = nanos % 1000000000L};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

// The critical sections are functions of their own, kept out of line, so a
// native stack of a waiter or the holder names them.
__attribute__((noinline)) void jni_locks_global_section(jlong hold_nanos) {
	pthread_mutex_lock(&jni_global_lock);
	jni_global_calls++;
	hold_for(hold_nanos);
	pthread_mutex_unlock(&jni_global_lock);
}

__attribute__((noinline)) void jni_locks_heap_section(jlong hold_nanos) {
	pthread_mutex_lock(jni_heap_lock);
	jni_heap_calls++;
	hold_for(hold_nanos);
	pthread_mutex_unlock(jni_heap_lock);
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
	(void)vm;
	(void)reserved;
	jni_heap_lock = malloc(sizeof *jni_heap_lock);
	if (jni_heap_lock == NULL || pthread_mutex_init(jni_heap_lock, NULL) != 0)
		return JNI_ERR;
	return JNI_VERSION_1_8;
}

JNIEXPORT void JNICALL Java_JniLocks_globalWork(JNIEnv *env, jclass cls, jlong hold_nanos) {
	(void)env;
	(void)cls;
	jni_locks_global_section(hold_nanos);
}

JNIEXPORT void JNICALL Java_JniLocks_heapWork(JNIEnv *env, jclass cls, jlong hold_nanos) {
	(void)env;
	(void)cls;
	jni_locks_heap_section(hold_nanos);
}

JNIEXPORT jlong JNICALL Java_JniLocks_globalLockAddress(JNIEnv *env, jclass cls) {
	(void)env;
	(void)cls;
	return (jlong)(uintptr_t)&jni_global_lock;
}

JNIEXPORT jlong JNICALL Java_JniLocks_heapLockAddress(JNIEnv *env, jclass cls) {
	(void)env;
	(void)cls;
	return (jlong)(uintptr_t)jni_heap_lock;
}

JNIEXPORT void JNICALL Java_JniLocks_nameNativeThread(JNIEnv *env, jclass cls, jstring name) {
	(void)cls;
	const char *s = (*env)->GetStringUTFChars(env, name, NULL);
	if (s == NULL)
		return;
	char comm[16];
	strncpy(comm, s, sizeof comm - 1);
	comm[sizeof comm - 1] = 0;
	prctl(PR_SET_NAME, comm, 0, 0, 0);
	(*env)->ReleaseStringUTFChars(env, name, s);
}
