import java.util.concurrent.CountDownLatch;

// Scenario: Java threads queued on native locks inside a JNI library.
//
// The library is testdata/c/jni_locks.c, built by internal/testjvm
// (BuildJNI) into libjnilocks.so and loaded with System.load from the
// absolute path in the system property jnilocks.lib (testjvm passes it for
// this scenario). Its JNI_OnLoad mallocs a pthread mutex.
//
// N threads "jni-worker-1" .. "jni-worker-N" (arg1, default 4) loop calling
// the native JniLocks.globalWork, which locks the library's global pthread
// mutex jni_global_lock, sleeps arg3 microseconds (default 5000) holding it
// and unlocks. M threads "jni-heap-1" .. "jni-heap-M" (arg2, default 3) do
// the same in JniLocks.heapWork on the malloc'ed mutex; they rename their OS
// thread "jnilib-heap" first (JniLocks.nameNativeThread, prctl), so their
// Java names are only in a thread dump (the nid joins them to the OS tid).
// In a dump every one of them is RUNNABLE in a native method, holder and
// waiters alike; in /proc the waiters sleep in futex(2) on the mutex.
//
// Prints "GLOBAL_LOCK 0x<address>" and "HEAP_LOCK 0x<address>" (the
// mutexes' addresses, which the waiters' futex calls name), then READY once
// every worker has been through its lock once, then runs until killed.
public class JniLocks {
    static native void globalWork(long holdNanos);

    static native void heapWork(long holdNanos);

    static native long globalLockAddress();

    static native long heapLockAddress();

    static native void nameNativeThread(String name);

    public static void main(String[] args) throws Exception {
        int workers = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int heapWorkers = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        long holdNanos = (args.length > 2 ? Long.parseLong(args[2]) : 5000) * 1000L;
        String lib = System.getProperty("jnilocks.lib");
        if (lib == null) {
            System.err.println("JniLocks: no -Djnilocks.lib=<absolute path of libjnilocks.so>");
            System.exit(2);
        }
        System.load(lib);
        System.out.println("GLOBAL_LOCK 0x" + Long.toHexString(globalLockAddress()));
        System.out.println("HEAP_LOCK 0x" + Long.toHexString(heapLockAddress()));

        CountDownLatch started = new CountDownLatch(workers + heapWorkers);
        for (int i = 1; i <= workers; i++) {
            Thread t = new Thread(() -> {
                globalWork(holdNanos);
                started.countDown();
                while (true) {
                    globalWork(holdNanos);
                }
            }, "jni-worker-" + i);
            t.setDaemon(true);
            t.start();
        }
        for (int i = 1; i <= heapWorkers; i++) {
            Thread t = new Thread(() -> {
                nameNativeThread("jnilib-heap");
                heapWork(holdNanos);
                started.countDown();
                while (true) {
                    heapWork(holdNanos);
                }
            }, "jni-heap-" + i);
            t.setDaemon(true);
            t.start();
        }
        started.await();
        System.out.println("READY");
        System.out.flush();
        while (true) {
            Thread.sleep(60_000);
        }
    }
}
