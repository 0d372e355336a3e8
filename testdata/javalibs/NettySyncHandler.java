// testjvm:jars=netty-common,netty-buffer,netty-transport,netty-resolver
// Workload: Netty, a business handler serialised on one monitor.
//
// A Netty (NIO transport) echo server on 127.0.0.1, an ephemeral port:
//  - "boss-B-1": the boss event loop (a NioEventLoopGroup of 1) accepting
//    connections; after the clients have connected it sits in its selector,
//    RUNNABLE in epoll (sun.nio.ch.EPoll.wait <- SelectorImpl.select <-
//    NioEventLoop.select): waiting for I/O, not contention.
//  - "worker-W-1".."worker-W-4": the I/O event loops (NioEventLoopGroup of
//    4) reading the requests and writing the replies; mostly in epoll too.
//  - "biz-Z-1".."biz-Z-8": a DefaultEventExecutorGroup of 8 on which the
//    pipeline's business handler runs (each connection pinned to one of
//    them, two connections each). For every request it enters one shared
//    `synchronized (LEDGER)` block and spends ~2 ms in it (a Thread.sleep(2)
//    standing for the work), then echoes the request. Every biz executor
//    always has a request queued, so at any instant one of them holds the
//    monitor (TIMED_WAITING (sleeping) inside it) and the other seven are
//    BLOCKED (on object monitor) in NettySyncHandler$Biz.channelRead: that
//    monitor is the resource.
//  - "idle-biz-I-1", "idle-biz-I-2": a second DefaultEventExecutorGroup of
//    2 that the main thread hands one trivial task each per second: between
//    tasks its executors are idle by design, WAITING (parking) in
//    LinkedBlockingQueue.take <- SingleThreadEventExecutor.takeTask <-
//    DefaultEventExecutor.run.
// (B, W, Z, I are the pool ids Netty's DefaultThreadFactory numbers its
// pools with; they follow the order the groups are made in.)
//
// N client threads "client-1".."client-N" (arg1, default 16) in the same
// JVM each hold one plain blocking java.net.Socket to the server and loop:
// write a 32-byte request, read the 32-byte reply. At any instant they are
// in the socket read (RUNNABLE, waiting for the reply: I/O).
//
// Prints READY once every client has had a few replies, then
// "MSGS <replies>" every second; runs until killed.
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultEventExecutorGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.EventExecutorGroup;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

public class NettySyncHandler {
    static final int MSG = 32;
    static final Object LEDGER = new Object();
    static final AtomicLong REPLIES = new AtomicLong();
    static final AtomicLong IDLE_TASKS = new AtomicLong();

    // The business handler: runs on a biz executor, one shared monitor.
    static final class Biz extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            synchronized (LEDGER) {
                Thread.sleep(2); // ~2 ms of work under the shared monitor
            }
            ctx.writeAndFlush(msg);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    public static void main(String[] args) throws Exception {
        int clients = args.length > 0 ? Integer.parseInt(args[0]) : 16;

        EventLoopGroup boss = new NioEventLoopGroup(1, new DefaultThreadFactory("boss", true));
        EventLoopGroup workers = new NioEventLoopGroup(4, new DefaultThreadFactory("worker", true));
        EventExecutorGroup biz = new DefaultEventExecutorGroup(8, new DefaultThreadFactory("biz", true));
        EventExecutorGroup idle = new DefaultEventExecutorGroup(2, new DefaultThreadFactory("idle-biz", true));

        Channel server = new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(biz, "biz", new Biz());
                    }
                })
                .bind("127.0.0.1", 0).sync().channel();
        int port = ((InetSocketAddress) server.localAddress()).getPort();

        CountDownLatch warm = new CountDownLatch(clients);
        for (int i = 1; i <= clients; i++) {
            final int id = i;
            Thread t = new Thread(() -> client(port, id, warm), "client-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            for (EventExecutor e : idle) {
                e.execute(IDLE_TASKS::incrementAndGet);
            }
            Thread.sleep(1000);
            System.out.println("MSGS " + REPLIES.get() + " idle-tasks " + IDLE_TASKS.get());
        }
    }

    static void client(int port, int id, CountDownLatch warm) {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setTcpNoDelay(true);
            OutputStream out = s.getOutputStream();
            DataInputStream in = new DataInputStream(s.getInputStream());
            byte[] req = new byte[MSG];
            byte[] rep = new byte[MSG];
            for (long k = 1; ; k++) {
                Arrays.fill(req, (byte) ' ');
                byte[] text = ("client-" + id + " #" + k).getBytes(StandardCharsets.US_ASCII);
                System.arraycopy(text, 0, req, 0, Math.min(text.length, MSG));
                out.write(req);
                out.flush();
                in.readFully(rep);
                if (!Arrays.equals(req, rep)) {
                    throw new IllegalStateException("client-" + id + ": bad reply");
                }
                REPLIES.incrementAndGet();
                if (k == 3) {
                    warm.countDown();
                }
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }
}
