import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

// Scenario: contention on a java.util.concurrent ReentrantLock.
//
// N worker threads ("worker-1" .. "worker-N", arg1, default 8) loop in the
// static method LockContention.work(), which takes the shared non-fair
// ReentrantLock LockContention.LOCK and calls LockContention.critical()
// (~3 ms of CPU work) while holding it. At any instant one worker is
// RUNNABLE in critical() and owns the lock (shown under "Locked ownable
// synchronizers" with Thread.print -l), and most others are WAITING (parking)
// in ReentrantLock.lock() with
// "- parking to wait for <...> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)".
//
// Prints READY once at least one worker is parked on the lock, then runs
// until killed.
public class LockContention {
    static final ReentrantLock LOCK = new ReentrantLock();

    // Only touched under LOCK; keeps the JIT from eliminating the busy loop.
    private static long state = 1;

    static void critical() {
        long deadline = System.nanoTime() + 3_000_000L;
        long x = state;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 1000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        state = x;
    }

    static void work() {
        while (true) {
            LOCK.lock();
            try {
                critical();
            } finally {
                LOCK.unlock();
            }
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
            threads[i] = new Thread(LockContention::work, "worker-" + (i + 1));
            threads[i].start();
        }
        if (n > 1) {
            awaitAnyParked(threads);
        }
        System.out.println("READY");
        System.out.flush();
        idleForever();
    }

    // A worker counts as parked on the lock when its state is WAITING and its
    // park blocker is the lock's Sync object (whose class is private, hence
    // the name check).
    private static void awaitAnyParked(Thread[] threads) throws InterruptedException {
        while (true) {
            for (Thread t : threads) {
                Object blocker = LockSupport.getBlocker(t);
                if (t.getState() == Thread.State.WAITING && blocker != null
                        && blocker.getClass().getName().startsWith("java.util.concurrent.locks.ReentrantLock$")) {
                    return;
                }
            }
            Thread.sleep(10);
        }
    }
}
