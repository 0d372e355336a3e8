import java.util.concurrent.CountDownLatch;

// Scenario: threads stuck waiting for another thread's class initialization.
//
// "init-runner" calls ClassInitWait.useSlowClass(), which touches
// ClassInitWait$SlowInit; that class's static initializer
// (ClassInitWait$SlowInit.<clinit>) waits forever on a CountDownLatch that is
// never counted down, so the class never finishes initializing.
// "init-waiter-1" .. "init-waiter-N" (arg1, default 3) then call
// ClassInitWait.useSlowClass() too and wait for that initialization. Their
// headers say "in Object.wait()" while java.lang.Thread.State is RUNNABLE, and
// the frame ClassInitWait.useSlowClass carries
// "- waiting on the Class initialization monitor for ClassInitWait$SlowInit"
// (JDK 25; also printed by the JDK 17.0.15 used here, but not by older 17
// updates, so do not rely on it for JDK 17 in general).
//
// Prints READY once the runner is inside <clinit> and every waiter is about
// to touch the class, then runs until killed.
public class ClassInitWait {
    static final CountDownLatch NEVER = new CountDownLatch(1);
    static final CountDownLatch IN_CLINIT = new CountDownLatch(1);

    static final class SlowInit {
        static final long VALUE;

        static {
            IN_CLINIT.countDown();
            awaitForever();
            VALUE = 42;
        }
    }

    static void awaitForever() {
        while (true) {
            try {
                NEVER.await();
            } catch (InterruptedException e) {
                // Stay put until killed.
            }
        }
    }

    static long useSlowClass() {
        return SlowInit.VALUE;
    }

    static void idleForever() throws InterruptedException {
        while (true) {
            Thread.sleep(60_000);
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        Thread runner = new Thread(ClassInitWait::useSlowClass, "init-runner");
        runner.start();
        IN_CLINIT.await();

        Thread[] waiters = new Thread[n];
        for (int i = 0; i < n; i++) {
            waiters[i] = new Thread(ClassInitWait::useSlowClass, "init-waiter-" + (i + 1));
            waiters[i].start();
        }
        // A thread waiting for class initialization stays RUNNABLE as far as
        // Java can see, so READY only means "started"; tests must poll the
        // dump for the waiting frames.
        for (Thread t : waiters) {
            while (t.getState() == Thread.State.NEW) {
                Thread.sleep(10);
            }
        }
        System.out.println("READY");
        System.out.flush();
        idleForever();
    }
}
