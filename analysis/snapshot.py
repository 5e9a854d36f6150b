"""The published snapshot of the warehouse: what readers open while a run writes.

DuckDB lets one process write a file and refuses every other process, readers
included, while it does; a run holds the warehouse for its whole length. So each
command that writes publishes a copy when it is done, ``<name>.snapshot<ext>``
beside the warehouse (data/warehouse.snapshot.duckdb), and a reader refused by
the lock opens that copy instead.

The copy is made into a temporary file in the same folder, synced, then renamed
over the old snapshot: a reader that has the old one open keeps reading a whole,
consistent file (POSIX keeps a renamed-over file alive for those that opened it).
While copying, a read-only connection to the warehouse holds DuckDB's shared lock,
so no writer can start changing the file under the copy. The snapshot carries
the warehouse's size and mtime: when they still match, nothing was written since,
and publishing is skipped.

A run changes a small part of a warehouse of months, so the copy is not made from
nothing when it can be helped: the snapshot a publish replaces is kept, by a hard
link, as the spare (``.<name>.snapshot<ext>.spare``), and the next publish brings
the spare up to date by writing only the chunks that differ from the warehouse,
then renames it over the snapshot. A spare that a reader still has open (it opened
that snapshot before it was replaced, and holds DuckDB's shared lock on it) is
never written: it is dropped, and the copy is made whole, as before. The spare
costs as much disk as the snapshot.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import struct
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb

log = logging.getLogger("goodput.snapshot")
FICLONE = 0x40049409  # linux/fs.h: share the blocks (XFS, btrfs), no data copied
_LOCKED = re.compile(r"Could not set lock on file|Conflicting lock")
_PID = re.compile(r"\(PID (\d+)\)")
_TMP = re.compile(r"\.(?P<pid>\d+)\.tmp$")


def snapshot_path(db: Path | str) -> Path:
    db = Path(db)
    return db.with_name(f"{db.stem}.snapshot{db.suffix}")


def is_locked(exc: BaseException) -> bool:
    """DuckDB refused the file because another process holds its lock."""
    return isinstance(exc, duckdb.IOException) and bool(_LOCKED.search(str(exc)))


@dataclass
class Published:
    path: Path
    done: bool  # False: skipped, ``why`` says why
    why: str = ""
    method: str = ""  # changed chunks (of the spare), reflink, copy_file_range or copy
    size: int = 0
    seconds: float = 0.0


def publish(db: Path | str) -> Published:
    """Copy the warehouse to its snapshot, unless nothing was written since the last one. Call it once every
    connection of this process that writes the warehouse is closed."""
    db = Path(db)
    snap = snapshot_path(db)
    if not db.is_file():
        return Published(snap, False, "no warehouse")
    try:  # the shared lock: no writer can start while the file is copied
        guard = duckdb.connect(str(db), read_only=True)
    except duckdb.Error as exc:  # another writer got in first; it publishes when it is done
        return Published(snap, False, f"the warehouse is open elsewhere ({str(exc).splitlines()[0][:120]})")
    try:
        if Path(f"{db}.wal").exists():  # changes not yet in the file itself: a copy would miss them
            return Published(snap, False, "the warehouse has a write-ahead log not yet checkpointed")
        st = db.stat()
        if snap.is_file() and _marker(snap.stat()) == _marker(st):
            return Published(snap, False, "nothing written since the last snapshot", size=st.st_size)
        _remove_leftovers(snap)
        started = time.perf_counter()
        method = _publish_copy(db, snap, st)
        return Published(snap, True, method=method, size=st.st_size, seconds=time.perf_counter() - started)
    except OSError as exc:  # a full disk costs the readers a fresh snapshot, never the run its data
        return Published(snap, False, f"cannot write {snap}: {exc.strerror or exc}")
    finally:
        guard.close()


def _marker(st: os.stat_result) -> tuple[int, int]:
    return st.st_size, st.st_mtime_ns


def spare_path(snap: Path) -> Path:
    return snap.with_name(f".{snap.name}.spare")


def _publish_copy(db: Path, snap: Path, st: os.stat_result) -> str:
    tmp = snap.with_name(f".{snap.name}.{os.getpid()}.tmp")
    spare = spare_path(snap)
    try:
        method = None
        if spare.is_file():
            os.replace(spare, tmp)  # a publish that dies from here on leaves a leftover, not a half-updated spare
            method = _update_spare(db, tmp, st.st_size)
            if method is None:
                tmp.unlink()
        if method is None:
            with open(db, "rb") as src, open(tmp, "wb") as dst:
                method = copy_file(src, dst, st.st_size)
        with open(tmp, "rb+") as dst:
            os.utime(dst.fileno(), ns=(st.st_atime_ns, st.st_mtime_ns))  # the marker: the warehouse's size and mtime
            os.fsync(dst.fileno())
        _keep_as_spare(snap, spare)
        os.replace(tmp, snap)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(snap.parent)
    return method


def _keep_as_spare(snap: Path, spare: Path) -> None:
    """The snapshot about to be replaced becomes the next publish's spare (readers may still have it open: the lock
    tells). Where the file system has no hard links, there is no spare: each publish copies the whole file."""
    spare.unlink(missing_ok=True)
    try:
        os.link(snap, spare)
    except FileNotFoundError:  # no snapshot yet
        pass
    except OSError as exc:
        log.debug("no spare snapshot kept: %s", exc)


CHUNK = 1 << 20


def _update_spare(db: Path, spare: Path, size: int) -> str | None:
    """Make the spare a copy of the warehouse by writing only the chunks that differ, unless a reader has it open
    (it holds DuckDB's shared lock, POSIX like ours: then None, and the spare is not touched)."""
    with open(spare, "rb+") as dst:
        if not _lock_alone(dst.fileno()):
            return None
        with open(db, "rb") as src:
            dst.truncate(size)
            written = 0
            for offset in range(0, size, CHUNK):
                chunk = os.pread(src.fileno(), CHUNK, offset)
                if os.pread(dst.fileno(), CHUNK, offset) != chunk:
                    os.pwrite(dst.fileno(), chunk, offset)
                    written += len(chunk)
    log.debug("snapshot spare updated: %.2f of %.2f GB written", written / 1e9, size / 1e9)
    return "changed chunks"


def copy_file(src, dst, size: int) -> str:
    """Copy ``size`` bytes between open files, as cheaply as the file system allows: a reflink shares the
    blocks (XFS, btrfs: no data copied); copy_file_range copies inside the kernel; else read and write."""
    try:
        import fcntl

        fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
        return "reflink"
    except (ImportError, OSError):
        pass
    try:
        done = 0
        while done < size:
            n = os.copy_file_range(src.fileno(), dst.fileno(), size - done, done, done)
            if n == 0:
                break
            done += n
        if done == size:
            return "copy_file_range"
    except (AttributeError, OSError):  # not Linux, or not between these two files
        pass
    src.seek(0)
    dst.seek(0)
    dst.truncate()
    shutil.copyfileobj(src, dst, 16 << 20)
    return "copy"


def _lock_alone(fd: int) -> bool:
    """An exclusive lock on the whole file, or False when someone holds a lock on it. An open file description lock
    where Linux has them: it conflicts with DuckDB's POSIX lock even when this process holds that one (a reader in
    this process); elsewhere a POSIX lock, which sees other processes' readers only."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        if hasattr(fcntl, "F_OFD_SETLK"):  # struct flock: type, whence, start, len 0 (to the end), pid 0
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        else:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_leftovers(snap: Path) -> None:
    """Temporary copies a killed publisher left behind (its process is gone)."""
    for tmp in snap.parent.glob(f".{snap.name}.*.tmp"):
        match = _TMP.search(tmp.name)
        if match and not _alive(int(match["pid"])):
            tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def connect_reader(db: Path | str, config: dict) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the warehouse, or, while another process writes it, to its published snapshot
    (one line on the ``goodput.snapshot`` logger says so). No snapshot yet: DuckDB's refusal, as before."""
    try:
        return duckdb.connect(str(db), read_only=True, config=config)
    except duckdb.IOException as exc:
        snap = snapshot_path(db)
        if not is_locked(exc) or not snap.is_file():
            raise
        holder = _PID.search(str(exc))
        written = datetime.fromtimestamp(snap.stat().st_mtime, timezone.utc)
    con = duckdb.connect(str(snap), read_only=True, config=config)
    log.warning(f"another process{f' (PID {holder[1]})' if holder else ''} is writing the warehouse; "
                f"answering from the state published at {written:%Y-%m-%d %H:%M:%S} UTC ({snap})")
    return con
