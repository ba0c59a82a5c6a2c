"""Prints the table of Benchmarks/run from spin-load's JSON lines (median of the rounds).

    python3 Benchmarks/table.py RESULTS.jsonl "1 100 1000 10000"

Exits 1 when a scenario that should have run has no figure (the --smoke check).
"""
import json
import statistics
import sys

results = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
fanout_sizes = [int(size) for size in sys.argv[2].split()]
missing = []


def runs(scenario, target, subscribers=None):
    return [r for r in results if r["scenario"] == scenario and r["target"] == target
            and (subscribers is None or r.get("subscribers") == subscribers)]


def median(scenario, target, key, subscribers=None, required=True):
    values = []
    for r in runs(scenario, target, subscribers):
        value = r
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, (int, float)):
            values.append(value)
    if not values:
        if required:
            missing.append(f"{scenario} {target} {subscribers or ''} {key}".strip())
        return None
    return statistics.median(values)


def rate(value):
    if value is None:
        return "—"
    return f"{value / 1e6:.2f} M" if value >= 1e6 else f"{value / 1e3:.1f} k" if value >= 1e3 else f"{value:.0f}"


def ms(*values):
    return "/".join("—" if v is None else f"{v / 1000:.2f}" for v in values)


def ratio(a, b):
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}"


rows = []
ours = median("post", "ours", "events_per_s")
peer = median("post", "peer", "events_per_s")
nginx = median("post", "nginx", "events_per_s")
nginx_wrk = median("post", "nginx-wrk", "events_per_s")
rows.append(("post, 64 conns, events/s (fsync batch)", rate(ours), rate(peer), ratio(ours, peer),
             f"nginx 204: {rate(nginx)} (spin-load), {rate(nginx_wrk)} (wrk)"))
lat = lambda t, k: median("post", t, f"latency.{k}")
rows.append(("post latency p50/p99 ms", ms(lat("ours", "p50_us"), lat("ours", "p99_us")),
             ms(lat("peer", "p50_us"), lat("peer", "p99_us")), ratio(lat("ours", "p99_us"), lat("peer", "p99_us")) + " (p99)",
             f"nginx: {ms(lat('nginx', 'p50_us'), lat('nginx', 'p99_us'))} (spin-load)"))
half_ours = lambda k: median("post-rate", "ours", k)
half_peer = lambda k: median("post-rate", "peer", k)
half_none = lambda k: median("post-rate", "ours-none", k)
rows.append((f"post at half saturation ({rate(half_ours('rate'))}/s asked), latency p50/p99 ms",
             ms(half_ours("latency.p50_us"), half_ours("latency.p99_us")),
             ms(half_peer("latency.p50_us"), half_peer("latency.p99_us")),
             f"{ratio(half_ours('latency.p99_us'), half_peer('latency.p99_us'))} (p99)", ""))
rows.append(("post at half saturation, fsync none (the peer keeps no disk), p50/p99 ms",
             ms(half_none("latency.p50_us"), half_none("latency.p99_us")),
             ms(half_peer("latency.p50_us"), half_peer("latency.p99_us")),
             f"{ratio(half_none('latency.p99_us'), half_peer('latency.p99_us'))} (p99)", ""))
machine = median("post", "ours-machine", "events_per_s")
rows.append(("post events/s, JSON machine twin of the counter (fsync batch)", rate(machine), "—",
             f"machine/counter {ratio(machine, ours)}", ""))
none = median("post", "ours-none", "events_per_s")
always = median("post", "ours-always", "events_per_s")
rows.append(("post events/s, fsync none", rate(none), "—", f"batch/none {ratio(ours, none)}", ""))
rows.append(("post events/s, fsync always", rate(always), "—", f"always/none {ratio(always, none)}", ""))
postgres = median("post", "ours-postgres", "events_per_s", required=False)
if postgres is not None:
    rows.append(("post events/s, postgres backend (fsync batch: synchronous_commit on)", rate(postgres), "—",
                 f"postgres/file {ratio(postgres, ours)}, p50/p99 ms {ms(lat('ours-postgres', 'p50_us'), lat('ours-postgres', 'p99_us'))}", ""))
owner3 = median("post", "ours-pg3-owner", "events_per_s", required=postgres is not None)
relay3 = median("post", "ours-pg3-relay", "events_per_s", required=postgres is not None)
if owner3 is not None or relay3 is not None:
    rows.append(("post events/s, 3 postgres nodes: through the counter's owner", rate(owner3), "—",
                 f"3 nodes/1 node {ratio(owner3, postgres)}, p50/p99 ms {ms(lat('ours-pg3-owner', 'p50_us'), lat('ours-pg3-owner', 'p99_us'))}", ""))
    rows.append(("post events/s, 3 postgres nodes: through a node relaying to the owner", rate(relay3), "—",
                 f"relay/owner {ratio(relay3, owner3)}, p50/p99 ms {ms(lat('ours-pg3-relay', 'p50_us'), lat('ours-pg3-relay', 'p99_us'))}", ""))
rows.append(("post latency p99 ms, none/always", ms(lat("ours-none", "p99_us"), lat("ours-always", "p99_us")), "—", "", ""))

ours = median("ws-events", "ours", "events_per_s")
peer = median("ws-events", "peer", "events_per_s")
rows.append(("ws-events, 64 streams, acked events/s", rate(ours), rate(peer), ratio(ours, peer), ""))
lat = lambda t, k: median("ws-events", t, f"latency.{k}")
rows.append(("ws-events ack latency p50/p99 ms", ms(lat("ours", "p50_us"), lat("ours", "p99_us")),
             ms(lat("peer", "p50_us"), lat("peer", "p99_us")), ratio(lat("ours", "p99_us"), lat("peer", "p99_us")) + " (p99)", ""))
msgs = lambda t: median("ws-events", t, "messages_per_s")
rows.append(("ws-events state messages/s received", rate(msgs("ours")), rate(msgs("peer")), ratio(msgs("ours"), msgs("peer")), ""))

for size in fanout_sizes:
    m = lambda t: median("fanout", t, "messages_per_s", size)
    posted = lambda t: median("fanout", t, "events_per_s", size)
    rows.append((f"fanout {size} subs, messages/s (events/s POSTed of 100 asked)",
                 f"{rate(m('ours'))} ({rate(posted('ours'))})", f"{rate(m('peer'))} ({rate(posted('peer'))})",
                 ratio(m("ours"), m("peer")), ""))
    lat = lambda t, k: median("fanout", t, f"latency.{k}", size)
    extra = lambda t: (f" lost {median('fanout', t, 'lost', size) or 0:.0f}, "
                       f"behind {median('fanout', t, 'behind', size) or 0:.0f}")
    rows.append((f"fanout {size} POST→receipt p50/p99/max ms",
                 ms(lat("ours", "p50_us"), lat("ours", "p99_us"), lat("ours", "max_us")) + extra("ours"),
                 ms(lat("peer", "p50_us"), lat("peer", "p99_us"), lat("peer", "max_us")) + extra("peer"),
                 ratio(lat("ours", "p99_us"), lat("peer", "p99_us")) + " (p99)", ""))

idle = lambda t: median("idle", t, "kib_per_connection")
count = median("idle", "ours", "connections")
rows.append((f"idle streams ({count or 0:.0f}), server KiB/connection",
             "—" if idle("ours") is None else f"{idle('ours'):.1f}",
             "—" if idle("peer") is None else f"{idle('peer'):.1f}", ratio(idle("ours"), idle("peer")), ""))

header = ("scenario", "ours", "peer", "ratio", "ceiling")
widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(5)]
for index, row in enumerate([header] + rows):
    print("| " + " | ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)) + " |")
    if index == 0:
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
if missing:
    print("missing figures: " + "; ".join(missing), file=sys.stderr)
    sys.exit(1)
