import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

// Scenario: thread names that carry thread dump syntax, so that a parser
// reading Thread.print line by line sees threads, locks and a deadlock that
// do not exist, and loses real threads whose names span several lines.
//
// Gate contention: GATE_HOLDER (a name with a newline) holds the monitor of a
// ForgedNames$Gate in ForgedNames.holdGate() and sleeps forever; the ten
// names in WAITERS (four of them with newlines, one with dump lines in it)
// are BLOCKED in ForgedNames.enterGate() with
// "- waiting to lock <...> (a ForgedNames$Gate)".
//
// Forgers: FORGER_CLOSED and FORGER_OPEN sleep in ForgedNames.nap(). Each
// name holds two complete forged thread entries (nids 0x7ffffff0.. that no
// Linux task can have, pid_max is at most 2^22) that deadlock on each other
// through "waiting to lock"/"locked" lines on ForgedNames$X / ForgedNames$Y,
// and FORGER_CLOSED also a forged "Found one Java-level deadlock:" report.
// FORGER_CLOSED's name ends with a line that does not start with a quote, so
// the end of its name is visible in the dump text; FORGER_OPEN's ends with a
// line that starts with a quote, so only the target's threads can tell its
// forged entries from real ones. There is no real deadlock.
//
// Prints READY once all of the above are in place, then runs until killed.
public class ForgedNames {
    static final String GATE_HOLDER = "gate-holder\nsecond line of the holder";
    static final String[] WAITERS = {
        "waiter-0",
        "waiter-1\nline two of waiter-1",
        "waiter-2",
        "waiter-3\n\tat Fake.frame(Fake.java:1)\n\t- waiting to lock <0x0000000000000009> (a Fake)",
        "waiter-4",
        "waiter-5\n   java.lang.Thread.State: RUNNABLE",
        "waiter-6",
        "waiter-7\n\"quoted second line",
        "waiter-8",
        "waiter-9",
    };

    static String entry(String name, int nid, String waits, String holds) {
        return "\"" + name + "\" #9" + nid % 10 + " daemon prio=5 os_prio=0 cpu=0.00ms elapsed=1.00s tid=0x00007f0000000001 nid=0x"
                + Integer.toHexString(nid) + " waiting for monitor entry  [0x00007f0000000000]\n"
                + "   java.lang.Thread.State: BLOCKED (on object monitor)\n"
                + "\tat Evil.run(Evil.java:1)\n"
                + "\t- waiting to lock <" + waits + "> (a ForgedNames$X)\n"
                + "\t- locked <" + holds + "> (a ForgedNames$Y)\n";
    }

    static final String A = "0x00000000deadbee0";
    static final String B = "0x00000000deadbee8";
    static final String FORGER_CLOSED = "forger-closed\n\n"
            + entry("evil1", 0x7ffffff0, A, B) + "\n"
            + entry("evil2", 0x7ffffff1, B, A) + "\n"
            + "Found one Java-level deadlock:\n"
            + "=============================\n"
            + "\"evil1\":\n"
            + "  waiting to lock monitor 0x00007f0000000010 (object " + A + ", a ForgedNames$X),\n"
            + "  which is held by \"evil2\"\n"
            + "\"evil2\":\n"
            + "  waiting to lock monitor 0x00007f0000000018 (object " + B + ", a ForgedNames$Y),\n"
            + "  which is held by \"evil1\"\n"
            + "\n"
            + "Java stack information for the threads listed above:\n"
            + "===================================================\n"
            + "\n"
            + "Found 1 deadlock.\n"
            + "\n"
            + "end of forger-closed";
    static final String C = "0x00000000deadbef0";
    static final String D = "0x00000000deadbef8";
    static final String FORGER_OPEN = "forger-open\n\n"
            + entry("evil3", 0x7ffffff2, C, D) + "\n"
            + entry("evil4", 0x7ffffff3, D, C) + "\n"
            + "\"end of forger-open";

    static final class Gate {
    }

    static final Gate GATE = new Gate();
    static final CountDownLatch GATE_HELD = new CountDownLatch(1);

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
            throw new IllegalStateException("entered the gate held forever");
        }
    }

    static void nap() {
        sleepForever();
    }

    public static void main(String[] args) throws Exception {
        Thread holder = start(ForgedNames::holdGate, GATE_HOLDER);
        GATE_HELD.await();
        List<Thread> blocked = new ArrayList<>();
        for (String name : WAITERS) {
            blocked.add(start(ForgedNames::enterGate, name));
        }
        List<Thread> sleeping = new ArrayList<>();
        sleeping.add(holder);
        sleeping.add(start(ForgedNames::nap, FORGER_CLOSED));
        sleeping.add(start(ForgedNames::nap, FORGER_OPEN));
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
