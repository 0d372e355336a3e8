// testjvm:jars=derby,derbyshared
// Workload: Apache Derby (embedded) group commit under concurrent writers.
//
// N threads "writer-1".."writer-N" (arg1, default 16) each open their own
// connection to one embedded database in the JVM's working directory (a
// per-test temp dir) and loop on small autocommit INSERTs. Each commit must
// reach the disk: Derby's LogToFile.flush lets one thread sync the log while
// the other committers Object.wait on the log factory until it notifyAlls,
// so most writers sit in that wait at any instant.
//
// Prints READY once every writer has committed a few rows, then
// "ROWS <total>" every second, and runs until killed.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

public class DerbyGroupCommit {
    static final String URL = "jdbc:derby:groupcommitdb";
    static final AtomicLong ROWS = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        // derby.log next to the database, not wherever user.dir points.
        System.setProperty("derby.system.home", System.getProperty("user.dir"));
        try (Connection c = DriverManager.getConnection(URL + ";create=true");
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE events (id INT GENERATED ALWAYS AS IDENTITY, writer INT, payload VARCHAR(64))");
        }
        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            final int id = i;
            Thread t = new Thread(() -> write(id, warm), "writer-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("ROWS " + ROWS.get());
        }
    }

    static void write(int id, CountDownLatch warm) {
        try (Connection c = DriverManager.getConnection(URL);
             PreparedStatement ins = c.prepareStatement("INSERT INTO events (writer, payload) VALUES (?, ?)")) {
            c.setAutoCommit(true);
            for (long k = 0; ; k++) {
                ins.setInt(1, id);
                ins.setString(2, "event " + k + " from writer " + id);
                ins.executeUpdate();
                ROWS.incrementAndGet();
                if (k == 5) {
                    warm.countDown();
                }
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }
}
