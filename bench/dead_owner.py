"""A dead owner on another host, in real time: how long until others stop waiting for it and
its resume carries its run on (issue 46; tests/e2e/test_dead_owner.py proves the same on an
injected clock).

A sandbox is served on loopback. The owner, `placeflow run A.csv --route job` in a process with
a host name of its own (`unshare --uts` where it works, else the name given to the process),
claims A's places and sends its job's POST, which the sandbox holds; the owner is SIGKILLed
there and the POST dropped (the service never made the job). Then, on this host:

- `placeflow run B.csv` (A's places and as many more) starts at once: it buys only its own and
  waits for A's, saying so on stderr; the time from the kill to its exit is measured;
- `placeflow resume A` is tried every 5 s from the kill: refused while A's lease runs; the time
  from the kill to the first resume that completes is measured.

The sandbox's own counts say whether any place was billed twice.

    python bench/dead_owner.py [--places 200] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from placeflow.emulator import KeySpec, Sandbox, SandboxConfig

KEY = "sk_bench_dead_owner_4f4f"
OTHER_HOST = "far-host"


def write_places(path: Path, n: int, start: int = 0) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "name", "address", "city", "country"])
        for i in range(start, start + n):
            w.writerow([f"u{i}", f"Corner Shop {i}", f"{i} Elm Street", "Springfield", "USA"])
    return path


def own_host_name() -> list[str]:
    """The prefix that runs a command under a host name of its own (empty: none works here)."""
    probe = ["unshare", "--uts", "sh", "-c", f"hostname {OTHER_HOST} && hostname"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode == 0 and done.stdout.strip() == OTHER_HOST:
        return ["unshare", "--uts", "sh", "-c", f'hostname {OTHER_HOST} && exec "$@"', "sh"]
    return []


def placeflow(*args: str) -> list[str]:
    return [sys.executable, "-m", "placeflow.cli", *args]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--places", type=int, default=200)
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="placeflow-dead-owner-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    db = work / "wh.duckdb"
    a = write_places(work / "a.csv", args.places)
    b = write_places(work / "b.csv", 2 * args.places)  # A's places and as many more
    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY, credits=10_000_000),),
                                    rows_per_second=2_000.0))  # fmt: skip
    out: dict[str, Any] = {"places": args.places}
    with sandbox.serve() as served:
        env = {**os.environ, "PLACEFLOW_API_KEY": KEY, "PLACEFLOW_BASE_URL": served.base_url}
        env.pop("PREFECT_API_URL", None)
        prefix = own_host_name()
        if prefix:
            owner_cmd = prefix + placeflow("run", str(a), "--db", str(db), "--route", "job")
        else:  # no UTS namespace here: the process is given the name instead
            owner_cmd = [sys.executable, "-c", "import socket, sys, runpy;"
                         f" socket.gethostname = lambda: {OTHER_HOST!r};"
                         " sys.argv = ['placeflow'] + sys.argv[1:];"
                         " runpy.run_module('placeflow.cli', run_name='__main__')",
                         "run", str(a), "--db", str(db), "--route", "job"]  # fmt: skip
        out["host_name_by"] = "unshare --uts" if prefix else "socket.gethostname"
        gate = sandbox.backend.faults.hold("POST /v1/jobs/enrich")
        owner = subprocess.Popen(owner_cmd, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        if not gate.arrived.wait(300):
            owner.kill()
            raise SystemExit("the owner never sent its POST")
        owner.kill()
        owner.wait()
        killed = time.monotonic()
        gate.open(drop=True)
        overlap = subprocess.Popen(
            placeflow("run", str(b), "--db", str(db), "--route", "job", "--json"),
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        run_a = _owned_run(db)
        resumed_at, tries = None, 0
        while resumed_at is None and time.monotonic() - killed < 600:
            time.sleep(5.0)
            tries += 1
            done = subprocess.run(placeflow("resume", run_a, "--db", str(db), "--json"),
                                  env=env, capture_output=True, text=True, check=False)  # fmt: skip
            if done.returncode == 0:
                resumed_at = time.monotonic() - killed
                out["resume"] = json.loads(done.stdout.strip().splitlines()[-1])["status"]
        stdout, stderr = overlap.communicate(timeout=600)
        ended = time.monotonic() - killed
        summary = json.loads(stdout.strip().splitlines()[-1])
        stats = sandbox.stats()["keys"][KEY]
    out.update(
        overlap_seconds_after_kill=round(ended, 1),
        overlap_status=summary.get("status"),
        overlap_exit=overlap.returncode,
        overlap_submitted=summary.get("submitted"),
        overlap_claimed=summary.get("claimed"),
        overlap_stderr=[line for line in stderr.splitlines() if "wait" in line],
        resume_seconds_after_kill=None if resumed_at is None else round(resumed_at, 1),
        resume_tries=tries,
        billed_rows=stats["billed"],
        credits=stats["credits"],
    )
    print(json.dumps(out, indent=2, default=str))
    return 0


def _owned_run(db: Path) -> str:
    import duckdb

    for _ in range(100):
        try:
            with duckdb.connect(str(db), read_only=True) as con:
                row = con.execute("select run_id from runs order by created_at limit 1").fetchone()
            if row:
                return str(row[0])
        except duckdb.Error:
            pass
        time.sleep(0.2)
    raise SystemExit("no run recorded")


if __name__ == "__main__":
    sys.exit(main())
