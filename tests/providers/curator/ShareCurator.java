// ShareCurator.java -- the Curator side of tests/providers/zk_curator_sharing.sh:
// Apache Curator's InterProcessReadWriteLock and InterProcessSemaphoreV2
// (Debian's libcurator-recipes-java 5.4) on the folder of a pglease shared
// lease or semaphore.
//
//   java ShareCurator CONNECT PATH KIND WAIT_MS STOPFILE
//       KIND: read, write (the read-write lock's two sides) or permit:N (a
//       lease of a semaphore of N).  Acquires, waiting at most WAIT_MS, and
//       prints "curator-granted" (then holds until STOPFILE exists, releases:
//       "curator-released"), or "curator-timeout".
//   java ShareCurator CONNECT PATH permit:N loop ROUNDS HOLD_MS
//       ROUNDS times: a lease (waiting as long as it takes), held HOLD_MS;
//       one line per round, "held FROM TO" (epoch milliseconds, FROM taken
//       after the grant, TO before the release).
//
// Every line is flushed as it happens (the script reads them while this runs).
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class ShareCurator {
	public static void main(String[] args) throws Exception {
		if (args.length != 5 && args.length != 6) {
			System.err.println("usage: ShareCurator CONNECT PATH read|write|permit:N WAIT_MS STOPFILE\n"
					+ "       ShareCurator CONNECT PATH permit:N loop ROUNDS HOLD_MS");
			System.exit(64);
		}
		CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000,
				new ExponentialBackoffRetry(100, 3));
		client.start();
		String kind = args[2];
		if (kind.startsWith("permit:")) {
			InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, args[1],
					Integer.parseInt(kind.substring(7)));
			if (args[3].equals("loop"))
				loop(semaphore, Integer.parseInt(args[4]), Long.parseLong(args[5]));
			else
				holdPermit(semaphore, Long.parseLong(args[3]), args[4]);
		} else {
			InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, args[1]);
			InterProcessMutex side = kind.equals("read") ? rw.readLock() : rw.writeLock();
			if (!side.acquire(Long.parseLong(args[3]), TimeUnit.MILLISECONDS)) {
				System.out.println("curator-timeout");
			} else {
				System.out.println("curator-granted");
				waitFor(args[4]);
				side.release();
				System.out.println("curator-released");
			}
		}
		client.close();
	}

	static void waitFor(String stopfile) throws InterruptedException {
		while (!Files.exists(Paths.get(stopfile)))
			Thread.sleep(50);
	}

	static void holdPermit(InterProcessSemaphoreV2 semaphore, long waitMs, String stopfile) throws Exception {
		Lease lease = semaphore.acquire(waitMs, TimeUnit.MILLISECONDS);
		if (lease == null) {
			System.out.println("curator-timeout");
			return;
		}
		System.out.println("curator-granted");
		waitFor(stopfile);
		semaphore.returnLease(lease);
		System.out.println("curator-released");
	}

	static void loop(InterProcessSemaphoreV2 semaphore, int rounds, long holdMs) throws Exception {
		for (int i = 0; i < rounds; i++) {
			Lease lease = semaphore.acquire();
			long from = System.currentTimeMillis();
			Thread.sleep(holdMs);
			long to = System.currentTimeMillis();
			semaphore.returnLease(lease);
			System.out.println("held " + from + " " + to);
		}
	}
}
