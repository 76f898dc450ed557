// LockCurator.java -- the Curator side of tests/providers/zk_curator.sh's
// lock cases: Apache Curator's InterProcessMutex (Debian's
// libcurator-recipes-java 5.4) on the folder of a pglease lock.
//
//   java LockCurator CONNECT PATH WAIT_MS STOPFILE
//
// Acquires the mutex at PATH, waiting at most WAIT_MS, and prints, one line
// each, flushed: "curator-locked" (then holds until STOPFILE exists and
// releases: "curator-released"), or "curator-timeout" when not acquired in
// time.
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class LockCurator {
	public static void main(String[] args) throws Exception {
		if (args.length != 4) {
			System.err.println("usage: LockCurator CONNECT PATH WAIT_MS STOPFILE");
			System.exit(64);
		}
		CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000,
				new ExponentialBackoffRetry(100, 3));
		client.start();
		InterProcessMutex mutex = new InterProcessMutex(client, args[1]);
		if (!mutex.acquire(Long.parseLong(args[2]), TimeUnit.MILLISECONDS)) {
			System.out.println("curator-timeout");
			client.close();
			return;
		}
		System.out.println("curator-locked");
		while (!Files.exists(Paths.get(args[3])))
			Thread.sleep(50);
		mutex.release();
		client.close();
		System.out.println("curator-released");
	}
}
