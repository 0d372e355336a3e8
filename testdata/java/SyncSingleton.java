// Scenario: monitor contention on a singleton.
//
// N request threads ("request-1" .. "request-N", arg1, default 8) call the
// synchronized instance method SyncSingleton.handle() in a loop from the
// static method SyncSingleton.serve(). handle() burns a few milliseconds of
// CPU while holding the monitor, so at any instant one thread is RUNNABLE
// inside handle() with "- locked <...> (a SyncSingleton)" and most of the
// others are BLOCKED at the top of handle() with
// "- waiting to lock <...> (a SyncSingleton)".
//
// Prints READY once at least one request thread has been seen BLOCKED, then
// runs until killed (the main thread sleeps in SyncSingleton.idleForever()).
public class SyncSingleton {
    private static final SyncSingleton INSTANCE = new SyncSingleton();

    // Written under the monitor so the JIT cannot drop the busy loop.
    private long state = 1;

    private SyncSingleton() {
    }

    static SyncSingleton getInstance() {
        return INSTANCE;
    }

    // Holds the monitor for ~3 ms of real CPU work. Busy work rather than a
    // sleep keeps the owner RUNNABLE, like a real slow critical section.
    synchronized long handle() {
        long deadline = System.nanoTime() + 3_000_000L;
        long x = state;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 1000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        state = x;
        return x;
    }

    static void serve() {
        SyncSingleton s = getInstance();
        while (true) {
            s.handle();
        }
    }

    static void idleForever() throws InterruptedException {
        while (true) {
            Thread.sleep(60_000);
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        Thread[] threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            threads[i] = new Thread(SyncSingleton::serve, "request-" + (i + 1));
            threads[i].start();
        }
        // With a single request thread nobody can ever be BLOCKED.
        if (n > 1) {
            awaitAnyBlocked(threads);
        }
        System.out.println("READY");
        System.out.flush();
        idleForever();
    }

    private static void awaitAnyBlocked(Thread[] threads) throws InterruptedException {
        while (true) {
            for (Thread t : threads) {
                if (t.getState() == Thread.State.BLOCKED) {
                    return;
                }
            }
            Thread.sleep(10);
        }
    }
}
