"""Spill stores: where the full text of a truncated tool output is kept.

:func:`ctxbudget.truncate_output` shows the model a preview and writes the full text to a
:class:`SpillStore`, so the model can read the rest in parts. A store has one job: write the
text durably and return a location string the model can be told about, or raise. It never
returns a location for data it did not write completely.

Two stores ship here:

- :class:`DirectorySpillStore` (the default): one file per output in a local directory,
  written atomically (temporary file in the same directory, then ``os.replace``), with
  retention by age and total size.
- :class:`FsspecSpillStore`: any `fsspec <https://filesystem-spec.readthedocs.io>`_
  filesystem (S3, GCS, Azure, memory, ...), for agents whose tools read from object storage.

File names are built here, never from unsanitised caller input: a UTC timestamp, a random
token and an optional label reduced to ``[a-z0-9_-]``. The timestamp in the name drives
retention, so both stores clean up the same way without trusting backend modification times.
Retention never removes a file younger than a grace period (``min_age_seconds``): stores in
other processes may share the location, and the file one of them wrote a moment ago is the
one its model was just told to read.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import logging
import os
import re
import secrets
import stat
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ctxbudget.settings import check_count, check_real

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DEFAULT_MAX_AGE_SECONDS",
    "DEFAULT_MAX_TOTAL_BYTES",
    "DEFAULT_MIN_AGE_SECONDS",
    "CleanupReport",
    "DirectorySpillStore",
    "FsspecSpillStore",
    "SpillStore",
    "default_spill_dir",
    "default_spill_store",
    "spill_file_name",
]

logger = logging.getLogger(__name__)

#: Spill files older than this (7 days) are removed by :meth:`DirectorySpillStore.cleanup`.
DEFAULT_MAX_AGE_SECONDS = 7 * 24 * 3600
#: Oldest spill files are removed until the store holds at most this much (1 GiB).
DEFAULT_MAX_TOTAL_BYTES = 1 << 30
#: No spill file younger than this (5 minutes) is removed, whatever the limits: another
#: store sharing the location may have just pointed its model to it.
DEFAULT_MIN_AGE_SECONDS = 5 * 60
#: Opportunistic clean-up runs at most this often per store, on write.
_CLEANUP_INTERVAL_SECONDS = 60.0
#: Text is encoded and written in pieces of this many characters, so a spill of a huge
#: output never holds a second full copy in memory.
_WRITE_CHUNK_CHARS = 1 << 20

_LABEL_MAX = 32
#: A spill file's whole name (matched whole: `$` would also end it before a final newline,
#: and `\d` takes other digits than ASCII ones, so a user's file could pass for one of ours).
_NAME_RE = re.compile(r"([0-9]{8}T[0-9]{12})Z-[0-9a-f]{12}(?:-[a-z0-9_-]{1,32})?\.txt")
_TMP_PREFIX = ".tmp-"


@runtime_checkable
class SpillStore(Protocol):
    """Where the full text of a truncated output goes.

    Implement this to keep spills in your own storage. ``write`` must either store the whole
    text and return a location string that the model's tools can read (a path, a URL), or
    raise. It must never return a location for a partial or failed write.
    """

    def write(self, text: str, *, label: str | None = None) -> str:
        """Store ``text`` and return where it is; raise on any failure.

        Args:
            text: The full output.
            label: A short hint for the name (a tool name, say). Untrusted: sanitise it.
        """
        ...


@dataclass(frozen=True, slots=True)
class CleanupReport:
    """What a clean-up removed.

    Attributes:
        removed_files: Number of spill files (and stale temporary files) deleted.
        removed_bytes: Their total size.
        kept_files: Spill files left in the store. A file another clean-up removed while
            this one ran counts as neither removed nor kept.
        kept_bytes: Their total size.
    """

    removed_files: int
    removed_bytes: int
    kept_files: int
    kept_bytes: int


def spill_file_name(label: str | None = None, *, now: float | None = None) -> str:
    """A unique, safe file name for a spill: UTC timestamp, random token, sanitised label.

    The label keeps only ASCII letters, digits, ``_`` and ``-`` (lower-cased, at most 32
    characters); everything else, path separators and dots included, becomes ``-``.

    >>> name = spill_file_name("../../etc/passwd", now=0.0)
    >>> name.startswith("19700101T000000000000Z-") and name.endswith("-etc-passwd.txt")
    True
    >>> "/" in name or ".." in name
    False

    Raises:
        TypeError: ``label`` is not a ``str`` or ``None`` (pass a call id as ``str(id)``).
    """
    moment = datetime.fromtimestamp(time.time() if now is None else now, tz=timezone.utc)
    stamp = moment.strftime("%Y%m%dT%H%M%S%f")
    name = f"{stamp}Z-{secrets.token_hex(6)}"
    safe = _sanitise_label(label)
    return f"{name}-{safe}.txt" if safe else f"{name}.txt"


def _sanitise_label(label: str | None) -> str:
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be str or None, got {type(label).__name__}")
    if not label:
        return ""
    ascii_only = label.encode("ascii", "replace").decode("ascii").lower()
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", ascii_only).strip("-_")
    return cleaned[:_LABEL_MAX].rstrip("-_")


def _name_time(name: str) -> float | None:
    """The creation time encoded in a spill file name, or ``None`` for foreign files.

    A name of the right shape with an impossible time (month 13, say) is not one of ours.
    """
    match = _NAME_RE.fullmatch(name)
    if match is None:
        return None
    try:
        moment = datetime.strptime(match.group(1), "%Y%m%dT%H%M%S%f")
        return moment.replace(tzinfo=timezone.utc).timestamp()
    except (ValueError, OverflowError):
        return None


def default_spill_dir() -> Path:
    """The directory :class:`DirectorySpillStore` uses when none is given.

    In order: ``$CTXBUDGET_SPILL_DIR``; ``$XDG_CACHE_HOME/ctxbudget/spill``;
    ``%LOCALAPPDATA%\\ctxbudget\\spill`` on Windows; ``~/.cache/ctxbudget/spill``. A per-user
    cache directory rather than a shared temporary one, so other users cannot read the
    outputs or plant files.

    >>> default_spill_dir().name
    'spill'
    """
    explicit = os.environ.get("CTXBUDGET_SPILL_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "ctxbudget" / "spill"
    local = os.environ.get("LOCALAPPDATA")
    if sys.platform == "win32" and local:
        return Path(local) / "ctxbudget" / "spill"
    return Path.home() / ".cache" / "ctxbudget" / "spill"


@dataclass(frozen=True, slots=True)
class _Retention:
    """The limits of one store: age, total size, and the grace period that overrides both."""

    max_age: float | None
    max_total_bytes: int | None
    min_age: float

    def __post_init__(self) -> None:
        check_real("min_age_seconds", self.min_age)
        if self.max_age is not None:
            check_real("max_age_seconds", self.max_age)
        if self.max_total_bytes is not None:
            check_count("max_total_bytes", self.max_total_bytes)
        # numbers of any type checked (a Decimal, 1e9) kept as the arithmetic takes them
        object.__setattr__(self, "min_age", float(self.min_age))
        if self.max_age is not None:
            object.__setattr__(self, "max_age", float(self.max_age))
        if self.max_total_bytes is not None:
            object.__setattr__(self, "max_total_bytes", int(self.max_total_bytes))


def _plan_removals(
    entries: Iterable[tuple[str, float, int]], *, now: float, limits: _Retention
) -> tuple[list[tuple[str, int]], int, int]:
    """Pick spill files to delete: too old, then oldest first while over the size limit.

    ``entries`` are ``(name, created, size)``. A file younger than ``limits.min_age`` is
    never removed: another process may have written it a moment ago and pointed its model
    to it, and size pressure must not take it away (the store may stay over the size limit
    for that long). The newest file is never removed for size either. Returns the removals
    and the count and bytes kept.
    """
    ordered = sorted(entries, key=lambda e: e[1])
    remove: list[tuple[str, int]] = []
    kept: list[tuple[str, float, int]] = []
    for name, created, size in ordered:
        age = now - created
        if limits.max_age is not None and age > limits.max_age and age >= limits.min_age:
            remove.append((name, size))
        else:
            kept.append((name, created, size))
    total = sum(size for _, _, size in kept)
    limit = limits.max_total_bytes
    while limit is not None and total > limit and len(kept) > 1:
        if now - kept[0][1] < limits.min_age:
            break  # oldest first: every file left is younger still
        name, _, size = kept.pop(0)
        remove.append((name, size))
        total -= size
    return remove, len(kept), total


def _remove_planned(
    entries: Iterable[tuple[str, float, int]],
    remove: Callable[[str], object],
    *,
    now: float,
    limits: _Retention,
    removed_files: int = 0,
    removed_bytes: int = 0,
) -> CleanupReport:
    """Remove what :func:`_plan_removals` picks with ``remove(name)``; a failure is kept.

    A file already gone (another clean-up removed it) is neither removed by us nor kept.
    ``removed_files`` and ``removed_bytes`` count what the caller already removed.
    """
    removals, kept_files, kept_bytes = _plan_removals(entries, now=now, limits=limits)
    for name, size in removals:
        try:
            remove(name)
        except FileNotFoundError:
            continue
        except OSError:
            kept_files += 1
            kept_bytes += size
            continue
        removed_files += 1
        removed_bytes += size
    return CleanupReport(removed_files, removed_bytes, kept_files, kept_bytes)


class _Throttle:
    """Says a clean-up on write is due at most once a minute, whichever thread asks."""

    __slots__ = ("_last", "_lock")

    def __init__(self) -> None:
        self._last = float("-inf")
        self._lock = threading.Lock()

    def due(self) -> bool:
        with self._lock:
            moment = time.monotonic()
            if moment - self._last < _CLEANUP_INTERVAL_SECONDS:
                return False
            self._last = moment
            return True


def _check_text(text: object) -> None:
    """Refuse anything but ``str`` before touching storage, naming the type expected.

    Without this, bytes failed deep in the write with an ``AttributeError`` about
    ``encode`` and ``None`` with a ``TypeError`` about ``len()``.
    """
    if isinstance(text, str):
        return
    hint = ""
    if isinstance(text, (bytes, bytearray, memoryview)):
        hint = ": decode it first (ctxbudget.check_text decodes and refuses binary data)"
    raise TypeError(f"text must be str, got {type(text).__name__}{hint}")


def _check_private_directory(directory: Path) -> None:
    """Refuse a spill directory that another local user could change.

    The model is told to read the files written here, so whoever can replace them can put
    words in its context. ``os.makedirs(..., exist_ok=True)`` leaves an existing directory
    as it is and follows a symbolic link, so the directory is checked itself: it must be a
    real directory (not a link, whose target someone else may choose), owned by this user
    and writable by no one else. Modes such as ``0o755`` are fine: others may read, not
    write. It is refused rather than ``chmod``-ed, since it may be the user's own directory.

    Raises:
        PermissionError: It is a symbolic link, owned by another user, or writable by the
            group or others; the message names the path, the problem and the fix.
        NotADirectoryError: Something other than a directory is there.
        FileNotFoundError: It does not exist.
    """
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode):
        raise PermissionError(
            errno.EACCES,
            f"refusing spill directory {directory}: it is a symbolic link, and files written "
            "through it land wherever it points; pass the real directory instead",
        )
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, f"spill directory {directory} is not a directory")
    problem = _ownership_problem(info, directory)
    if problem:
        raise PermissionError(errno.EACCES, f"refusing spill directory {directory}: {problem}")


def _ownership_problem(info: os.stat_result, directory: Path) -> str | None:
    """Why other users could replace files in the directory, or ``None``.

    Windows has no POSIX owner or mode bits to read here; there only the link check holds.
    """
    geteuid: Callable[[], int] | None = getattr(os, "geteuid", None)
    if geteuid is None:  # pragma: no cover - Windows
        return None
    uid = geteuid()
    if info.st_uid != uid:
        return (
            f"it is owned by uid {info.st_uid}, not by this user (uid {uid}), and its owner "
            "could replace the files the model is told to read; use a directory you own"
        )
    writers = [
        who
        for who, bit in (("group", stat.S_IWGRP), ("others", stat.S_IWOTH))
        if info.st_mode & bit
    ]
    if not writers:
        return None
    return (
        f"it is writable by {' and '.join(writers)} (mode {stat.S_IMODE(info.st_mode):#o}), "
        "who could replace the files the model is told to read; run "
        f"`chmod go-w {directory}` or use another directory"
    )


class DirectorySpillStore:
    """Spill files in a local directory: atomic writes, safe names, age and size retention.

    The directory is created (mode ``0o700``) on the first write, not on construction, so
    building a store never fails; a directory that cannot be created or written surfaces as
    the ``OSError`` of :meth:`write`, which :func:`ctxbudget.truncate_output` reports as a
    failed spill.

    The directory must be one only this user can change: a real directory (not a symbolic
    link), owned by the user, not writable by the group or others (``0o700`` as created,
    ``0o755`` is fine). Otherwise :meth:`write` raises ``PermissionError`` saying why, since
    whoever can replace a spill file can put words in the model's context.

    Clean-up only ever touches files whose names this store generates, so pointing it at a
    directory that holds other files is safe. It runs opportunistically before a write (at
    most once a minute per store, before the write so that a full disk gets room) and can be
    called directly. Several stores, in several processes, may share a directory: none
    removes a file younger than ``min_age_seconds``, which may be the one another store's
    model was just told to read.

    Args:
        directory: Where to write; default :func:`default_spill_dir`.
        max_age_seconds: Remove spill files older than this; ``None`` keeps them by age.
        max_total_bytes: Remove the oldest files while the store holds more than this;
            ``None`` for no size limit.
        fsync: Flush the file and the directory to the disk before returning (slower;
            survives a power cut).
        min_age_seconds: Never remove a file younger than this, for age or size (default 5
            minutes). The trade-off: the directory can hold more than ``max_total_bytes``
            (by what was written in that time) and files live at least this long even when
            ``max_age_seconds`` is shorter. ``0`` removes at once, which is only safe when
            no other process writes to the directory.

    Raises:
        ValueError: ``min_age_seconds`` is negative.

    >>> import pathlib, tempfile
    >>> store = DirectorySpillStore(tempfile.mkdtemp())
    >>> location = store.write("line 1\\nline 2\\n", label="grep")
    >>> pathlib.Path(location).read_text(encoding="utf-8")
    'line 1\\nline 2\\n'
    """

    __slots__ = ("_cleanup_due", "_directory", "_fsync", "_limits", "_unusable")

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        max_age_seconds: float | None = DEFAULT_MAX_AGE_SECONDS,
        max_total_bytes: int | None = DEFAULT_MAX_TOTAL_BYTES,
        fsync: bool = False,
        min_age_seconds: float = DEFAULT_MIN_AGE_SECONDS,
    ) -> None:
        try:
            base = default_spill_dir() if directory is None else Path(directory)
            self._directory = base.expanduser().absolute()
            self._unusable: str | None = None
        except RuntimeError as err:  # no home directory to find it under (HOME unset, no
            # passwd entry: a container run as an arbitrary user): each write says so
            self._directory = Path()
            self._unusable = f"no spill directory: {err} (set CTXBUDGET_SPILL_DIR)"
        else:
            # A name that is not valid Unicode (``os.fsdecode`` of a non-UTF-8 one) can be
            # written to, but no hint can tell the model the path: each write says so, before
            # it writes anything.
            try:
                str(self._directory).encode("utf-8")
            except UnicodeEncodeError:
                self._unusable = (
                    f"the spill directory's name {str(self._directory)!r} is not valid"
                    " Unicode: no hint could tell where a file in it is"
                )
        self._limits = _Retention(max_age_seconds, max_total_bytes, min_age_seconds)
        self._fsync = fsync
        self._cleanup_due = _Throttle()

    @property
    def directory(self) -> Path:
        """The absolute directory the files go to.

        Raises:
            OSError: There is none: no directory was given and there is no home directory to
                find the default one under.
        """
        if self._unusable is not None:
            raise OSError(self._unusable)
        return self._directory

    def __repr__(self) -> str:
        where = self._unusable or str(self._directory)
        return f"DirectorySpillStore({where!r})"

    def write(self, text: str, *, label: str | None = None) -> str:
        """Write ``text`` as UTF-8 to a new file and return its absolute path.

        The text goes to a temporary file in the same directory, which is renamed into place
        only once fully written: a reader never sees a partial file, and on failure the
        temporary file is removed and the error is raised.

        Raises:
            PermissionError: The directory is a symbolic link, another user's, or writable
                by others (see the class); or it cannot be written.
            OSError: The directory cannot be created or written, the disk is full, ...
            UnicodeEncodeError: ``text`` holds a lone surrogate (not valid Unicode text).
            TypeError: ``text`` is not a ``str``, or ``label`` not a ``str`` or ``None``.
        """
        _check_text(text)
        name = spill_file_name(label)
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        _check_private_directory(self._directory)
        self._maybe_cleanup()
        final = self._directory / name
        temp = self._directory / f"{_TMP_PREFIX}{name}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        fd = os.open(temp, flags, 0o600)
        try:
            with open(fd, "wb", closefd=True) as handle:
                for start in range(0, len(text), _WRITE_CHUNK_CHARS):
                    chunk = text[start : start + _WRITE_CHUNK_CHARS]
                    handle.write(chunk.encode("utf-8"))
                if self._fsync:
                    handle.flush()
                    os.fsync(handle.fileno())
            os.replace(temp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        if self._fsync:
            try:
                _fsync_directory(self._directory)
            except BaseException:
                final.unlink(missing_ok=True)
                raise
        return str(final)

    def cleanup(self, *, now: float | None = None) -> CleanupReport:
        """Remove spill files past the age limit, then the oldest while over the size limit.

        Temporary files left by a crashed writer are removed once past the age limit (or
        after a day when there is none). No file younger than ``min_age_seconds`` is
        removed. Files this store did not name are never touched. Errors on single files
        (removed concurrently, say) are skipped.

        Args:
            now: The current time, for tests; default ``time.time()``.

        Returns:
            What was removed and what is left.

        Raises:
            PermissionError: The directory is one :meth:`write` refuses; nothing is removed.
        """
        if self._unusable is not None:  # no directory, so nothing in it (not the cwd's files)
            return CleanupReport(0, 0, 0, 0)
        moment = time.time() if now is None else now
        entries: list[tuple[str, float, int]] = []
        removed_files = removed_bytes = 0
        limits = self._limits
        stale_tmp_age = max(
            limits.max_age if limits.max_age is not None else 24 * 3600.0, limits.min_age
        )
        try:
            _check_private_directory(self._directory)
            scan = list(os.scandir(self._directory))
        except FileNotFoundError:
            return CleanupReport(0, 0, 0, 0)
        for entry in scan:
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                if entry.name.startswith(_TMP_PREFIX):
                    created = _name_time(entry.name[len(_TMP_PREFIX) :])
                    if created is not None and moment - created > stale_tmp_age:
                        size = entry.stat(follow_symlinks=False).st_size
                        os.unlink(entry.path)
                        removed_files += 1
                        removed_bytes += size
                    continue
                created = _name_time(entry.name)
                if created is not None:
                    entries.append((entry.name, created, entry.stat().st_size))
            except OSError:
                continue
        return _remove_planned(
            entries,
            lambda name: os.unlink(self._directory / name),
            now=moment,
            limits=limits,
            removed_files=removed_files,
            removed_bytes=removed_bytes,
        )

    def _maybe_cleanup(self) -> None:
        if not self._cleanup_due.due():
            return
        try:
            self.cleanup()
        except OSError:
            logger.debug("spill clean-up of %s failed", self._directory, exc_info=True)


def _fsync_directory(directory: Path) -> None:
    if sys.platform == "win32":  # pragma: no cover - directories cannot be opened there
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FsspecSpillStore:
    """Spill files on any fsspec filesystem (S3, GCS, Azure Blob, memory, ...).

    Each output is written with one ``pipe_file`` call, which object stores apply atomically
    (an object exists whole or not at all); on failure the store tries to remove the object
    and raises. For a local disk prefer :class:`DirectorySpillStore`, whose rename gives the
    same guarantee on a POSIX filesystem, and which checks who else can write the directory
    (this store leaves access control to the backend). Retention works as for
    :class:`DirectorySpillStore`: :meth:`cleanup` runs before a write at most once a minute
    per store (a failed clean-up is logged, never fails the write) and can be called
    directly; it uses the timestamp in the names, not backend modification times. With
    bucket lifecycle rules doing retention instead, pass ``max_age_seconds=None,
    max_total_bytes=None`` to spare the listing.

    Needs ``fsspec`` (``pip install fsspec`` plus the backend's package, e.g. ``s3fs``).

    Args:
        url: Base location, e.g. ``"s3://bucket/agent-spill"`` or ``"memory://spill"``.
        fs: An existing ``fsspec.AbstractFileSystem``; then ``url`` is a path on it.
        storage_options: Passed to ``fsspec.core.url_to_fs`` when ``fs`` is not given.
        max_age_seconds: As for :class:`DirectorySpillStore`.
        max_total_bytes: As for :class:`DirectorySpillStore`.
        min_age_seconds: As for :class:`DirectorySpillStore`.

    Raises:
        ValueError: ``min_age_seconds`` is negative.

    >>> store = FsspecSpillStore("memory://doctest-spill")  # doctest: +SKIP
    >>> store.write("full text", label="grep")  # doctest: +SKIP
    'memory://doctest-spill/20250101T000000000000Z-3f9a1c2b4d5e-grep.txt'
    """

    __slots__ = ("_base", "_cleanup_due", "_fs", "_limits", "_protocol")

    def __init__(
        self,
        url: str,
        *,
        fs: Any = None,
        storage_options: dict[str, Any] | None = None,
        max_age_seconds: float | None = DEFAULT_MAX_AGE_SECONDS,
        max_total_bytes: int | None = DEFAULT_MAX_TOTAL_BYTES,
        min_age_seconds: float = DEFAULT_MIN_AGE_SECONDS,
    ) -> None:
        self._limits = _Retention(max_age_seconds, max_total_bytes, min_age_seconds)
        self._cleanup_due = _Throttle()
        if fs is None:
            try:
                fsspec_core = importlib.import_module("fsspec.core")
            except ImportError as err:
                raise ModuleNotFoundError(
                    "FsspecSpillStore needs fsspec: pip install fsspec", name="fsspec"
                ) from err
            fs, path = fsspec_core.url_to_fs(url, **(storage_options or {}))
        else:
            path = url
        self._fs: Any = fs
        self._base = str(path).rstrip("/")
        protocol = fs.protocol
        self._protocol: str = protocol[0] if isinstance(protocol, (tuple, list)) else protocol

    def __repr__(self) -> str:
        return f"FsspecSpillStore({self._location(self._base)!r})"

    def _location(self, path: str) -> str:
        unstrip: Callable[[str], str] | None = getattr(self._fs, "unstrip_protocol", None)
        return unstrip(path) if unstrip is not None else path

    def write(self, text: str, *, label: str | None = None) -> str:
        """Write ``text`` as UTF-8 in one put and return its full URL.

        Raises:
            TypeError: ``text`` is not a ``str``, or ``label`` not a ``str`` or ``None``.
            Exception: Whatever the backend raises (``OSError``, permission or network
                errors); a partially written object is removed first, where possible.
        """
        _check_text(text)
        path = f"{self._base}/{spill_file_name(label)}"
        data = text.encode("utf-8")
        self._maybe_cleanup()
        try:
            self._fs.makedirs(self._base, exist_ok=True)
            self._fs.pipe_file(path, data)
        except BaseException:
            try:
                if self._fs.exists(path):
                    self._fs.rm_file(path)
            except Exception:
                logger.debug("could not remove partial spill %s", path, exc_info=True)
            raise
        return self._location(path)

    def cleanup(self, *, now: float | None = None) -> CleanupReport:
        """Remove spill objects past the age limit, then the oldest while over the size limit.

        Only names this store generates are considered, and none younger than
        ``min_age_seconds``.
        """
        moment = time.time() if now is None else now
        try:
            listing = self._fs.ls(self._base, detail=True)
        except FileNotFoundError:
            return CleanupReport(0, 0, 0, 0)
        entries: list[tuple[str, float, int]] = []
        for info in listing:
            name = str(info["name"]).rstrip("/").rsplit("/", 1)[-1]
            created = _name_time(name)
            if created is not None and info.get("type", "file") == "file":
                entries.append((name, created, int(info.get("size") or 0)))
        return _remove_planned(
            entries,
            lambda name: self._fs.rm_file(f"{self._base}/{name}"),
            now=moment,
            limits=self._limits,
        )

    def _maybe_cleanup(self) -> None:
        """Clean up when due; any failure is logged, since backends raise all kinds."""
        limits = self._limits
        if limits.max_age is None and limits.max_total_bytes is None:
            return
        if not self._cleanup_due.due():
            return
        try:
            self.cleanup()
        except Exception:
            logger.debug("spill clean-up of %r failed", self, exc_info=True)


_default_store: DirectorySpillStore | None = None
_default_lock = threading.Lock()


def default_spill_store() -> DirectorySpillStore:
    """The process-wide :class:`DirectorySpillStore` over :func:`default_spill_dir`.

    Created on first use; ``truncate_output`` uses it when no ``spill`` is given. The
    directory is read when the store is first created.
    """
    global _default_store
    with _default_lock:
        if _default_store is None:
            _default_store = DirectorySpillStore()
        return _default_store
