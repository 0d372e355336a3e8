import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

// Scenario: a certain deadlock cycle of three ReentrantLocks.
//
// Thread "cycle-i" (i = 1, 2, 3) runs LockDeadlock.cycle(i): it locks
// LOCKS[i-1], waits at a barrier until all three hold their first lock, then
// calls LOCKS[i % 3].lock(), i.e. cycle-1 wants cycle-2's lock, cycle-2 wants
// cycle-3's and cycle-3 wants cycle-1's. Each thread is then WAITING (parking)
// in ReentrantLock.lock() with
// "- parking to wait for <...> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)"
// and owns one ReentrantLock$NonfairSync ("Locked ownable synchronizers" with
// Thread.print -l). HotSpot's deadlock detector reports the cycle as
// "waiting for ownable synchronizer ... which is held by "cycle-N"".
//
// Prints READY once all three threads are parked on a lock, then runs until
// killed.
public class LockDeadlock {
    static final ReentrantLock[] LOCKS = {new ReentrantLock(), new ReentrantLock(), new ReentrantLock()};
    static final CyclicBarrier ALL_HOLD_FIRST = new CyclicBarrier(3);

    static void cycle(int i) {
        ReentrantLock first = LOCKS[i - 1];
        ReentrantLock second = LOCKS[i % 3];
        first.lock();
        try {
            ALL_HOLD_FIRST.await();
        } catch (InterruptedException | BrokenBarrierException e) {
            throw new IllegalStateException(e);
        }
        second.lock();
        throw new IllegalStateException("cycle-" + i + " acquired its second lock: no deadlock");
    }

    // A named Runnable rather than a lambda so the frame below cycle() is the
    // stable "LockDeadlock$Cycle.run" instead of a javac-chosen lambda name.
    static final class Cycle implements Runnable {
        private final int i;

        Cycle(int i) {
            this.i = i;
        }

        @Override
        public void run() {
            cycle(i);
        }
    }

    static void idleForever() throws InterruptedException {
        while (true) {
            Thread.sleep(60_000);
        }
    }

    public static void main(String[] args) throws Exception {
        Thread[] threads = new Thread[3];
        for (int i = 1; i <= 3; i++) {
            threads[i - 1] = new Thread(new Cycle(i), "cycle-" + i);
            threads[i - 1].start();
        }
        // Parked on a lock (not on the barrier): the blocker is the lock's Sync.
        for (Thread t : threads) {
            while (true) {
                Object blocker = LockSupport.getBlocker(t);
                if (t.getState() == Thread.State.WAITING && blocker != null
                        && blocker.getClass().getName().startsWith("java.util.concurrent.locks.ReentrantLock$")) {
                    break;
                }
                Thread.sleep(10);
            }
        }
        System.out.println("READY");
        System.out.flush();
        idleForever();
    }
}
