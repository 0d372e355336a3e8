import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

// Scenario: the three lock waits Java Flight Recorder records, for pkg/jfr.
//
// N threads "monitor-1".."monitor-N" (arg1, default 3) loop in
// JfrLocks.enterMonitor(): each takes System.nanoTime() before entering a
// synchronized block on the one JfrLocks$Monitor, again once inside, adds the
// difference to a shared total, and holds the monitor for ~2 ms, so most of
// them are queued (jdk.JavaMonitorEnter).
//
// N threads "park-1".."park-N" loop in JfrLocks.takeLock() on the one
// ReentrantLock JfrLocks.LOCK, holding it ~2 ms (jdk.ThreadPark, parked class
// ReentrantLock$NonfairSync).
//
// A "waiter" thread loops in JfrLocks.awaitSignal(), whose every step
// (Signal.awaitReply) calls wait() on the one JfrLocks$Signal until a "notifier"
// thread calls notify() about every 5 ms (jdk.JavaMonitorWait
// with the notifier as notifier thread).
//
// Every 100 ms the main thread prints "WAITED <epoch millis> <total ns>": the
// thread-nanoseconds spent waiting to enter the monitor so far.
//
// Prints READY once a monitor thread and a park thread were seen blocked,
// then runs until killed.
public class JfrLocks {
    static final class Monitor {
    }

    static final class Signal {
        // One unit of the waiter's work: it cannot go on until the
        // notifier replies, so the wait is inside work (contention by
        // ctprof's wait rule), not the loop's own wait for its next task.
        synchronized boolean awaitReply() {
            while (!signalled) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    return false;
                }
            }
            signalled = false;
            return true;
        }
    }

    static final Monitor MONITOR = new Monitor();
    static final Signal SIGNAL = new Signal();
    static final ReentrantLock LOCK = new ReentrantLock();
    static final AtomicLong WAITED = new AtomicLong();
    static boolean signalled; // guarded by SIGNAL

    static void hold() {
        try {
            Thread.sleep(2);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void enterMonitor() {
        while (!Thread.currentThread().isInterrupted()) {
            long t0 = System.nanoTime();
            synchronized (MONITOR) {
                WAITED.addAndGet(System.nanoTime() - t0);
                hold();
            }
        }
    }

    static void takeLock() {
        while (!Thread.currentThread().isInterrupted()) {
            LOCK.lock();
            try {
                hold();
            } finally {
                LOCK.unlock();
            }
        }
    }

    static void awaitSignal() {
        while (SIGNAL.awaitReply()) {
        }
    }

    static void sendSignals() {
        while (true) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                return;
            }
            synchronized (SIGNAL) {
                signalled = true;
                SIGNAL.notify();
            }
        }
    }

    static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    // With "churn" (arg2), a "churn" thread keeps about 16 MB of arrays
    // alive and replaces them as fast as it can: on a small heap the old
    // generation fills and full collections compact it, moving the locks
    // to new addresses while threads wait on them.
    static void churn() {
        byte[][] live = new byte[64][];
        for (int i = 0; ; i = (i + 1) % live.length) {
            live[i] = new byte[256 * 1024];
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        if (args.length > 1 && args[1].equals("churn")) {
            daemon(JfrLocks::churn, "churn");
        }
        Thread[] monitors = new Thread[n];
        Thread[] parkers = new Thread[n];
        for (int i = 0; i < n; i++) {
            monitors[i] = daemon(JfrLocks::enterMonitor, "monitor-" + (i + 1));
            parkers[i] = daemon(JfrLocks::takeLock, "park-" + (i + 1));
        }
        daemon(JfrLocks::awaitSignal, "waiter");
        daemon(JfrLocks::sendSignals, "notifier");
        boolean blocked = n < 2, parked = n < 2, ready = false;
        while (true) {
            for (int i = 0; i < n && !ready; i++) {
                blocked |= monitors[i].getState() == Thread.State.BLOCKED;
                parked |= parkers[i].getState() == Thread.State.WAITING;
            }
            if (!ready && blocked && parked) {
                ready = true;
                System.out.println("READY");
            }
            System.out.println("WAITED " + System.currentTimeMillis() + " " + WAITED.get());
            System.out.flush();
            Thread.sleep(100);
        }
    }
}
