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
// thread-nanoseconds spent waiting to enter the monitor so far (waits still
// in progress not included), the truth a profiler's queued time can be
// checked against.
//
// Prints READY once a worker has been seen BLOCKED, then runs until killed.
import java.util.concurrent.atomic.AtomicLong;

public class MeasuredWaits {
    static final class Log {
    }

    static final Log LOG = new Log();
    static final AtomicLong WAITED = new AtomicLong();

    static void work() {
        while (true) {
            long t0 = System.nanoTime();
            synchronized (LOG) {
                WAITED.addAndGet(System.nanoTime() - t0);
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
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            ts[i] = new Thread(MeasuredWaits::work, "worker-" + (i + 1));
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
            System.out.println("WAITED " + System.currentTimeMillis() + " " + WAITED.get());
            System.out.flush();
            Thread.sleep(100);
        }
    }
}
