// Scenario: row-lock waits, the way MVCC databases make a writer wait for
// the transaction that holds the row it wants.
//
// N workers "worker-1".."worker-N" (arg1, default 8) run transactions on
// a few rows (arg2, default 2). A transaction takes a row: if another
// transaction holds it, the worker waits, in Object.wait() inside
// RowLocks$Txn.awaitEnd(), on that holder's RowLocks$Txn object until it
// ends. The holder works for arg3 ms (default 30) inside
// RowLocks$Txn.execute() while holding the row, then ends and calls
// notifyAll() on itself. No thread is BLOCKED entering a monitor for long.
//
// Prints READY once workers wait, then runs until killed.
import java.util.concurrent.atomic.AtomicReferenceArray;

public class RowLocks {
    static final class Txn {
        private boolean ended;

        // The waiters' wait site: the holder's transaction object.
        synchronized void awaitEnd() throws InterruptedException {
            while (!ended) {
                wait();
            }
        }

        synchronized void end() {
            ended = true;
            notifyAll();
        }

        void execute(AtomicReferenceArray<Txn> rows, int row, long workMillis) throws InterruptedException {
            while (!rows.compareAndSet(row, null, this)) {
                Txn holder = rows.get(row);
                if (holder != null) {
                    holder.awaitEnd();
                }
            }
            Thread.sleep(workMillis); // the transaction's work, holding the row
            rows.set(row, null);
            end();
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        int nrows = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        long work = args.length > 2 ? Long.parseLong(args[2]) : 30;
        AtomicReferenceArray<Txn> rows = new AtomicReferenceArray<>(nrows);
        Thread[] workers = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int row = i % nrows;
            workers[i] = new Thread(() -> {
                try {
                    while (true) {
                        new Txn().execute(rows, row, work);
                    }
                } catch (InterruptedException e) {
                    // exit
                }
            }, "worker-" + (i + 1));
            workers[i].setDaemon(true);
            workers[i].start();
        }
        while (true) {
            int waiting = 0;
            for (Thread w : workers) {
                if (w.getState() == Thread.State.WAITING) {
                    waiting++;
                }
            }
            if (waiting >= n / 2) {
                break;
            }
            Thread.sleep(20);
        }
        System.out.println("READY");
        System.out.flush();
        while (true) {
            Thread.sleep(60_000);
        }
    }
}
