"""Where the warehouse lies on a network file system (as /proc/mounts says), a run says that
only one host may write it; a local disk says nothing. PLACEFLOW_HOME roots a flow's relative
warehouse path, so that every worker names the one file."""

from __future__ import annotations

from pathlib import Path

from placeflow.config import warehouse_db
from placeflow.store.dbfile import network_filesystem, shared_note


def test_the_mount_holding_the_folder_says_whether_it_is_shared(tmp_path: Path) -> None:
    """The longest mount point above the warehouse's folder decides: nfs4 and cifs are network
    file systems, ext4 and tmpfs are not; no mount table, no word."""
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/sda1 / ext4 rw 0 0\n"
        "server:/export /srv/share nfs4 rw 0 0\n"
        "//nas/team /srv/share/smb cifs rw 0 0\n"
        "tmpfs /srv/share/scratch tmpfs rw 0 0\n"
    )
    assert network_filesystem("/srv/share/wh.duckdb", mounts) == "nfs4"
    assert network_filesystem("/srv/share/smb/x/wh.duckdb", mounts) == "cifs"
    assert network_filesystem("/srv/share/scratch/wh.duckdb", mounts) is None
    assert network_filesystem("/home/me/wh.duckdb", mounts) is None
    assert network_filesystem("/srv/share/wh.duckdb", tmp_path / "none") is None
    assert shared_note(tmp_path / "wh.duckdb") is None  # the test's own disk is local


def test_a_flows_relative_warehouse_is_rooted_at_placeflow_home() -> None:
    """A relative db under PLACEFLOW_HOME; absolute paths, :memory: and no PLACEFLOW_HOME as
    given."""
    env = {"PLACEFLOW_HOME": "/srv/placeflow"}
    assert warehouse_db("data/placeflow.duckdb", env) == "/srv/placeflow/data/placeflow.duckdb"
    assert warehouse_db("/var/wh.duckdb", env) == "/var/wh.duckdb"
    assert warehouse_db(":memory:", env) == ":memory:"
    assert warehouse_db("data/placeflow.duckdb", {}) == "data/placeflow.duckdb"
