// Scenario: a steady monitor convoy that measures its own waits.
//
// N threads "worker-1".."worker-N" (arg1, default 4) loop in
// MeasuredWaits.work(): each takes System.nanoTime() before entering a
// synchronized block on the one MeasuredWaits$Log (wait site
// MeasuredWaits.work()), again once inside, adds the difference to a shared
// total, and holds the monitor for ~2 ms (Thread.sleep inside the block),
// so at any instant about N-1 threads are BLOCKED on the monitor.
//
// Every 100 ms the main thread prints "WAITED <epoch millis> <total ns>": the
// thread-nanoseconds spent waiting to enter the monitor so far, the waits
// still in progress included (each worker publishes when its current wait
// began): the truth a profiler's queued time can be checked against.
// Counting completed waits only was not that truth: HotSpot lets the
// thread that leaves the monitor take it again before a woken waiter runs,
// so a waiter can starve for seconds, and a window's completed waits then
// missed most of what was queued in it.
//
// Prints READY once a worker has been seen BLOCKED, then runs until killed.
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

public class MeasuredWaits {
    static final class Log {
    }

    static final Log LOG = new Log();
    static final AtomicLong WAITED = new AtomicLong();
    // WAITING[i] is when worker i's current wait began, 0 when it does not
    // wait.
    static AtomicLongArray WAITING;

    static void work(int i) {
        while (true) {
            long t0 = System.nanoTime();
            WAITING.set(i, t0);
            synchronized (LOG) {
                long now = System.nanoTime();
                WAITING.set(i, 0);
                WAITED.addAndGet(now - t0);
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        WAITING = new AtomicLongArray(n);
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int idx = i;
            ts[i] = new Thread(() -> work(idx), "worker-" + (i + 1));
            ts[i].setDaemon(true);
            ts[i].start();
        }
        boolean ready = n < 2;
        while (true) {
            if (!ready) {
                for (Thread t : ts) {
                    if (t.getState() == Thread.State.BLOCKED) {
                        ready = true;
                        System.out.println("READY");
                    }
                    if (ready) {
                        break;
                    }
                }
            }
            long now = System.nanoTime();
            long total = WAITED.get();
            for (int i = 0; i < n; i++) {
                long began = WAITING.get(i);
                if (began != 0 && began < now) {
                    total += now - began;
                }
            }
            System.out.println("WAITED " + System.currentTimeMillis() + " " + total);
            System.out.flush();
            Thread.sleep(100);
        }
    }
}
