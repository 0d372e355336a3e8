// Scenario: a group-commit convoy, the way databases make commits durable.
//
// N writer threads "writer-1".."writer-N" (arg1, default 12) each append a
// record to one GroupCommit$Log and then wait, in Object.wait() inside
// GroupCommit$Log.commit(), until the record is on disk. One thread,
// "log-flusher", takes the pending batch, "syncs" it (sleeps arg2 ms,
// default 20, outside the monitor, as an fsync would) inside
// GroupCommit$Log.flushLoop(), then marks it flushed and calls notifyAll().
// The notified writers are BLOCKED re-acquiring the monitor for a moment.
//
// No writer is BLOCKED entering the monitor for long, so a profiler that
// only counts "waiting to lock" sees nothing; the writers wait behind the
// flusher nonetheless: this is contention, not idleness.
//
// Prints "COMMITS <n>" every second and READY once writers wait, then runs
// until killed.
public class GroupCommit {
    static final class Log {
        private long appended, flushed;
        private final long syncMillis;

        Log(long syncMillis) {
            this.syncMillis = syncMillis;
        }

        // The writers' wait site.
        void commit() throws InterruptedException {
            synchronized (this) {
                long lsn = ++appended;
                notifyAll(); // wake the flusher
                while (flushed < lsn) {
                    wait();
                }
            }
        }

        void flushLoop() throws InterruptedException {
            while (true) {
                long upTo;
                synchronized (this) {
                    while (appended == flushed) {
                        wait();
                    }
                    upTo = appended;
                }
                Thread.sleep(syncMillis); // the fsync, outside the monitor
                synchronized (this) {
                    flushed = upTo;
                    notifyAll();
                }
            }
        }
    }

    static volatile long commits;

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 12;
        long sync = args.length > 1 ? Long.parseLong(args[1]) : 20;
        Log log = new Log(sync);
        Thread flusher = new Thread(() -> {
            try {
                log.flushLoop();
            } catch (InterruptedException e) {
                // exit
            }
        }, "log-flusher");
        flusher.setDaemon(true);
        flusher.start();
        Thread[] writers = new Thread[n];
        for (int i = 0; i < n; i++) {
            writers[i] = new Thread(() -> {
                try {
                    while (true) {
                        log.commit();
                        commits++;
                    }
                } catch (InterruptedException e) {
                    // exit
                }
            }, "writer-" + (i + 1));
            writers[i].setDaemon(true);
            writers[i].start();
        }
        boolean ready = false;
        while (true) {
            int waiting = 0;
            for (Thread w : writers) {
                if (w.getState() == Thread.State.WAITING || w.getState() == Thread.State.BLOCKED) {
                    waiting++;
                }
            }
            if (!ready && waiting >= n / 2) {
                System.out.println("READY");
                ready = true;
            }
            System.out.println("COMMITS " + commits);
            System.out.flush();
            Thread.sleep(ready ? 1000 : 20);
        }
    }
}
