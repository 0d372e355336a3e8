import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

// Scenario: a large thread count, for parser/analysis throughput.
//
// Starts N platform threads (arg1, default 4000) with 256 KiB stacks. Thread
// k (1-based) is named "conn-<k>-<role>" and parks in one of three stack
// shapes chosen by k % 3:
//   k % 3 == 1  "conn-<k>-reader":    WAITING (parking) on its own
//               ManyThreads$Inbox in
//               LockSupport.park <- ManyThreads.awaitData <- ManyThreads.readLoop
//   k % 3 == 2  "conn-<k>-writer":    TIMED_WAITING (sleeping) in
//               Thread.sleep <- ManyThreads.flushLater <- ManyThreads.writeLoop
//   k % 3 == 0  "conn-<k>-heartbeat": WAITING (on object monitor) in
//               Object.wait on a ManyThreads$Heartbeat <- ManyThreads.heartbeatLoop
// None of them hold or wait on anything shared (every reader parks on, and
// every heartbeat waits on, an object of its own), so a Thread.print is
// large (a few MB) but uninteresting lock-wise.
//
// An optional second argument (default 0) adds that many frames of
// ManyThreads.descend under each thread's loop, so a dump's size per thread
// can match a real server's (30 frames is typical of one behind a framework).
//
// Prints READY once every thread has started and reached its loop, then runs
// until killed.
public class ManyThreads {
    static final long STACK_SIZE = 256 * 1024;

    static final class Heartbeat {
    }

    // Per-reader park blocker. A shared blocker would make every reader look
    // like a waiter on one contended object.
    static final class Inbox {
    }

    static CountDownLatch started;

    static void readLoop() {
        Inbox inbox = new Inbox();
        started.countDown();
        while (true) {
            awaitData(inbox);
        }
    }

    static void awaitData(Inbox inbox) {
        LockSupport.park(inbox);
    }

    static void writeLoop() {
        started.countDown();
        while (true) {
            flushLater();
        }
    }

    static void flushLater() {
        try {
            Thread.sleep(3_600_000L);
        } catch (InterruptedException e) {
            // Spurious interrupts just restart the sleep.
        }
    }

    static void heartbeatLoop() {
        Heartbeat beat = new Heartbeat();
        started.countDown();
        synchronized (beat) {
            while (true) {
                try {
                    beat.wait();
                } catch (InterruptedException e) {
                    // Keep waiting.
                }
            }
        }
    }

    static void idleForever() throws InterruptedException {
        while (true) {
            Thread.sleep(60_000);
        }
    }

    // descend calls itself depth times, then runs body: depth more frames.
    static void descend(int depth, Runnable body) {
        if (depth <= 0) {
            body.run();
            return;
        }
        descend(depth - 1, body);
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 4000;
        int depth = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        started = new CountDownLatch(n);
        for (int k = 1; k <= n; k++) {
            Runnable body;
            String role;
            switch (k % 3) {
                case 1:
                    body = ManyThreads::readLoop;
                    role = "reader";
                    break;
                case 2:
                    body = ManyThreads::writeLoop;
                    role = "writer";
                    break;
                default:
                    body = ManyThreads::heartbeatLoop;
                    role = "heartbeat";
                    break;
            }
            // Small explicit stacks keep 4000 threads cheap even without -Xss.
            Runnable loop = body;
            Runnable deep = depth > 0 ? () -> descend(depth, loop) : loop;
            Thread t = new Thread(null, deep, "conn-" + k + "-" + role, STACK_SIZE);
            t.start();
        }
        started.await();
        System.out.println("READY");
        System.out.flush();
        idleForever();
    }
}
