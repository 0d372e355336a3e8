// testjvm:min-jdk=21
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

// Scenario: a few hundred virtual threads (JDK 21+; the harness compiles it
// with JDK 25 only).
//
//   - "vt-lock-holder" locks VirtualThreads.LOCK (a ReentrantLock) in
//     VirtualThreads.holdLock() and sleeps forever while holding it.
//   - "vt-lock-waiter-1" .. "vt-lock-waiter-W" (arg1, default 100) are parked
//     in ReentrantLock.lock() called from VirtualThreads.waitForLock().
//   - "vt-sleeper-1" .. "vt-sleeper-S" (arg2, default 200) sleep in
//     VirtualThreads.nap().
//   - "vt-pinned-1" and "vt-pinned-2" each enter a synchronized block on their
//     own VirtualThreads$PinMonitor in VirtualThreads.pinned() and, inside it,
//     trigger the static initializer of VirtualThreads$SlowInit1 /
//     VirtualThreads$SlowInit2, which sleeps forever.
//
// Why the class initializer: since JDK 24 (JEP 491) a virtual thread that
// blocks or sleeps inside a synchronized block unmounts like any other, so
// "synchronized" alone no longer pins it. A virtual thread blocked inside a
// <clinit> is still pinned, so both carriers stay mounted and Thread.print
// shows "Carrying virtual thread #N" on two ForkJoinPool-1-worker-M threads,
// followed by "Mounted virtual thread #N" and the virtual thread's frames,
// including "- locked <...> (a VirtualThreads$PinMonitor)".
//
// Unmounted virtual threads (holder, waiters, sleepers) do not appear in
// Thread.print at all; Thread.dump_to_file lists them.
//
// Two pinned threads monopolise two carriers, so the scheduler gets four
// (jdk.virtualThreadScheduler.parallelism, set here unless the command line
// already sets it) to keep the other virtual threads runnable on a 2-core box.
//
// Prints READY once every virtual thread is in its final state, then runs
// until killed.
public class VirtualThreads {
    static final ReentrantLock LOCK = new ReentrantLock();
    static final CountDownLatch LOCK_HELD = new CountDownLatch(1);

    static final class PinMonitor {
    }

    static final class SlowInit1 {
        static {
            sleepForever();
        }

        static void touch() {
        }
    }

    static final class SlowInit2 {
        static {
            sleepForever();
        }

        static void touch() {
        }
    }

    static void sleepForever() {
        while (true) {
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                // Keep sleeping: the scenario must stay put until killed.
            }
        }
    }

    static void holdLock() {
        LOCK.lock();
        LOCK_HELD.countDown();
        sleepForever();
    }

    static void waitForLock() {
        LOCK.lock();
        throw new IllegalStateException("a waiter acquired the lock held forever by vt-lock-holder");
    }

    static void nap() {
        sleepForever();
    }

    static void pinned(int which) {
        PinMonitor monitor = new PinMonitor();
        synchronized (monitor) {
            if (which == 1) {
                SlowInit1.touch();
            } else {
                SlowInit2.touch();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (System.getProperty("jdk.virtualThreadScheduler.parallelism") == null) {
            System.setProperty("jdk.virtualThreadScheduler.parallelism", "4");
        }
        int waiters = args.length > 0 ? Integer.parseInt(args[0]) : 100;
        int sleepers = args.length > 1 ? Integer.parseInt(args[1]) : 200;

        Thread holder = Thread.ofVirtual().name("vt-lock-holder").start(VirtualThreads::holdLock);
        LOCK_HELD.await();

        List<Thread> parkedOnLock = new ArrayList<>();
        for (int i = 1; i <= waiters; i++) {
            parkedOnLock.add(Thread.ofVirtual().name("vt-lock-waiter-" + i).start(VirtualThreads::waitForLock));
        }
        List<Thread> sleeping = new ArrayList<>();
        sleeping.add(holder);
        for (int i = 1; i <= sleepers; i++) {
            sleeping.add(Thread.ofVirtual().name("vt-sleeper-" + i).start(VirtualThreads::nap));
        }
        // Started last so they cannot starve the others of carriers while
        // those are still getting into place.
        for (int i = 1; i <= 2; i++) {
            final int which = i;
            sleeping.add(Thread.ofVirtual().name("vt-pinned-" + i).start(() -> pinned(which)));
        }

        for (Thread t : parkedOnLock) {
            while (t.getState() != Thread.State.WAITING || LockSupport.getBlocker(t) == null) {
                Thread.sleep(10);
            }
        }
        for (Thread t : sleeping) {
            while (t.getState() != Thread.State.TIMED_WAITING) {
                Thread.sleep(10);
            }
        }
        System.out.println("READY");
        System.out.flush();
        sleepForever();
    }
}
