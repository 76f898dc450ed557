// ElectCurator.java -- the Curator side of tests/providers/zk_curator.sh: one
// participant of Apache Curator's LeaderSelector recipe (Debian's
// libcurator-recipes-java 5.4), printing what it sees.
//
//   java ElectCurator CONNECT PATH ID STOPFILE [SESSION_MS]
//
// Joins the election at PATH with participant id ID and prints, one line
// each, flushed:
//   "curator-sees ID2" / "curator-sees none"  when getLeader() changes
//                                             (read every 100 ms: Curator
//                                             offers no leader watch)
//   "curator-leading"                         when takeLeadership runs
//   "curator-closed"                          after STOPFILE appeared:
//                                             leadership given up (the lock
//                                             node deleted), client closed
// SESSION_MS: the session timeout (default 10000), for a test that kills
// this process and waits for the server to expire its session.
import java.nio.file.Files;
import java.nio.file.Paths;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class ElectCurator {
	private static boolean stopped(String stopfile) {
		return Files.exists(Paths.get(stopfile));
	}

	public static void main(String[] args) throws Exception {
		if (args.length != 4 && args.length != 5) {
			System.err.println("usage: ElectCurator CONNECT PATH ID STOPFILE [SESSION_MS]");
			System.exit(64);
		}
		final String connect = args[0], path = args[1], id = args[2], stopfile = args[3];
		final int session = args.length == 5 ? Integer.parseInt(args[4]) : 10000;
		CuratorFramework client = CuratorFrameworkFactory.newClient(connect, session, 5000,
				new ExponentialBackoffRetry(100, 3));
		client.start();
		LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
			@Override
			public void takeLeadership(CuratorFramework c) throws Exception {
				System.out.println("curator-leading");
				while (!stopped(stopfile))
					Thread.sleep(50);
			}
		});
		selector.setId(id);
		selector.start();
		String seen = null;
		while (!stopped(stopfile)) {
			String now = selector.getLeader().getId();
			if (now.isEmpty())
				now = "none";
			if (!now.equals(seen)) {
				System.out.println("curator-sees " + now);
				seen = now;
			}
			Thread.sleep(100);
		}
		selector.close();
		client.close();
		System.out.println("curator-closed");
	}
}
