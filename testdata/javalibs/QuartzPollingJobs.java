// testjvm:jars=quartz,slf4j-api,slf4j-nop
// Workload: Quartz Scheduler 2.5 (RAMJobStore, SimpleThreadPool of T
// workers, arg3, default 22) running two kinds of long-running jobs.
//
// P "poll" jobs (arg1, default 10) each start a remote job and poll it:
// the job waits on its own object (synchronized (this) { wait(25) }) between
// polls until the remote job is done (50-300 ms later), then starts the next
// one. Quartz makes a new job instance per run, so each worker waits on an
// object no other thread uses: a pause between polls, not contention.
//
// S "store" jobs (arg2, default 8) each loop: enter the shared result store's
// monitor (STORE) and hold it ~15 ms (Thread.sleep inside synchronized) to
// write a result. At any instant one holds it and the other S-1, about 7,
// are BLOCKED entering it: the contention the workload is about.
//
// Quartz's own threads: "<name>_QuartzSchedulerThread" waits on its signal
// lock for the next trigger time (or, with no worker free, in the pool's
// blockForAvailableThreads), and workers with no job wait in
// SimpleThreadPool$WorkerThread.run on their own lock for a job: idle.
//
// Prints READY once every job has run once, then "WRITES <n> POLLS <m>"
// every second, and runs until killed.
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import org.quartz.Job;
import org.quartz.JobBuilder;
import org.quartz.JobExecutionContext;
import org.quartz.Scheduler;
import org.quartz.TriggerBuilder;
import org.quartz.impl.StdSchedulerFactory;

public class QuartzPollingJobs {
    static final Object STORE = new Object();
    static final AtomicLong WRITES = new AtomicLong();
    static final AtomicLong POLLS = new AtomicLong();
    static CountDownLatch started;

    /** Polls a remote job it started, pausing on its own object between polls. */
    public static class PollJob implements Job {
        @Override
        public void execute(JobExecutionContext ctx) {
            started.countDown();
            try {
                while (true) {
                    long done = System.nanoTime() + ThreadLocalRandom.current().nextLong(50, 300) * 1_000_000L;
                    synchronized (this) {
                        while (System.nanoTime() < done) {
                            wait(25);
                            POLLS.incrementAndGet();
                        }
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Writes results to the shared store, holding its monitor while it writes. */
    public static class StoreJob implements Job {
        @Override
        public void execute(JobExecutionContext ctx) {
            started.countDown();
            try {
                while (true) {
                    synchronized (STORE) {
                        Thread.sleep(15);
                        WRITES.incrementAndGet();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int polls = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        int stores = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 22;
        started = new CountDownLatch(polls + stores);
        Properties p = new Properties();
        p.setProperty("org.quartz.scheduler.instanceName", "jobs");
        p.setProperty("org.quartz.scheduler.skipUpdateCheck", "true");
        p.setProperty("org.quartz.threadPool.class", "org.quartz.simpl.SimpleThreadPool");
        p.setProperty("org.quartz.threadPool.threadCount", Integer.toString(threads));
        p.setProperty("org.quartz.jobStore.class", "org.quartz.simpl.RAMJobStore");
        Scheduler s = new StdSchedulerFactory(p).getScheduler();
        for (int i = 1; i <= polls; i++) {
            s.scheduleJob(JobBuilder.newJob(PollJob.class).withIdentity("poll-" + i).build(),
                    TriggerBuilder.newTrigger().withIdentity("poll-" + i).startNow().build());
        }
        for (int i = 1; i <= stores; i++) {
            s.scheduleJob(JobBuilder.newJob(StoreJob.class).withIdentity("store-" + i).build(),
                    TriggerBuilder.newTrigger().withIdentity("store-" + i).startNow().build());
        }
        s.start();
        started.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("WRITES " + WRITES.get() + " POLLS " + POLLS.get());
        }
    }
}
