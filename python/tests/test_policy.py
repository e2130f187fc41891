"""cache_ext policies written in Python: a Python FIFO runs as the built-in
one does (same counters, same hook counts), and a policy that raises, runs
past its budget (an endless loop included), keeps its context past the call
or is not registered stops the run with one line, never a hang."""

from __future__ import annotations

import time

import pytest

import foliosim

# Two passes over 32 MiB through a 12 MiB group: reclaim all along.
JOB = "[r]\nfilename=f\nsize=32m\nrw=read\nbs=4k\nloops=2\ninvalidate=0\n"
MACHINE = {"memory": "256M", "memcg_limit": "12M"}


class Fifo:
    """cache_ext's fifo.bpf.c, as crates/foliosim/src/policy/fifo_mru.rs."""

    def init(self, cx):
        self.list = cx.list_create()

    def folio_added(self, cx, folio):
        cx.list_add_tail(self.list, folio)

    def evict_folios(self, cx):
        cx.list_iterate(self.list, lambda folio: "evict")


def job(tmp_path):
    p = tmp_path / "r.fio"
    p.write_text(JOB)
    return p


def run(tmp_path, policy):
    return foliosim.run(job(tmp_path), machine={**MACHINE, "policy": policy}, timeline=False)


def test_a_python_fifo_runs_as_the_built_in_fifo(tmp_path):
    py = run(tmp_path, Fifo)
    rs = run(tmp_path, "fifo")
    assert py.raw["cache_ext"]["policy"] == "py:Fifo"
    assert py.raw["cache_ext"]["stats"] == rs.raw["cache_ext"]["stats"]
    assert py.raw["cache_ext"]["stats"]["candidates_reclaimed"] > 0
    assert py.vmstat == rs.vmstat and py.memcg == rs.memcg
    assert py.elapsed_s == rs.elapsed_s
    # The registration was for that run only.
    with pytest.raises(ValueError, match='unknown policy "py:Fifo"'):
        run(tmp_path, "py:Fifo")


def test_a_policy_sees_flags_keys_and_current(tmp_path):
    seen = {}

    class Probe(Fifo):
        def folio_added(self, cx, folio):
            super().folio_added(cx, folio)
            mapping, index = cx.folio_key(folio)
            seen.setdefault("first", (mapping, index, cx.comm, cx.folio_test(folio, "uptodate"),
                                      cx.folio_test(folio, "locked"), cx.list_of(folio) == self.list))
            seen["max_index"] = max(seen.get("max_index", 0), index)

    run(tmp_path, Probe)
    mapping, index, comm, uptodate, locked, listed = seen["first"]
    # The read is in flight when the folio is added: locked, not uptodate.
    assert (index, comm, uptodate, locked, listed) == (0, "r", False, True, True)
    assert seen["max_index"] == (32 << 20) // 4096 - 1


def test_a_raising_callback_stops_the_run_with_one_line(tmp_path):
    class Boom(Fifo):
        def folio_accessed(self, cx, folio):
            raise KeyError("no\nsuch folio")

    with pytest.raises(ValueError) as e:
        run(tmp_path, Boom)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == "--policy: policy py:Boom: folio_accessed: KeyError: 'no\\nsuch folio'"


def test_an_endless_callback_is_stopped_by_its_budget(tmp_path):
    class Endless(Fifo):
        budget_ms = 50

        def evict_folios(self, cx):
            while True:
                pass

    t = time.monotonic()
    with pytest.raises(ValueError, match=r"^--policy: policy py:Endless: evict_folios: over its budget of 50 ms per callback$"):
        run(tmp_path, Endless)
    assert time.monotonic() - t < 30
    # No interrupt is left pending for the code that follows.
    deadline = time.monotonic() + 0.3
    n = 0
    while time.monotonic() < deadline:
        n += 1
    assert n > 0
    assert run(tmp_path, Fifo).raw["cache_ext"]["stats"]["evict_calls"] > 0


def test_bad_policies_are_refused_with_one_line(tmp_path):
    with pytest.raises(ValueError, match=r'^--policy: unknown policy "py:nope": no Python policy registered'):
        run(tmp_path, "py:nope")

    class BadInit(Fifo):
        def init(self, cx):
            raise RuntimeError("cannot start")

    with pytest.raises(ValueError, match=r"^--policy: policy py:BadInit: init: RuntimeError: cannot start$"):
        run(tmp_path, BadInit)

    def factory():
        raise OSError("no policy here")

    with pytest.raises(ValueError, match=r"^--policy: policy py:factory: creating it: OSError: no policy here$"):
        run(tmp_path, factory)

    class Kept(Fifo):
        def folio_added(self, cx, folio):
            if hasattr(self, "old"):
                self.old.list_len(self.list)
            self.old = cx
            super().folio_added(cx, folio)

    with pytest.raises(ValueError, match="used outside its callback"):
        run(tmp_path, Kept)

    class BadVerdict(Fifo):
        def evict_folios(self, cx):
            cx.list_iterate(self.list, lambda folio: 7)

    with pytest.raises(ValueError, match="evict_folios: ValueError: list_iterate: a verdict is"):
        run(tmp_path, BadVerdict)

    with pytest.raises(TypeError):
        foliosim.register_policy("x", 3)
    with pytest.raises(ValueError, match="use letters"):
        foliosim.register_policy("a b", Fifo)


SCENARIO = """
[machine]
memory = "256M"

[[cgroup]]
path = "app"
memory.max = "12M"
policy = "{policy}"

[[file]]
name = "data"
size = "32M"

[[process]]
name = "reader"
cgroup = "app"

[[process.thread]]
steps = [
  {{ op = "read", file = "data", bs = "4k", pattern = "seq", passes = 2 }},
]
"""


def test_a_scenario_cgroup_takes_a_registered_policy(tmp_path):
    calls = {"added": 0, "evict": 0}

    class Counting(Fifo):
        def folio_added(self, cx, folio):
            calls["added"] += 1
            super().folio_added(cx, folio)

        def evict_folios(self, cx):
            calls["evict"] += 1
            super().evict_folios(cx)

    spec = foliosim.register_policy("scnfifo", Counting)
    assert spec == "py:scnfifo"
    try:
        runs = {}
        for name, policy in (("py", spec), ("rs", "fifo")):
            sc = tmp_path / f"{name}.toml"
            sc.write_text(SCENARIO.format(policy=policy))
            runs[name] = foliosim.run(sc, timeline=False)
    finally:
        foliosim.unregister_policy("scnfifo")
    # Every page of the first pass was added; reclaim asked the policy.
    assert calls["added"] >= (32 << 20) // 4096 and calls["evict"] > 0
    assert runs["py"].raw["cgroups"]["app"] == runs["rs"].raw["cgroups"]["app"]
    ce = {k: r.raw["cgroup_cache_ext"]["app"] for k, r in runs.items()}
    assert (ce["py"]["policy"], ce["rs"]["policy"]) == ("py:scnfifo", "fifo")
    assert ce["py"]["stats"] == ce["rs"]["stats"]
    assert ce["py"]["stats"]["evict_calls"] == calls["evict"]
    # The policy's evictions go by cache_ext's reclaim_pages() path, which
    # counts no pgsteal: memory.stat's pgsteal_file is the kernel loop's.
    stats = ce["py"]["stats"]
    assert stats["candidates_reclaimed"] > 0
    assert stats["folio_evicted"] == (
        stats["candidates_reclaimed"] + runs["py"].raw["cgroups"]["app"]["pgsteal_file"]
    )
