// testjvm:jars=h2
// Workload: H2 (embedded, MVStore) row-lock waits.
//
// N threads "worker-1".."worker-N" (arg1, default 16) each open their own
// connection to one in-memory H2 database and loop on a transaction that
// updates one of R rows (arg2, default 2; worker i uses row i mod R), holds
// the row lock ~5 ms (Thread.sleep before commit) and commits. A worker whose
// row is held by another transaction waits inside H2 until that transaction
// ends (H2 waits on the holding Transaction object), so at any instant about
// N-R workers wait for a row.
//
// Prints READY once every worker has committed once, then "COMMITS <total>"
// every second, and runs until killed.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

public class H2RowLocks {
    // A lock timeout far above the workload's waits: a timeout would end a
    // wait the test means to observe.
    static final String URL = "jdbc:h2:mem:rowlocks;DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=600000";
    static final AtomicLong COMMITS = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        int rows = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        try (Connection c = DriverManager.getConnection(URL);
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT)");
            for (int r = 0; r < rows; r++) {
                s.execute("INSERT INTO accounts VALUES (" + r + ", 0)");
            }
        }
        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            final int row = i % rows;
            Thread t = new Thread(() -> work(row, warm), "worker-" + i);
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

    static void work(int row, CountDownLatch warm) {
        try (Connection c = DriverManager.getConnection(URL);
             PreparedStatement upd = c.prepareStatement("UPDATE accounts SET balance = balance + 1 WHERE id = ?")) {
            c.setAutoCommit(false);
            boolean counted = false;
            while (true) {
                upd.setInt(1, row);
                upd.executeUpdate();
                Thread.sleep(5);
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
