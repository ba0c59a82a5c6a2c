"""A container's CPU limit: the server runs as many event loops as the CPU time its control
group allows, not as many as the CPUs it may run on (docker run --cpus=1 on a host of
many cores), and says so in its log. The group is made here, in the machine's real
cgroup file system (v1's cpu controller, or v2 with the cpu controller enabled); the
test is skipped where neither can be written (not root, no cgroup file system)."""
from __future__ import annotations

import math
import os
import re
import time
import uuid
from pathlib import Path

import pytest

from spin_e2e import SpinServer

V1 = Path("/sys/fs/cgroup/cpu")
V2 = Path("/sys/fs/cgroup")


def make_group(cores: float) -> tuple[Path, Path]:
    """A new group limited to `cores` CPUs: (its directory, the control file set)."""
    name = f"spin-e2e-{uuid.uuid4().hex[:8]}"
    period = 100_000
    quota = int(cores * period)
    if (V1 / "cpu.cfs_quota_us").exists():
        group = V1 / name
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text(f"{period}\n")
        (group / "cpu.cfs_quota_us").write_text(f"{quota}\n")
        return group, group / "cpu.cfs_quota_us"
    if "cpu" in (V2 / "cgroup.subtree_control").read_text().split():
        group = V2 / name
        group.mkdir()
        (group / "cpu.max").write_text(f"{quota} {period}\n")
        return group, group / "cpu.max"
    raise PermissionError("no writable cgroup with a cpu controller")


def remove_group(group: Path) -> None:
    for _ in range(50):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)


class LimitedServer(SpinServer):
    """A spin-server started inside `group`: a shell puts itself there and executes the
    server (same process)."""

    def __init__(self, *args, group: Path, **kwargs):
        super().__init__(*args, **kwargs)
        self.group = group

    def command(self) -> list[str]:
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.group)] + super().command()


def loop_threads(pid: int) -> int:
    return sum(1 for task in Path(f"/proc/{pid}/task").iterdir()
               if (task / "comm").read_text().startswith("spin-loop"))


@pytest.fixture
def limited_group():
    if os.geteuid() != 0:
        pytest.skip("making a control group needs root")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("a limit of one CPU changes nothing on a one-CPU machine")
    try:
        group, control = make_group(1.0)
    except (OSError, PermissionError) as error:
        pytest.skip(f"no writable cgroup with a cpu controller: {error}")
    yield group, control
    remove_group(group)


def test_one_cpu_of_time_gives_one_event_loop_and_the_log_says_why(server_bin, tmp_path, limited_group):
    group, control = limited_group
    allowed = len(os.sched_getaffinity(0))
    server = LimitedServer(server_bin, tmp_path / "limited", group=group).start()
    try:
        assert str(server.pid) in (group / "cgroup.procs").read_text().split()
        assert loop_threads(server.pid) == 1, server.log_tail()
        line = re.search(r"(\d+) event loop\(s\): (\d+) CPU\(s\) allowed; a control group limits its CPU time to "
                         r"([0-9.]+) CPUs, (\S+)", server.log())
        assert line, server.log_tail()
        assert (int(line.group(1)), int(line.group(2)), float(line.group(3))) == (1, allowed, 1.0)
        # The file the server names is the group's, as the process sees it.
        assert Path(line.group(4)).name == control.name
        # And it serves as it does anywhere.
        assert server.post_events("counter", [{"type": "increase"}]).status_code == 202
    finally:
        assert server.terminate() == 0, server.log_tail()


def test_the_shared_server_has_a_loop_per_cpu_it_may_use(server):
    allowed = len(os.sched_getaffinity(server.pid))
    line = re.search(r"(\d+) event loop\(s\): (\d+) CPU\(s\) allowed(?:; a control group limits its CPU time to "
                     r"([0-9.]+) CPUs)?", server.log())
    assert line, server.log_tail()
    expected = allowed if line.group(3) is None else max(1, min(allowed, math.ceil(float(line.group(3)))))
    assert (int(line.group(1)), int(line.group(2))) == (expected, allowed)
    assert loop_threads(server.pid) == expected
