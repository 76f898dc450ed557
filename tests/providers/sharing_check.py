#!/usr/bin/env python3
"""sharing_check.py [--fifo] [--grant-tokens] [--chaos] NAME LOG... -- check the files
sharing_worker's history mode wrote (tests/client/sharing_worker.cpp; times
from CLOCK_MONOTONIC in microseconds, one clock for every process of the
machine) for one provider, each file one client process (or the threads of
one), with the test's own lines in it: "K AT_US" (the process was killed)
and "F FROM_US TO_US" (it was frozen).

A grant is relied on from the moment its acquire returned (END_US of its G
line) to the last deadline it logged (G, D lines), or to the start of its
release if that comes first.  The server granted it somewhere between the
request's start (R) and that return.  A request is *asked* when its call
was made (SENT_US of its G or E line, stamped once the R line was written;
START_US in logs without it): the R line's write can stall for longer than
any margin here, and the request joins no queue before the call.
Properties:

  - never more holders than the limit: at no moment do more grants of a
    semaphore overlap than the smallest limit among them;
  - never a writer together with anyone: an exclusive grant of a lock (limit
    0) overlaps no other grant, a shared one only shared ones;
  - every token granted once per resource, and tokens increase in grant
    order: a grant whose request started after another's acquire returned
    has the higher token;
  - no waiter overtaken (--fifo: the provider's capabilities().fifo_wait):
    a request B asked more than ENTRY_MARGIN_MS (300) after a waiting
    request A (wait > 0; not a process's first, which also connects; no
    freeze of A's process from its start to its return) must not be granted
    before A was granted or gave up.  In one queue only its front is
    granted, in every mode: a later reader behind a waiting writer, a later
    permit behind a waiting permit.  Granted before A was granted: with
    --grant-tokens (the provider draws a token when it decides the grant:
    memory, PostgreSQL, Redis) B's token is below A's -- the order the
    grants were made in, which the returns need not keep (an acquire that
    waited over TTL - heartbeat renews once before it returns, and a
    process may be descheduled after its grant); without (etcd, ZooKeeper:
    a token is its key's or node's creation, when it queues) B's acquire
    returned more than GRANT_MARGIN_MS (300) before A's.  Before A gave up
    (timeout): B's acquire returned more than GRANT_MARGIN_MS before A's
    wait ran out (A asked + its wait: no client gives up sooner; A's
    return may come later still).  Without --fifo, still no reader
    overtook a waiting writer (the same check, A a writer and B a reader):
    the contract is writer-preferring everywhere;
  - every acquire returned within its wait + GRACE_MS (3000), freezes of
    its process excepted, and every request has an outcome unless its
    process was killed;
  - every refusal explained: an invalid_argument carries LS003 and came
    while a grant or request of another limit of that resource was about
    (within the TTL, TTL_MS 1500, of its end: a request's return, a
    released grant's release, an abandoned or killed holder's grant's last
    deadline, for the server keeps that grant until it expires); no other
    refusal on a reader-writer resource;
  - no unexpected errors (internal, nested);
  - the run exercised sharing: at least MIN_GRANTS (20) grants per
    resource, two readers or two permits at once, a writer, requests that
    waited and were granted, and (--chaos) kills and freezes.
Prints "ok - NAME: ..." or "not ok - NAME: PROPERTY: ..." per property; exits 1
if any failed.
"""
import bisect
import os
import sys
from collections import defaultdict

ENTRY_MARGIN_US = int(os.environ.get("ENTRY_MARGIN_MS", "300")) * 1000
GRANT_MARGIN_US = int(os.environ.get("GRANT_MARGIN_MS", "300")) * 1000
GRACE_US = int(os.environ.get("GRACE_MS", "3000")) * 1000
TTL_US = int(os.environ.get("TTL_MS", "1500")) * 1000
MIN_GRANTS = int(os.environ.get("MIN_GRANTS", "20"))
SHOWN = 3  # examples per violated property

P_LIMIT = "never more holders than the limit"
P_WRITER = "never a writer together with anyone"
P_TOKEN_ONCE = "every token granted once per resource"
P_TOKEN_ORDER = "tokens increase in grant order"
P_FIFO = "no waiter overtaken"
P_WRITER_FIRST = "no reader overtook a waiting writer"
P_BOUND = "every acquire returned within its wait + grace"
P_REFUSAL = "every refusal explained"
P_ERRORS = "no unexpected errors"
P_VACUOUS = "the run exercised sharing"


class Request:
    """One acquire and, if granted, the grant it became."""

    def __init__(self, rid, source, resource, mode, limit, wait_ms, start):
        self.id, self.source, self.resource = rid, source, resource
        self.mode, self.limit, self.wait_us, self.start = mode, int(limit), int(wait_ms) * 1000, int(start)
        self.seq = int(rid.rsplit(":", 1)[-1]) if ":" in rid else 0
        self.sent = None  # the call was made (after the R line was written)
        self.end = None  # the call returned
        self.token = None
        self.errc = self.sqlstate = None
        self.deadline = None  # the last deadline relied on
        self.stop = None  # release or abandon started
        self.abandoned = False  # stopped by abandon (detach): the grant runs out on the server

    @property
    def granted(self):
        return self.token is not None

    @property
    def asked(self):
        """When the request could first join a queue: its call, not its R line."""
        return self.start if self.sent is None else self.sent

    def relied_until(self):
        return self.deadline if self.stop is None else min(self.stop, self.deadline)

    def server_until(self):
        """Until when the grant may be on the server, short of its expiry's
        slack: its release, or the last deadline of a grant abandoned or
        whose holder was killed (it runs out there, not at the abandon)."""
        return self.deadline if self.stop is None or self.abandoned else min(self.stop, self.deadline)

    def __str__(self):
        what = f"{self.mode} limit {self.limit}" if self.limit else self.mode
        return f"{self.id} ({what}, token {self.token})" if self.granted else f"{self.id} ({what})"


def read(paths):
    """The requests, and per source file its kills and freezes; bad lines are an error."""
    requests, kills, freezes = {}, defaultdict(list), defaultdict(list)
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                w = line.split()
                if not w:
                    continue
                try:
                    kind = w[0]
                    if kind == "R":
                        requests[w[1]] = Request(w[1], path, w[2], w[3], w[4], w[5], w[6])
                    elif kind == "K":
                        kills[path].append(int(w[1]))
                    elif kind == "F":
                        freezes[path].append((int(w[1]), int(w[2])))
                    elif kind in "GEDUAL":
                        r = requests[w[1]]
                        if kind == "G":
                            r.token, r.end, r.deadline = int(w[2]), int(w[3]), int(w[4])
                            r.sent = int(w[5]) if len(w) > 5 else None
                        elif kind == "E":
                            r.errc, r.sqlstate, r.end = w[2], w[3], int(w[4])
                            r.sent = int(w[5]) if len(w) > 5 else None
                        elif kind == "D":
                            r.deadline = max(r.deadline, int(w[2]))
                        elif kind in "UA":
                            r.stop, r.abandoned = int(w[2]), kind == "A"
                    else:
                        raise ValueError("unknown event")
                except (IndexError, KeyError, ValueError, TypeError) as e:
                    sys.exit(f"sharing_check: {path}:{n}: unreadable line ({e!r}): {line.strip()}")
    return list(requests.values()), kills, freezes


class Report:
    def __init__(self, name):
        self.name, self.failed = name, 0

    def check(self, prop, bad, good):
        if bad:
            self.failed += 1
            more = f" (and {len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
            print(f"not ok - {self.name}: {prop}: " + "; ".join(bad[:SHOWN]) + more)
        else:
            print(f"ok - {self.name}: {prop}: {good}")


def conflicts(g, others):
    """What is wrong with grant g held together with others, per property."""
    limit, writer = [], []
    if g.limit > 0:
        permits = [o for o in others if o.limit > 0]
        smallest = min([g.limit] + [o.limit for o in permits])
        if len(permits) + 1 > smallest:
            limit.append(f"{len(permits) + 1} holders of a limit of {smallest} at {g.end} us: "
                         + ", ".join(map(str, [g] + permits)))
    excluded = [o for o in others if (g.limit > 0) != (o.limit > 0)
                or (g.limit == 0 and (g.mode == "exclusive" or o.mode == "exclusive"))]
    if excluded:
        writer.append(f"{g} granted at {g.end} us while {', '.join(map(str, excluded))} held")
    return limit, writer


def check_holders(grants):
    """Sweep the relied-on intervals of one resource; the most holders seen at once, per mode."""
    bad_limit, bad_writer = [], []
    events = []
    for g in grants:
        if g.relied_until() > g.end:
            events.append((g.end, 1, g))
            events.append((g.relied_until(), 0, g))  # an end before a start at the same moment
    events.sort(key=lambda e: (e[0], e[1]))
    active, most = {}, defaultdict(int)
    for _, starts, g in events:
        if not starts:
            active.pop(g.id, None)
            continue
        limit, writer = conflicts(g, list(active.values()))
        bad_limit += limit
        bad_writer += writer
        active[g.id] = g
        key = "permits" if g.limit else g.mode
        most[key] = max(most[key], sum(1 for o in active.values() if ("permits" if o.limit else o.mode) == key))
    return bad_limit, bad_writer, most


def check_tokens(grants):
    once, order = [], []
    seen = {}
    for g in grants:
        if g.token in seen:
            once.append(f"token {g.token} granted to {seen[g.token].id} and to {g.id}")
        seen[g.token] = g
    by_end = sorted(grants, key=lambda g: g.end)
    ends = [g.end for g in by_end]
    best = []  # best[i]: the grant with the highest token among by_end[:i+1]
    for g in by_end:
        best.append(g if not best or g.token > best[-1].token else best[-1])
    for b in grants:
        i = bisect.bisect_left(ends, b.start) - 1  # grants whose acquire returned before b asked
        if i >= 0 and best[i].token >= b.token:
            a = best[i]
            order.append(f"{b} asked at {b.start} us, after {a} had been granted (at {a.end} us)")
    return once, order


def overlaps(spans, start, end):
    return any(f < end and t > start for f, t in spans)


def writer(r):
    return r.limit == 0 and r.mode == "exclusive"


def check_fifo(requests, freezes, writers_only=False, grant_tokens=False):
    """Requests of one resource: B asked well after A waited, granted before
    A's turn ended (writers_only: A a writer, B a reader; grant_tokens: the
    tokens give the order of grants)."""
    waiting = [a for a in requests if a.wait_us > 0 and a.seq > 0 and a.end is not None
               and (a.granted or a.errc == "timeout") and not overlaps(freezes[a.source], a.start, a.end)
               and (writer(a) or not writers_only)]
    by_asked = sorted((r for r in requests if r.granted and (r.mode == "shared" or not writers_only)),
                      key=lambda r: r.asked)
    asked = [r.asked for r in by_asked]
    first = [None] * (len(by_asked) + 1)  # first[i]: the earliest returned among by_asked[i:]
    for i in range(len(by_asked) - 1, -1, -1):
        nxt = first[i + 1]
        first[i] = by_asked[i] if nxt is None or by_asked[i].end < nxt.end else nxt
    bad = []
    for a in waiting:
        i = bisect.bisect_right(asked, a.asked + ENTRY_MARGIN_US)
        if a.granted and grant_tokens:
            # one asked after A's acquire returned was granted after A, whatever
            # its token: a lower one breaks the tokens' order, not the queue's
            j = bisect.bisect_left(asked, a.end)
            b = min(by_asked[i:j], key=lambda r: r.token, default=None)
            if b is not None and b.token < a.token:
                bad.append(f"{b} asked {(b.asked - a.asked) // 1000} ms after {a} and was granted before it "
                           f"(the lower token; the acquires returned at {b.end} and {a.end} us)")
            continue
        b = first[i]
        # a timeout ends A's wait no sooner than its wait after it asked
        turn_ended = a.end if a.granted else min(a.end, a.asked + a.wait_us)
        if b is not None and b.end + GRANT_MARGIN_US < turn_ended:
            outcome = "it was granted" if a.granted else "its wait ran out"
            bad.append(f"{b} asked {(b.asked - a.asked) // 1000} ms after {a} and was granted "
                       f"{(turn_ended - b.end) // 1000} ms before {outcome}")
    return bad, len(waiting)


def check_bounds(requests, kills, freezes):
    bad = []
    for r in requests:
        if r.end is None:
            if not any(k > r.start for k in kills[r.source]):
                bad.append(f"{r} asked at {r.start} us never returned, and its process was not killed")
        elif r.end - r.start > r.wait_us + GRACE_US and not overlaps(freezes[r.source], r.start, r.end):
            bad.append(f"{r} took {(r.end - r.start) // 1000} ms for a wait of {r.wait_us // 1000} ms")
    return bad


def check_refusals(requests):
    bad = []
    for r in requests:
        if r.errc != "invalid_argument":
            continue
        if r.sqlstate != "LS003":
            bad.append(f"{r} refused with {r.sqlstate}, not LS003")
            continue
        # a grant or request of another limit about: from its start to its
        # end (a grant's: until it left the server, then up to the TTL of
        # slack for the server to end it)
        about = [o for o in requests if o.resource == r.resource and o.limit != r.limit
                 and o.start <= r.end
                 and (o.end is None or (o.server_until() if o.granted else o.end) + TTL_US >= r.start)]
        if not about:
            bad.append(f"{r} refused (LS003) at {r.end} us with no other limit about")
    return bad


def main(argv):
    flags = {a for a in argv if a.startswith("--")}
    args = [a for a in argv if not a.startswith("--")]
    if len(args) < 2 or flags - {"--fifo", "--grant-tokens", "--chaos"}:
        sys.exit("usage: sharing_check.py [--fifo] [--grant-tokens] [--chaos] NAME LOG...")
    name, paths = args[0], args[1:]
    requests, kills, freezes = read(paths)
    report = Report(name)
    by_resource = defaultdict(list)
    for r in requests:
        by_resource[r.resource].append(r)

    grant_tokens = "--grant-tokens" in flags
    bad = defaultdict(list)
    facts = []
    waiters_checked = 0
    for resource in sorted(by_resource):
        rs = by_resource[resource]
        grants = [r for r in rs if r.granted]
        limit, writer, most = check_holders(grants)
        bad[P_LIMIT] += limit
        bad[P_WRITER] += writer
        once, order = check_tokens(grants)
        bad[P_TOKEN_ONCE] += once
        bad[P_TOKEN_ORDER] += order
        if "--fifo" in flags:
            overtaken, checked = check_fifo(rs, freezes, grant_tokens=grant_tokens)
            bad[P_FIFO] += overtaken
            waiters_checked += checked
        else:
            overtaken, checked = check_fifo(rs, freezes, writers_only=True, grant_tokens=grant_tokens)
            bad[P_WRITER_FIRST] += overtaken
            waiters_checked += checked
        waited = sum(1 for g in grants if g.end - g.start > 100000)
        is_rw = all(r.limit == 0 for r in rs)
        writers = sum(1 for g in grants if g.limit == 0 and g.mode == "exclusive")
        together = most["shared"] if is_rw else most["permits"]
        facts.append(f"{resource}: {len(grants)} grants, {waited} after a wait, at most {together} "
                     f"{'readers' if is_rw else 'permits'} at once" + (f", {writers} writers" if is_rw else ""))
        if len(grants) < MIN_GRANTS:
            bad[P_VACUOUS].append(f"{resource}: only {len(grants)} grants (at least {MIN_GRANTS} expected)")
        if together < 2:
            bad[P_VACUOUS].append(f"{resource}: never two {'readers' if is_rw else 'permits'} at once")
        if is_rw and writers < 1:
            bad[P_VACUOUS].append(f"{resource}: no writer granted")
        if waited < 1:
            bad[P_VACUOUS].append(f"{resource}: no request waited and was granted")
    if not by_resource:
        bad[P_VACUOUS].append("no requests at all")
    n_kills = sum(len(k) for k in kills.values())
    n_freezes = sum(len(f) for f in freezes.values())
    if "--chaos" in flags and (n_kills < 1 or n_freezes < 1):
        bad[P_VACUOUS].append(f"{n_kills} kills and {n_freezes} freezes (at least one of each expected)")
    any_rw = any(all(r.limit == 0 for r in rs) for rs in by_resource.values())
    if ("--fifo" in flags or any_rw) and by_resource and waiters_checked < 1:
        bad[P_VACUOUS].append("no waiter to check the order of grants on")
    bad[P_BOUND] = check_bounds(requests, kills, freezes)
    bad[P_REFUSAL] = check_refusals(requests)
    bad[P_ERRORS] = [f"{r}: {r.errc} {r.sqlstate}" for r in requests if r.errc in ("internal", "nested")]
    errors = defaultdict(int)
    for r in requests:
        if r.errc:
            errors[r.errc] += 1
    # grants whose holder stopped relying on them at the deadline (frozen
    # past it), not at the release it sent later
    outlived = sum(1 for r in requests if r.granted and r.stop is not None and r.deadline < r.stop)

    report.check(P_LIMIT, bad[P_LIMIT], "; ".join(facts))
    report.check(P_WRITER, bad[P_WRITER], f"{sum(len(v) for v in by_resource.values())} requests")
    report.check(P_TOKEN_ONCE, bad[P_TOKEN_ONCE], "no token twice")
    report.check(P_TOKEN_ORDER, bad[P_TOKEN_ORDER], "every later request got a higher token")
    if "--fifo" in flags:
        report.check(P_FIFO, bad[P_FIFO], f"{waiters_checked} waiters checked against every later request")
    else:
        report.check(P_WRITER_FIRST, bad[P_WRITER_FIRST],
                     f"{waiters_checked} waiting writers checked against every later reader")
    report.check(P_BOUND, bad[P_BOUND], f"outcomes: {dict(sorted(errors.items())) or 'all granted'}")
    report.check(P_REFUSAL, bad[P_REFUSAL], f"{errors['invalid_argument']} mismatched limits refused with LS003")
    report.check(P_ERRORS, bad[P_ERRORS], "none")
    report.check(P_VACUOUS, bad[P_VACUOUS],
                 f"{n_kills} kills, {n_freezes} freezes, {outlived} grants released after their deadline")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
