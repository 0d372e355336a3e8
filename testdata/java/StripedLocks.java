import java.util.concurrent.CountDownLatch;

// Scenario: a striped lock, many instances of one lock class, one waiter
// each.
//
// N instances (arg1, default 64) of StripedLocks$Stripe. For each instance
// i, "stripe-owner-i" locks it and sleeps forever inside
// StripedLocks.hold() (TIMED_WAITING, "- locked <...> (a
// StripedLocks$Stripe)"), and "stripe-waiter-i" is BLOCKED trying to lock
// the same instance at one wait site for all: StripedLocks.enter(). So a
// dump shows N distinct addresses of one class, each with exactly one
// waiter and its own owner: a striped design, no hot lock.
//
// Prints READY once every waiter is BLOCKED, then runs until killed.
public class StripedLocks {
    static final class Stripe {
    }

    static void hold(Stripe s, CountDownLatch held) {
        synchronized (s) {
            held.countDown();
            while (true) {
                try {
                    Thread.sleep(60_000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    // The one wait site of every waiter.
    static void enter(Stripe s) {
        synchronized (s) {
            s.hashCode();
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 64;
        Stripe[] stripes = new Stripe[n];
        CountDownLatch held = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            Stripe s = new Stripe();
            stripes[i] = s;
            Thread t = new Thread(() -> hold(s, held), "stripe-owner-" + i);
            t.setDaemon(true);
            t.start();
        }
        held.await();
        Thread[] waiters = new Thread[n];
        for (int i = 0; i < n; i++) {
            Stripe s = stripes[i];
            waiters[i] = new Thread(() -> enter(s), "stripe-waiter-" + i);
            waiters[i].setDaemon(true);
            waiters[i].start();
        }
        for (Thread w : waiters) {
            while (w.getState() != Thread.State.BLOCKED) {
                Thread.sleep(10);
            }
        }
        System.out.println("READY");
        System.out.flush();
        while (true) {
            Thread.sleep(60_000);
        }
    }
}
