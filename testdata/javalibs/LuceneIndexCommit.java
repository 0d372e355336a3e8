// testjvm:jars=lucene-core
// Workload: Apache Lucene, concurrent indexers committing one IndexWriter.
//
// One IndexWriter (StandardAnalyzer, default ConcurrentMergeScheduler and
// TieredMergePolicy) on an FSDirectory (MMapDirectory) "lucene-index" in
// the JVM's working directory (a per-test temp dir). N threads
// "indexer-1".."indexer-N" (arg1, default 12) loop on updateDocument of a
// small document whose id is drawn from a bounded space (arg3, default
// 20000 ids, so the live index stays a few MB: merges drop the replaced
// documents), and every M documents (arg2, default 50) each indexer calls
// writer.commit(). IndexWriter.commitInternal runs the whole commit (flush
// every pending segment, write and fsync the new segments_N) inside
// synchronized (commitLock), so at any instant one indexer is committing
// (RUNNABLE, writing or in FileChannel.force / fsync, or flushing its
// segments) and most others are BLOCKED (on object monitor) waiting to lock
// commitLock (a plain java.lang.Object) in IndexWriter.commitInternal: that
// lock is the resource. The rest are adding documents (RUNNABLE).
//
// Library threads:
//  - "Lucene Merge Thread #K": ConcurrentMergeScheduler starts one per
//    running merge and lets it end when its merge is done (it has no idle
//    merge threads); while one exists it is merging segments (RUNNABLE), or,
//    rarely, paused by the merge rate limiter.
//  - "nrt-reopen": a ControlledRealTimeReopenThread that refreshes a
//    SearcherManager on the writer (near-real-time reader) at most once a
//    second: between refreshes it is idle by design, TIMED_WAITING (parking)
//    in ConditionObject.awaitNanos <- ControlledRealTimeReopenThread.run.
//    Nobody waits for a generation, so its refresh is the stale-time one.
//
// Prints READY once every indexer has committed, then
// "DOCS <added> COMMITS <commits>" every second; runs until killed.
import java.nio.file.Paths;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.ControlledRealTimeReopenThread;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;

public class LuceneIndexCommit {
    static final AtomicLong DOCS = new AtomicLong();
    static final AtomicLong COMMITS = new AtomicLong();
    static final String[] WORDS = {
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
        "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
    };

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 12;
        int every = args.length > 1 ? Integer.parseInt(args[1]) : 50;
        int ids = args.length > 2 ? Integer.parseInt(args[2]) : 20000;

        Directory dir = FSDirectory.open(Paths.get("lucene-index"));
        IndexWriter writer = new IndexWriter(dir, new IndexWriterConfig(new StandardAnalyzer()));
        SearcherManager searchers = new SearcherManager(writer, null);
        ControlledRealTimeReopenThread<IndexSearcher> reopen =
                new ControlledRealTimeReopenThread<>(writer, searchers, 1.0, 0.1);
        reopen.setName("nrt-reopen");
        reopen.setDaemon(true);
        reopen.start();

        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            final int id = i;
            Thread t = new Thread(() -> index(writer, id, every, ids, warm), "indexer-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("DOCS " + DOCS.get() + " COMMITS " + COMMITS.get());
        }
    }

    static void index(IndexWriter writer, int id, int every, int ids, CountDownLatch warm) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        StringBuilder body = new StringBuilder();
        try {
            for (long k = 1; ; k++) {
                String key = Integer.toString(rnd.nextInt(ids));
                body.setLength(0);
                for (int w = 0; w < 12; w++) {
                    body.append(WORDS[rnd.nextInt(WORDS.length)]).append(' ');
                }
                body.append("indexer ").append(id).append(" doc ").append(k);
                Document doc = new Document();
                doc.add(new StringField("id", key, Field.Store.YES));
                doc.add(new TextField("body", body.toString(), Field.Store.YES));
                writer.updateDocument(new Term("id", key), doc);
                DOCS.incrementAndGet();
                if (k % every == 0) {
                    writer.commit();
                    COMMITS.incrementAndGet();
                    if (k == every) {
                        warm.countDown();
                    }
                }
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }
}
