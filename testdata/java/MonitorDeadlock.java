import java.util.concurrent.CountDownLatch;

// Scenario: a certain Java-level deadlock between two monitors.
//
// "deadlock-A" runs MonitorDeadlock.lockAThenB(): it locks a
// MonitorDeadlock$LockA, then blocks forever trying to lock a
// MonitorDeadlock$LockB. "deadlock-B" runs MonitorDeadlock.lockBThenA() and
// does the opposite. A latch makes sure both hold their first monitor before
// either asks for the second, so the deadlock is certain, not probable.
//
// "bystander" sits in Object.wait() on a MonitorDeadlock$Idle inside
// MonitorDeadlock.idle(); it is part of no cycle and holds nothing while
// waiting (wait() releases the monitor).
//
// Prints READY once both deadlocked threads are BLOCKED and the bystander is
// WAITING, then runs until killed.
public class MonitorDeadlock {
    // Distinct classes so dumps say "(a MonitorDeadlock$LockA)" etc.
    static final class LockA {
    }

    static final class LockB {
    }

    static final class Idle {
    }

    static final LockA LOCK_A = new LockA();
    static final LockB LOCK_B = new LockB();
    static final Idle IDLE = new Idle();
    static final CountDownLatch BOTH_HOLD_FIRST = new CountDownLatch(2);

    static void lockAThenB() {
        synchronized (LOCK_A) {
            awaitPartner();
            synchronized (LOCK_B) {
                throw new IllegalStateException("deadlock-A acquired LockB: no deadlock");
            }
        }
    }

    static void lockBThenA() {
        synchronized (LOCK_B) {
            awaitPartner();
            synchronized (LOCK_A) {
                throw new IllegalStateException("deadlock-B acquired LockA: no deadlock");
            }
        }
    }

    private static void awaitPartner() {
        BOTH_HOLD_FIRST.countDown();
        try {
            BOTH_HOLD_FIRST.await();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    static void idle() {
        synchronized (IDLE) {
            while (true) {
                try {
                    IDLE.wait();
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    static void idleForever() throws InterruptedException {
        while (true) {
            Thread.sleep(60_000);
        }
    }

    public static void main(String[] args) throws Exception {
        Thread a = new Thread(MonitorDeadlock::lockAThenB, "deadlock-A");
        Thread b = new Thread(MonitorDeadlock::lockBThenA, "deadlock-B");
        Thread bystander = new Thread(MonitorDeadlock::idle, "bystander");
        a.start();
        b.start();
        bystander.start();
        while (a.getState() != Thread.State.BLOCKED
                || b.getState() != Thread.State.BLOCKED
                || bystander.getState() != Thread.State.WAITING) {
            Thread.sleep(10);
        }
        System.out.println("READY");
        System.out.flush();
        idleForever();
    }
}
