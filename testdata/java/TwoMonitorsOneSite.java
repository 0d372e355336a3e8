import java.util.concurrent.CountDownLatch;

// Scenario: two monitors of one class, waited for at one site.
//
// Two instances of TwoMonitorsOneSite$Account. "owner-a" locks the first and
// "owner-b" the second, each sleeping forever inside
// TwoMonitorsOneSite.hold(). N threads "waiter-a-1".."waiter-a-N" (arg1,
// default 5) are BLOCKED on the first and M threads "waiter-b-1".."waiter-b-M"
// (arg2, default 3) on the second, all at the same wait site,
// TwoMonitorsOneSite.enter(). A lock identified by class and wait site would
// merge them into one lock with N+M waiters; they are two locks.
//
// Prints READY once every waiter is BLOCKED, then runs until killed.
public class TwoMonitorsOneSite {
    static final class Account {
    }

    static void hold(Account a, CountDownLatch held) {
        synchronized (a) {
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
    static void enter(Account a) {
        synchronized (a) {
            a.hashCode();
        }
    }

    static Thread[] waiters(Account a, String prefix, int n) {
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            ts[i] = new Thread(() -> enter(a), prefix + (i + 1));
            ts[i].setDaemon(true);
            ts[i].start();
        }
        return ts;
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int m = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        Account first = new Account();
        Account second = new Account();
        CountDownLatch held = new CountDownLatch(2);
        Thread oa = new Thread(() -> hold(first, held), "owner-a");
        Thread ob = new Thread(() -> hold(second, held), "owner-b");
        oa.setDaemon(true);
        ob.setDaemon(true);
        oa.start();
        ob.start();
        held.await();
        Thread[] wa = waiters(first, "waiter-a-", n);
        Thread[] wb = waiters(second, "waiter-b-", m);
        for (Thread[] ts : new Thread[][] {wa, wb}) {
            for (Thread w : ts) {
                while (w.getState() != Thread.State.BLOCKED) {
                    Thread.sleep(10);
                }
            }
        }
        System.out.println("READY");
        System.out.flush();
        while (true) {
            Thread.sleep(60_000);
        }
    }
}
