import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

// Scenario: thread names that try to break dump parsers and report renderers.
// The file is UTF-8 (the harness compiles with -encoding UTF-8).
//
// Gate contention: GATE_HOLDER (the HTML-injection name) holds the monitor of
// a HostileNames$Gate in HostileNames.holdGate() and sleeps forever; every
// name in GATE_WAITERS is BLOCKED in HostileNames.enterGate() with
// "- waiting to lock <...> (a HostileNames$Gate)".
//
// Deadlock: DEADLOCK_LEFT and DEADLOCK_RIGHT deadlock on a HostileNames$Left
// and a HostileNames$Right (certain, via a latch) in HostileNames.leftThenRight()
// / HostileNames.rightThenLeft(), so HotSpot's "Found one Java-level deadlock"
// section prints these names as waiters and owners ("which is held by "...").
//
// Idle: every name in SLEEPERS sleeps in HostileNames.nap(), holding nothing.
//
// Prints READY once all of the above are in place, then runs until killed.
public class HostileNames {
    static final String GATE_HOLDER = "</script><script>alert(1)</script>";
    static final String[] GATE_WAITERS = {
        "quote\"inside",
        "comma, colon: semi;",
        "[brackets] {braces} (parens) <angles>",
        "Ünïcødé-线程",
        "tab\there",
    };
    static final String DEADLOCK_LEFT = "\"left\" 'owner', #1 [0x0]";
    static final String DEADLOCK_RIGHT = "right: Ünï \"线程\"\t- locked <0x0>";
    static final String[] SLEEPERS = {
        "fake\" #999 daemon prio=5 os_prio=0 tid=0x0 nid=0x0 waiting on condition",
        "back\\slash & ampersand",
        "   leading and trailing spaces   ",
        "emoji-\uD83D\uDE80-rocket",
        "",
    };

    static final class Gate {
    }

    static final class Left {
    }

    static final class Right {
    }

    static final Gate GATE = new Gate();
    static final Left LEFT = new Left();
    static final Right RIGHT = new Right();
    static final CountDownLatch GATE_HELD = new CountDownLatch(1);
    static final CountDownLatch BOTH_HOLD_FIRST = new CountDownLatch(2);

    static void sleepForever() {
        while (true) {
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                // Stay put until killed.
            }
        }
    }

    static void holdGate() {
        synchronized (GATE) {
            GATE_HELD.countDown();
            sleepForever();
        }
    }

    static void enterGate() {
        synchronized (GATE) {
            throw new IllegalStateException("entered the gate held forever by " + GATE_HOLDER);
        }
    }

    static void leftThenRight() {
        synchronized (LEFT) {
            awaitPartner();
            synchronized (RIGHT) {
                throw new IllegalStateException("no deadlock");
            }
        }
    }

    static void rightThenLeft() {
        synchronized (RIGHT) {
            awaitPartner();
            synchronized (LEFT) {
                throw new IllegalStateException("no deadlock");
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

    static void nap() {
        sleepForever();
    }

    public static void main(String[] args) throws Exception {
        Thread holder = new Thread(HostileNames::holdGate, GATE_HOLDER);
        holder.start();
        GATE_HELD.await();

        List<Thread> blocked = new ArrayList<>();
        for (String name : GATE_WAITERS) {
            blocked.add(start(HostileNames::enterGate, name));
        }
        blocked.add(start(HostileNames::leftThenRight, DEADLOCK_LEFT));
        blocked.add(start(HostileNames::rightThenLeft, DEADLOCK_RIGHT));
        List<Thread> sleeping = new ArrayList<>();
        sleeping.add(holder);
        for (String name : SLEEPERS) {
            sleeping.add(start(HostileNames::nap, name));
        }

        for (Thread t : blocked) {
            while (t.getState() != Thread.State.BLOCKED) {
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

    private static Thread start(Runnable body, String name) {
        Thread t = new Thread(body, name);
        t.start();
        return t;
    }
}
