// Scenario: one program before and after a capacity fix, for ctprof diff.
//
// usage: CapacityFix WORKERS [split]
//
// WORKERS threads ("worker-1" .. "worker-N", arg1, default 8) loop in the
// static method CapacityFix.serve(). Each pass enters the monitor of the one
// CapacityFix$Catalog in Catalog.lookup() and burns ~4 ms of CPU holding it,
// so with many workers most are BLOCKED at the top of lookup() with
// "- waiting to lock <...> (a CapacityFix$Catalog)".
//
// "split" is the fix: lookup() holds the Catalog monitor for ~2 ms only, and
// the other ~2 ms move to Stats.record() under the monitor of the one
// CapacityFix$Stats, a resource the unsplit program never waits on. Run with
// fewer workers, the Catalog queue shrinks and a Stats queue appears.
//
// Prints READY once a worker has been seen BLOCKED (with 2 or more workers),
// then runs until killed.
public class CapacityFix {
    static final class Catalog {
        // Written under the monitor so the JIT cannot drop the busy loop.
        private long state = 1;

        synchronized long lookup(long nanos) {
            state = burn(state, nanos);
            return state;
        }
    }

    static final class Stats {
        private long state = 1;

        synchronized long record(long nanos) {
            state = burn(state, nanos);
            return state;
        }
    }

    static final Catalog CATALOG = new Catalog();
    static final Stats STATS = new Stats();

    // Busy work rather than a sleep keeps the holder RUNNABLE, like a real
    // slow critical section.
    static long burn(long x, long nanos) {
        long deadline = System.nanoTime() + nanos;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 1000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        return x;
    }

    static void serve(boolean split) {
        while (true) {
            if (split) {
                CATALOG.lookup(2_000_000L);
                STATS.record(2_000_000L);
            } else {
                CATALOG.lookup(4_000_000L);
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
        boolean split = args.length > 1 && args[1].equals("split");
        if (args.length > 2 || args.length > 1 && !split) {
            System.err.println("usage: CapacityFix WORKERS [split]");
            System.exit(2);
        }
        Thread[] threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            threads[i] = new Thread(() -> serve(split), "worker-" + (i + 1));
            threads[i].start();
        }
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
