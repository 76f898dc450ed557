// bench/systems.hpp -- what the benchmark measures: every provider through
// pglease::connect(url), and the baselines that are not lockers (advisory
// locks, a hand-written table lease, the durable floor, raw etcd and
// ZooKeeper clients) behind the same thin Session adapter.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

/// One client's connection to one system.  Every call is one acquire /
/// release / renew as the system does it; false: refused or failed.
class Session {
public:
	virtual ~Session() = default;
	/// wait: block (or retry) up to 2 s; token: the fencing token, 0 if none.
	virtual bool acquire(const std::string &resource, bool wait, std::int64_t &token) = 0;
	virtual bool release(const std::string &resource, std::int64_t token) = 0;
	/// Renew a grant this session took with keep(); false when not supported.
	virtual bool renew(const std::string &resource, std::int64_t token) = 0;
	/// The last error, for the report of a failed run.
	[[nodiscard]] virtual std::string error() const = 0;
};

enum class Kind { locker, advisory, handmade, floor, etcd_raw, zookeeper_raw, redis_raw, redis_raw_fenced, redis_spin };

struct System {
	std::string key;  ///< short name in the JSON
	std::string name; ///< name in the tables
	std::string what; ///< one line for the "Systems" table
	Kind kind = Kind::locker;
	std::string url;                    ///< pglease URL, libpq conninfo or host:port
	std::string scale_url;              ///< the same with "%s" for the scale database ("" = no scale run)
	std::vector<std::string> scale_dbs; ///< what replaces %s for 1k and for 1M resources
	bool hot = true;                    ///< has a waiting acquire (hot resource scenario)
	bool renews = true;                 ///< renews a grant by its token
	bool tokens = true;                 ///< grants carry fencing tokens (checked for regressions)
	int ttl_ms = 30000;                 ///< the TTL each grant asks for
};

/// Open a session of `sys` for client number `client`, on `url` (sys.url,
/// or its scale URL).  Null and `error` set when it cannot connect.
std::unique_ptr<Session> open_session(const System &sys, const std::string &url, int client,
                                      std::string &error);

} // namespace bench
