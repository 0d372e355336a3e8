// testjvm:jars=rocksdbjni
// Workload: RocksDB (through its JNI library, rocksdbjni) under synced writes.
//
// N threads "writer-1".."writer-N" (arg1, default 16) put small records
// into one database in the JVM's working directory (a per-test temp dir),
// each write synced to the log (WriteOptions.setSync). RocksDB batches
// concurrent writes into write groups: one leader writes and syncs the
// group's log records while the followers wait, in the library's native
// code, on their own condition variables (WriteThread::AwaitState) until the
// leader finishes. The Java dumps show every writer RUNNABLE in the native
// method put; only the native stacks show the wait.
//
// Prints READY once every writer has written a few records, then
// "PUTS <total>" every second, and runs until killed.
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.WriteOptions;

public class RocksdbSyncWrites {
    static final AtomicLong PUTS = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        RocksDB.loadLibrary();
        Options opts = new Options().setCreateIfMissing(true);
        RocksDB db = RocksDB.open(opts, System.getProperty("user.dir") + "/syncwritesdb");
        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            final int id = i;
            Thread t = new Thread(() -> write(db, id, warm), "writer-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("PUTS " + PUTS.get());
        }
    }

    static void write(RocksDB db, int id, CountDownLatch warm) {
        try (WriteOptions sync = new WriteOptions().setSync(true)) {
            for (long k = 0; ; k++) {
                byte[] key = ("writer-" + id + "-" + k).getBytes(StandardCharsets.UTF_8);
                byte[] value = ("a record of writer " + id + ", number " + k).getBytes(StandardCharsets.UTF_8);
                db.put(sync, key, value);
                PUTS.incrementAndGet();
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
