// bench/report.cpp -- latest.json, latest.md and latest.svg from the runs.
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

namespace bench {
namespace {

struct Agg {
	double med = 0, min = 0, max = 0;
	int n = 0;
};

/// Median, min and max of metric `m` over the successful repetitions.
std::optional<Agg>
agg(const Report &r, const std::string &scenario, const std::string &point, const std::string &system,
    const std::string &m)
{
	std::vector<double> v;
	for (const Run &x : r.runs)
		if (x.scenario == scenario && x.point == point && x.system == system && x.error.empty() &&
		    x.m.count(m))
			v.push_back(x.m.at(m));
	if (v.empty())
		return std::nullopt;
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return Agg{med, v.front(), v.back(), int(n)};
}

std::string
fmt(double v)
{
	char b[32];
	double a = std::fabs(v);
	if (a >= 1e8)
		return "∞";
	std::snprintf(b, sizeof b, a >= 100 || v == 0 ? "%.0f" : a >= 10 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f", v);
	return b;
}

/// A ratio with the digits a threshold needs: 1.296, not 1.30
std::string
ratio(double v)
{
	char b[32];
	std::snprintf(b, sizeof b, v < 10 ? "%.3f" : "%.1f", v);
	return b;
}

std::string
cell(const std::optional<Agg> &a, bool range = true)
{
	if (!a)
		return "n/a";
	if (!range || a->n < 2)
		return fmt(a->med);
	return fmt(a->med) + " (" + fmt(a->min) + "–" + fmt(a->max) + ")";
}

std::string
json_str(const std::string &s)
{
	std::string o = "\"";
	for (char c : s) {
		if (c == '"' || c == '\\')
			o += '\\', o += c;
		else if (static_cast<unsigned char>(c) < 0x20)
			o += ' ';
		else
			o += c;
	}
	return o + "\"";
}

std::string
name_of(const Report &r, const std::string &key)
{
	for (const System &s : r.systems)
		if (s.key == key)
			return s.name;
	return key;
}

/// The machine during one scenario's runs: median (min–max) CPU busy % and load.
std::string
machine_line(const Report &r, const std::string &scenario)
{
	std::vector<double> busy, load;
	for (const Run &x : r.runs)
		if (x.scenario == scenario)
			busy.push_back(x.busy_pct), load.push_back(x.load1);
	if (busy.empty())
		return "";
	std::sort(busy.begin(), busy.end());
	std::sort(load.begin(), load.end());
	return "Machine during these runs (/proc/stat, whole machine, everything included): CPU busy " +
	       fmt(busy[busy.size() / 2]) + " (" + fmt(busy.front()) + "–" + fmt(busy.back()) +
	       ") %; 1-min load average " + fmt(load[load.size() / 2]) + " (" + fmt(load.front()) + "–" +
	       fmt(load.back()) + ").\n\n";
}

// ---- targets ----------------------------------------------------------------------------------------

struct Target {
	std::string what, measured;
	double ratio = NAN;
	std::string threshold;
	bool met = false, info = false;
};

Target
ratio_target(const Report &r, const std::string &what, const std::string &sc, const std::string &pt,
             const std::string &m, const std::string &a, const std::string &b, double min_ratio)
{
	Target t{what, "n/a", NAN, "≥ " + fmt(min_ratio), false, min_ratio <= 0};
	auto x = agg(r, sc, pt, a, m), y = agg(r, sc, pt, b, m);
	if (x && y && y->med > 0) {
		t.ratio = x->med / y->med;
		t.measured = fmt(x->med) + " / " + fmt(y->med);
		t.met = t.ratio >= min_ratio;
	}
	if (t.info)
		t.threshold = "informational";
	return t;
}

std::vector<Target>
targets(const Report &r)
{
	std::vector<Target> v;
	for (const char *c : {"1", "8"}) {
		std::string at = std::string(", ") + c + (c[0] == '1' ? " client" : " clients");
		v.push_back(ratio_target(r, "uncontended pairs/s" + at + ": pg_lease preloaded ≥ 3× etcd",
		                         "uncontended", c, "rate", "pg_preload", "etcd", 3));
		v.push_back(ratio_target(r, "uncontended pairs/s" + at + ": pg_lease preloaded ≥ 3× ZooKeeper",
		                         "uncontended", c, "rate", "pg_preload", "zookeeper", 3));
		v.push_back(ratio_target(r, "uncontended pairs/s" + at + ": pg_lease preloaded ≥ 1.3× handmade",
		                         "uncontended", c, "rate", "pg_preload", "handmade", 1.3));
		v.push_back(ratio_target(r, "uncontended pairs/s" + at + ": pg_lease preloaded ≥ 0.8× durable floor",
		                         "uncontended", c, "rate", "pg_preload", "floor", 0.8));
		v.push_back(ratio_target(r, "uncontended pairs/s" + at + ": etcd provider ≥ 0.6× etcd raw client",
		                         "uncontended", c, "rate", "etcd", "etcd_raw", 0.6));
		v.push_back(ratio_target(r,
		                         "uncontended pairs/s" + at + ": ZooKeeper provider ≥ 0.6× ZooKeeper raw client",
		                         "uncontended", c, "rate", "zookeeper", "zookeeper_raw", 0.6));
		if (c[0] == '1')
			v.push_back(ratio_target(r, "uncontended pairs/s" + at + ": Redlock x3 ≥ 0.7× the Redis provider",
			                         "uncontended", c, "rate", "redlock", "redis", 0.7));
		for (const char *redis : {"redis", "redis_2s"})
			v.push_back(ratio_target(r, "uncontended pairs/s" + at + ": " + name_of(r, redis) +
			                                " ≥ 0.9× Redis raw, fenced (INCR + SET NX PX, DEL)",
			                         "uncontended", c, "rate", redis, "redis_raw_fenced", 0.9));
		v.push_back(ratio_target(r, "uncontended pairs/s" + at + ": Redis provider / Redis raw client (SET NX PX, DEL)",
		                         "uncontended", c, "rate", "redis", "redis_raw", 0));
		v.push_back(ratio_target(r, "uncontended pairs/s" + at + ": pg_lease preloaded / etcd raw client",
		                         "uncontended", c, "rate", "pg_preload", "etcd_raw", 0));
		v.push_back(ratio_target(r,
		                         "uncontended pairs/s" + at + ": pg_lease preloaded / ZooKeeper raw client",
		                         "uncontended", c, "rate", "pg_preload", "zookeeper_raw", 0));
	}
	auto p50 = agg(r, "hot", "8", "pg_preload", "handoff_p50");
	for (const char *peer : {"etcd", "zookeeper"}) {
		auto q = agg(r, "hot", "8", peer, "handoff_p50");
		Target t{"hot resource: hand-off p50 pg_lease preloaded below " + name_of(r, peer), "n/a", NAN,
		         "< 1"};
		if (p50 && q && q->med > 0)
			t.measured = fmt(p50->med) + " µs / " + fmt(q->med) + " µs", t.ratio = p50->med / q->med,
			t.met = t.ratio < 1;
		v.push_back(t);
	}
	Target ms{"hot resource: hand-off p50 pg_lease preloaded ≤ 1 ms", "n/a", NAN, "≤ 1 (ms)"};
	if (p50)
		ms.measured = fmt(p50->med) + " µs", ms.ratio = p50->med / 1000, ms.met = ms.ratio <= 1;
	v.push_back(ms);
	v.push_back(ratio_target(r, "hot resource: hand-offs/s pg_lease preloaded ≥ 0.4× advisory lock", "hot",
	                         "8", "rate", "pg_preload", "advisory", 0.4));
	Target p99{"hot resource: hand-off p99 pg_lease preloaded ≤ 10 ms", "n/a", NAN, "≤ 10 (ms)"};
	if (auto q = agg(r, "hot", "8", "pg_preload", "handoff_p99"))
		p99.measured = fmt(q->med) + " µs", p99.ratio = q->med / 1000, p99.met = p99.ratio <= 10;
	v.push_back(p99);
	for (const char *key : {"pg_preload", "pg_plain"}) {
		const double bound = std::string(key) == "pg_preload" ? 1.1 : 1.5;
		Target fair{"hot resource: fairness (max/min grants per client) " + name_of(r, key) + " ≤ " + fmt(bound),
		            "n/a", NAN, "≤ " + fmt(bound)};
		if (auto f = agg(r, "hot", "8", key, "fairness"))
			fair.measured = fmt(f->med), fair.ratio = f->med, fair.met = f->med <= bound;
		v.push_back(fair);
	}
	Target handoffs{"hot resource: Redis hand-offs/s ≥ 500", "n/a", NAN, "≥ 500 (/s)"};
	if (auto h = agg(r, "hot", "8", "redis", "rate"))
		handoffs.measured = fmt(h->med) + " /s", handoffs.ratio = h->med / 500, handoffs.met = h->med >= 500;
	v.push_back(handoffs);
	Target redis_fair{"hot resource: fairness (max/min grants per client) Redis ≤ 2", "n/a", NAN, "≤ 2"};
	if (auto f = agg(r, "hot", "8", "redis", "fairness"))
		redis_fair.measured = fmt(f->med), redis_fair.ratio = f->med, redis_fair.met = f->med <= 2;
	v.push_back(redis_fair);
	Target sc{"scale: pg_lease preloaded acquire p50 at 1M ≤ 1.5× at 1k", "n/a", NAN, "≤ 1.5"};
	auto s1 = agg(r, "scale", "1k", "pg_preload", "acq_p50"),
	     s2 = agg(r, "scale", "1M", "pg_preload", "acq_p50");
	if (s1 && s2 && s1->med > 0)
		sc.measured = fmt(s2->med) + " µs / " + fmt(s1->med) + " µs", sc.ratio = s2->med / s1->med,
		sc.met = sc.ratio <= 1.5;
	v.push_back(sc);
	return v;
}

// ---- markdown sections ------------------------------------------------------------------------------

void
main_table(std::ostream &o, const Report &r)
{
	o << "## Main results (median of " << r.reps << " runs; min–max in the tables below)\n\n"
	  << "| system | pairs/s 1 client | pairs/s 8 clients | pairs/s 32 clients | hot: hand-offs/s | "
	     "hot: hand-off p50 µs | hot: hand-off p99 µs | hot: max/min grants | scale: acquire p50 µs 1k → 1M | "
	     "renewals/s |\n"
	  << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
	for (const System &s : r.systems) {
		auto u = [&](const char *c) { return cell(agg(r, "uncontended", c, s.key, "rate"), false); };
		auto h = [&](const char *m) { return cell(agg(r, "hot", "8", s.key, m), false); };
		auto a = agg(r, "scale", "1k", s.key, "acq_p50"), b = agg(r, "scale", "1M", s.key, "acq_p50");
		o << "| " << s.name << " | " << u("1") << " | " << u("8") << " | " << u("32") << " | " << h("rate")
		  << " | " << h("handoff_p50") << " | " << h("handoff_p99") << " | " << h("fairness") << " | "
		  << (a && b ? fmt(a->med) + " → " + fmt(b->med) : "n/a") << " | "
		  << cell(agg(r, "renew", "1k", s.key, "rate"), false) << " |\n";
	}
	o << "\nn/a: not applicable (no waiting acquire, no per-resource state to scale, no renewal by token) or "
	     "not "
	     "run.\n\n";
}

void
targets_table(std::ostream &o, const Report &r)
{
	o << "## Targets (ratios of medians)\n\n| target | measured | ratio | threshold | result |\n"
	  << "|---|---|---:|---|---|\n";
	for (const Target &t : targets(r))
		o << "| " << t.what << " | " << t.measured << " | " << (std::isnan(t.ratio) ? "n/a" : ratio(t.ratio))
		  << " | " << t.threshold << " | "
		  << (t.info                ? "—"
		      : std::isnan(t.ratio) ? "**not measured**"
		      : t.met               ? "**met**"
		                            : "**not met**")
		  << " |\n";
	o << "\n";
}

using Cols = std::vector<std::pair<std::string, std::string>>; // header, metric

void
scenario_table(std::ostream &o, const Report &r, const std::string &scenario,
               const std::vector<std::string> &points, const std::string &point_name, const Cols &cols)
{
	o << "| system | " << point_name;
	for (auto &c : cols)
		o << " | " << c.first;
	o << " | CPU busy % | load |\n|---|---:";
	for (size_t i = 0; i < cols.size() + 2; i++)
		o << "|---:";
	o << "|\n";
	for (const std::string &p : points)
		for (const System &s : r.systems) {
			if (!agg(r, scenario, p, s.key, cols[0].second))
				continue;
			o << "| " << s.name << " | " << p;
			for (auto &c : cols)
				o << " | " << cell(agg(r, scenario, p, s.key, c.second));
			std::vector<double> busy, load;
			for (const Run &x : r.runs)
				if (x.scenario == scenario && x.point == p && x.system == s.key)
					busy.push_back(x.busy_pct), load.push_back(x.load1);
			std::sort(busy.begin(), busy.end());
			std::sort(load.begin(), load.end());
			o << " | " << fmt(busy[busy.size() / 2]) << " | " << fmt(load[load.size() / 2]) << " |\n";
		}
	o << "\n" << machine_line(r, scenario);
}

void
detail_tables(std::ostream &o, const Report &r)
{
	o << "## 1. Uncontended acquire+release\n\nEach client loops: try-acquire a random resource of 100k "
	     "(`u/<n>`), release at once; a pair counts when its release returns inside the window. *busy*: "
	     "refused tries (another client held it).\n\n";
	scenario_table(o, r, "uncontended", {"1", "8", "32"}, "clients",
	               {{"pairs/s", "rate"},
	                {"acquire p50 µs", "acq_p50"},
	                {"acquire p99 µs", "acq_p99"},
	                {"release p50 µs", "rel_p50"},
	                {"busy", "busy"}});
	o << "## 2. One hot resource, 8 competing clients\n\nEach client loops: acquire `hot` waiting up to 2 s "
	     "(each provider's own wait: pg_lease's FIFO queue, etcd/ZooKeeper watches, Redis/Redlock retries; "
	     "advisory: the lock manager's queue; handmade: retry after 50–250 ms), hold 200 µs, release. A "
	     "hand-off is a grant to another client than the previous grant's; its latency runs from the call of "
	     "the previous holder's release to the return of the grant: how long the resource sits idle between "
	     "\"I am done\" and \"you have it\". Fairness: max/min grants per client (∞: a client got none). "
	     "Token regressions: grants whose "
	     "token was lower than the previous grant's.\n\n";
	scenario_table(o, r, "hot", {"8"}, "clients",
	               {{"hand-offs/s", "rate"},
	                {"hand-off p50 µs", "handoff_p50"},
	                {"hand-off p99 µs", "handoff_p99"},
	                {"max/min grants", "fairness"},
	                {"grants/s", "grants_s"},
	                {"self re-grants %", "self_pct"},
	                {"timeouts", "timeouts"},
	                {"token regressions", "regressions"}});
	o << "## 3. Scale: 1k vs 1M resources present\n\n1 client, uncontended pairs on random resources of a "
	     "database holding 1k or 1M released rows (`s/<n>`); Redis: 1k or 1M other keys held in its logical "
	     "database.\n\n";
	scenario_table(o, r, "scale", {"1k", "1M"}, "resources",
	               {{"acquire p50 µs", "acq_p50"}, {"acquire p99 µs", "acq_p99"}, {"pairs/s", "rate"}});
	o << "## 4. Renewals\n\n8 clients each hold 125 leases (1k in all) and renew them round-robin "
	     "(`Lease::renew`; handmade: its `UPDATE`).\n\n";
	scenario_table(o, r, "renew", {"1k"}, "leases", {{"renewals/s", "rate"}, {"failed renewals", "errors"}});
}

} // namespace

void
write_markdown(const Report &r, const std::string &path)
{
	std::ofstream o(path);
	o << "# pg_lease benchmark, every provider in one run\n\n";
	for (auto &[k, v] : r.meta)
		o << "- " << k << ": " << v << "\n";
	o << "- each measurement: " << r.reps
	  << " runs, median and (min–max); each repetition runs every (scenario, "
	  << "point) once with the systems round-robin, the first system rotating per repetition, the order of "
	     "the "
	     "points alternating\n- each run: fresh connections (one per client thread), warm-up not counted, "
	     "then "
	  << fmt(r.duration) << " s measured (hot resource: " << fmt(r.hot_duration) << " s)\n"
	  << "- raw runs: `latest.json`; chart: `latest.svg`\n\n## Systems\n\n| system | what |\n|---|---|\n";
	for (const System &s : r.systems)
		o << "| " << s.name << " | " << s.what << " |\n";
	o << "\n";
	main_table(o, r);
	targets_table(o, r);
	detail_tables(o, r);
	o << "## Failed runs\n\n";
	int failed = 0;
	for (const Run &x : r.runs)
		if (!x.error.empty())
			o << "- rep " << x.rep << ", " << x.scenario << " " << x.point << ", " << name_of(r, x.system)
			  << ": " << x.error << "\n",
			    failed++;
	if (!failed)
		o << "none\n";
}

void
write_json(const Report &r, const std::string &path)
{
	std::ofstream o(path);
	o << "{\n  \"meta\": {";
	for (size_t i = 0; i < r.meta.size(); i++)
		o << (i ? ", " : "") << json_str(r.meta[i].first) << ": " << json_str(r.meta[i].second);
	o << "},\n  \"systems\": [";
	for (size_t i = 0; i < r.systems.size(); i++)
		o << (i ? ", " : "") << "{\"key\": " << json_str(r.systems[i].key)
		  << ", \"name\": " << json_str(r.systems[i].name) << "}";
	o << "],\n  \"runs\": [\n";
	for (size_t i = 0; i < r.runs.size(); i++) {
		const Run &x = r.runs[i];
		o << "    {\"scenario\": " << json_str(x.scenario) << ", \"point\": " << json_str(x.point)
		  << ", \"system\": " << json_str(x.system) << ", \"rep\": " << x.rep
		  << ", \"cpu_busy_pct\": " << x.busy_pct << ", \"load1\": " << x.load1;
		for (auto &[k, v] : x.m)
			o << ", " << json_str(k) << ": " << (std::isfinite(v) ? v : -1);
		if (!x.error.empty())
			o << ", \"error\": " << json_str(x.error);
		o << "}" << (i + 1 < r.runs.size() ? "," : "") << "\n";
	}
	o << "  ]\n}\n";
}

/// Three panels of horizontal bars on a log scale: pairs/s at 1 and 8 clients, hand-offs/s.
void
write_svg(const Report &r, const std::string &path)
{
	struct Panel {
		std::string title, scenario, point;
	};
	const std::vector<Panel> panels{{"uncontended pairs/s, 1 client", "uncontended", "1"},
	                                {"uncontended pairs/s, 8 clients", "uncontended", "8"},
	                                {"hot resource: hand-offs/s (8 clients)", "hot", "8"}};
	const double label_w = 170, panel_w = 260, row_h = 18, top = 50;
	const double height = top + row_h * r.systems.size() + 30;
	std::ofstream o(path);
	o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << label_w + panel_w * 3 + 20 << "\" height=\""
	  << height << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" "
	  << "fill=\"white\"/>\n<text x=\"10\" y=\"18\" font-size=\"14\">pg_lease benchmark: median of " << r.reps
	  << " runs, log scale</text>\n";
	for (size_t i = 0; i < r.systems.size(); i++)
		o << "<text x=\"" << label_w - 6 << "\" y=\"" << top + row_h * i + 12 << "\" text-anchor=\"end\">"
		  << r.systems[i].name << "</text>\n";
	for (size_t p = 0; p < panels.size(); p++) {
		double x0 = label_w + panel_w * p, w = panel_w - 60;
		o << "<text x=\"" << x0 << "\" y=\"" << top - 10 << "\">" << panels[p].title << "</text>\n";
		for (size_t i = 0; i < r.systems.size(); i++) {
			auto a = agg(r, panels[p].scenario, panels[p].point, r.systems[i].key, "rate");
			if (!a || a->med <= 0)
				continue;
			double len = std::max(1.0, w * std::log10(std::max(1.0, a->med)) / 6); // 1 .. 1M
			bool ours = r.systems[i].key.rfind("pg_", 0) == 0;
			o << "<rect x=\"" << x0 << "\" y=\"" << top + row_h * i + 2 << "\" width=\"" << len
			  << "\" height=\"" << row_h - 5 << "\" fill=\"" << (ours ? "#2b6cb0" : "#a0aec0") << "\"/>\n"
			  << "<text x=\"" << x0 + len + 3 << "\" y=\"" << top + row_h * i + 12 << "\">" << fmt(a->med)
			  << "</text>\n";
		}
	}
	o << "</svg>\n";
}

} // namespace bench
