"""Power cuts (Tests/powercut): the server under a disk-cache layer that keeps only what
was fsynced (a file's bytes at its fsync, a name at its directory's fsync), killed at
random moments, its storage directory rebuilt as the disk would hold it, and started
again. With `always` and `batch` every acknowledged event survives, and every Gear event
its sender holds is caught once, in order, and none whose cause was lost; with every policy
the server starts, also when a random subset of the unsynced 512-byte sectors reached
the disk (torn writes). The long form is `python3 Tests/powercut/powercut.py --both --cuts 30`.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "powercut"))

import powercut  # noqa: E402

pytestmark = pytest.mark.skipif(powercut.compiler() is None, reason="the power-cut layer is C: no cc, clang or gcc")


@pytest.mark.parametrize("torn", [False, True], ids=["durable-only", "torn-sectors"])
@pytest.mark.parametrize("fsync", ["always", "batch", "none"])
def test_power_cuts_lose_no_acknowledged_event_and_never_stop_start_up(server_bin, tmp_path, fsync, torn):
    # Three cuts: the first starts where the storage directory does not exist yet (its
    # creation must be durable too), the next two on what the cuts before left.
    summary = powercut.run(server_bin, tmp_path, fsync=fsync, torn=torn, cuts=3, seed=len(fsync) + torn,
                           say=lambda line: print(line))
    print(summary.line())
    assert not summary.failures, "\n".join(summary.failures)
    if fsync != "none":   # with none, a cut keeps only what the OS happened to write
        assert summary.pings > 0, "the pinger's Gear events were part of the load"
    assert summary.starts == summary.cuts == 3
    assert summary.acknowledged > 0
    if fsync != "none":
        assert summary.lost == 0
