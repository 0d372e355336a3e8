// testjvm:jars=hsqldb
// Workload: HSQLDB (in-memory) table-lock convoy in LOCKS transaction mode.
//
// One in-memory HSQLDB database in LOCKS (two-phase locking, table-level
// locks) transaction control. N threads "updater-1".."updater-N" (arg1,
// default 16) each open their own connection (autocommit off) and loop:
// UPDATE one row of the one shared table "accounts" (R rows, arg2, default
// 4), hold the transaction ~3 ms (Thread.sleep before commit), commit. In
// LOCKS mode the UPDATE takes a write lock on the whole table until commit,
// so at any instant one updater holds it (asleep in Thread.sleep, or
// committing) and the other N-1 wait for it inside HSQLDB: each waiting
// session blocks in Session.executeCompiledStatement on its own latch
// (org.hsqldb.lib.CountUpDownLatch.await, an AbstractQueuedSynchronizer)
// until the holder's commit releases the table and counts the latches of
// the sessions it unblocks down. Now and then a dump shows all N parked
// there: the holder has committed and the session it released has not run
// yet (on a busy machine that takes a moment); they all still wait for the
// table.
//
// The in-memory database runs no thread of its own here (the dumps show
// none: no log writer, no timer), so every thread but main is an updater;
// this workload is all contention, its idle side is the JVM's own threads.
//
// Prints READY once every updater has committed once, then "COMMITS <total>"
// every second, and runs until killed.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

public class HsqldbTableLocks {
    static final String URL = "jdbc:hsqldb:mem:tablelocks";
    static final AtomicLong COMMITS = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        int rows = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        try (Connection c = DriverManager.getConnection(URL, "SA", "");
             Statement s = c.createStatement()) {
            // Two-phase locking with table locks (HSQLDB's default is MVCC).
            // HSQLDB has no lock timeout: a statement waits for its locks as
            // long as it takes.
            s.execute("SET DATABASE TRANSACTION CONTROL LOCKS");
            s.execute("CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT)");
            for (int r = 0; r < rows; r++) {
                s.execute("INSERT INTO accounts VALUES (" + r + ", 0)");
            }
            c.commit();
        }
        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            final int row = i % rows;
            Thread t = new Thread(() -> update(row, warm), "updater-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("COMMITS " + COMMITS.get());
        }
    }

    static void update(int row, CountDownLatch warm) {
        try (Connection c = DriverManager.getConnection(URL, "SA", "");
             PreparedStatement upd = c.prepareStatement("UPDATE accounts SET balance = balance + 1 WHERE id = ?")) {
            c.setAutoCommit(false);
            boolean counted = false;
            while (true) {
                upd.setInt(1, row);
                upd.executeUpdate();
                // Hold the transaction (and the table lock) as a request
                // would while it works.
                Thread.sleep(3);
                c.commit();
                COMMITS.incrementAndGet();
                if (!counted) {
                    counted = true;
                    warm.countDown();
                }
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }
}
