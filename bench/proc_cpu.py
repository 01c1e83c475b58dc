"""CPU accounting for benchmark targets, read from /proc.

A benchmark target is a process tree: dynalite is one node process, `partita up` is a
supervisor with etcd, storage nodes, a router and more underneath it. The figure we want
is "server CPU per operation", so we sum utime+stime over every live process in the tree
rooted at the pid we spawned, plus cutime+cstime (CPU of children that already exited
and were reaped by a process of the tree), and take the delta over the measured phase.

This kernel has no /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN is off on many
builds), so descendants are found by scanning /proc for parent links; the children files
are used when present because they are cheaper.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Units of utime/stime in /proc/<pid>/stat; 100 on every Linux we target, but read it.
CLOCK_TICKS: int = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The fields of /proc/<pid>/stat that CPU accounting needs (times in clock ticks)."""

    pid: int
    comm: str
    state: str
    ppid: int
    utime: int
    stime: int
    cutime: int
    cstime: int

    @property
    def own_ticks(self) -> int:
        return self.utime + self.stime

    @property
    def reaped_children_ticks(self) -> int:
        return self.cutime + self.cstime


def parse_stat(text: str) -> ProcStat:
    """Parse the content of /proc/<pid>/stat.

    The second field (comm) is in parentheses and may itself contain spaces and
    parentheses, so split on the *last* ')' rather than on whitespace.
    """
    lpar = text.index("(")
    rpar = text.rindex(")")
    pid = int(text[:lpar].strip())
    comm = text[lpar + 1 : rpar]
    rest = text[rpar + 2 :].split()
    # rest[0] is field 3 (state); stat(5) numbers fields from 1, so field N is rest[N - 3].
    return ProcStat(
        pid=pid,
        comm=comm,
        state=rest[0],
        ppid=int(rest[1]),
        utime=int(rest[11]),
        stime=int(rest[12]),
        cutime=int(rest[13]),
        cstime=int(rest[14]),
    )


def read_stat(pid: int, proc: Path = Path("/proc")) -> ProcStat | None:
    """Read one process's stat; None if it has gone (races with exit are normal)."""
    try:
        return parse_stat((proc / str(pid) / "stat").read_text())
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


def _children_from_task_files(pid: int, proc: Path) -> list[int] | None:
    """Children via /proc/<pid>/task/*/children, or None if the kernel lacks the files."""
    task_dir = proc / str(pid) / "task"
    try:
        tids = list(task_dir.iterdir())
    except FileNotFoundError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            out.extend(int(x) for x in (tid / "children").read_text().split())
        except FileNotFoundError:
            if not (tid / "stat").exists():
                continue  # the thread exited between listing and reading
            return None  # the thread exists but the file does not: no kernel support
    return out


def _all_stats(proc: Path) -> Iterable[ProcStat]:
    for entry in proc.iterdir():
        if entry.name.isdigit():
            st = read_stat(int(entry.name), proc)
            if st is not None:
                yield st


def process_tree(root_pid: int, proc: Path = Path("/proc")) -> list[ProcStat]:
    """Stats of root_pid and all its live descendants (empty if root has exited)."""
    root = read_stat(root_pid, proc)
    if root is None:
        return []
    via_task = _children_from_task_files(root_pid, proc)
    if via_task is not None:
        result = [root]
        frontier = via_task
        seen = {root_pid}
        while frontier:
            nxt: list[int] = []
            for pid in frontier:
                if pid in seen:
                    continue
                seen.add(pid)
                st = read_stat(pid, proc)
                if st is None:
                    continue
                result.append(st)
                nxt.extend(_children_from_task_files(pid, proc) or [])
            frontier = nxt
        return result
    # Fallback: one pass over /proc, then walk parent links from the root down.
    by_parent: dict[int, list[ProcStat]] = {}
    for st in _all_stats(proc):
        by_parent.setdefault(st.ppid, []).append(st)
    result = [root]
    stack = [root_pid]
    while stack:
        for child in by_parent.get(stack.pop(), []):
            if child.pid != root_pid:
                result.append(child)
                stack.append(child.pid)
    return result


def tree_cpu_seconds(root_pid: int, proc: Path = Path("/proc")) -> float:
    """CPU seconds used so far by the tree: live processes plus their reaped children.

    A child's time moves into its parent's cutime/cstime when the parent reaps it, so the
    sum stays continuous across a child's exit as long as the parent is in the tree.
    """
    ticks = sum(st.own_ticks + st.reaped_children_ticks for st in process_tree(root_pid, proc))
    return ticks / CLOCK_TICKS


# Options whose value names the process's role, e.g. `partita storage --node-id storage-a`.
_ROLE_OPTIONS = ("--node-id", "--name")


def label_from_cmdline(comm: str, argv: list[str]) -> str:
    """A short role label: the command name plus its sub-command and node id, if any.

    Every Partita process is `python -m partita.cli.main <role> ...`, so the command name
    alone ("python3") would lump router, storage nodes and supervisor together. Skips the
    interpreter's `-m module` / `-c code`, options with their values and file paths;
    keeps the first plain word (the sub-command) and the value of --node-id or --name.
    """
    words: list[str] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-m", "-c") and not words:
            i += 2
            continue
        if arg in _ROLE_OPTIONS and i + 1 < len(argv):
            words.append(argv[i + 1])
            i += 2
            continue
        if arg.startswith("-"):
            # Assume an option takes the next word as its value unless it looks like an
            # option too: sub-commands come before options in every command we label.
            takes_value = "=" not in arg and i + 1 < len(argv) and not argv[i + 1].startswith("-")
            i += 2 if takes_value else 1
            continue
        if not words and "/" not in arg and "." not in arg:
            words.append(arg)
        i += 1
    return " ".join([comm, *words])


def process_label(st: ProcStat, proc: Path = Path("/proc")) -> str:
    try:
        raw = (proc / str(st.pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return st.comm
    return label_from_cmdline(st.comm, [a.decode(errors="replace") for a in raw.split(b"\0") if a])


def tree_cpu_by_process(root_pid: int, proc: Path = Path("/proc")) -> dict[str, float]:
    """CPU seconds per role label in the tree (so readers see router vs storage vs etcd)."""
    out: dict[str, float] = {}
    for st in process_tree(root_pid, proc):
        label = process_label(st, proc)
        out[label] = out.get(label, 0.0) + (st.own_ticks + st.reaped_children_ticks) / CLOCK_TICKS
    return out


def self_cpu_seconds() -> float:
    """This process's own CPU seconds (the benchmark client), user plus system."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime
