"""Spill stores: atomic writes, safe names, retention, failures, the fsspec store."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from ctxbudget import spill as spill_module
from ctxbudget.spill import (
    CleanupReport,
    DirectorySpillStore,
    FsspecSpillStore,
    SpillStore,
    default_spill_dir,
    spill_file_name,
)
from ctxbudget.truncate import truncate_output

NAME = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{12}(-[a-z0-9_-]{1,32})?\.txt$")
DAY = 24 * 3600.0
NOW = 1_800_000_000.0  # a fixed "now" for the retention tests


def test_write_is_complete_and_private(tmp_path: Path) -> None:
    store = DirectorySpillStore(tmp_path / "spill")
    text = "line 1\nCJK 日本語 🎉\n" * 1000
    location = store.write(text, label="bash")
    path = Path(location)
    assert path.is_absolute() and path.parent == tmp_path / "spill"
    assert NAME.match(path.name) and path.name.endswith("-bash.txt")
    assert path.read_bytes() == text.encode("utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "spill").stat().st_mode) == 0o700
    assert list((tmp_path / "spill").iterdir()) == [path]  # no temporary file left


def test_large_write_in_pieces(tmp_path: Path) -> None:
    text = "é" * (3 * (1 << 20) + 17)  # over three write pieces, non-ASCII
    location = DirectorySpillStore(tmp_path, fsync=True).write(text)
    assert Path(location).read_text(encoding="utf-8") == text


@pytest.mark.parametrize(
    ("label", "suffix"),
    [
        ("../../etc/passwd", "-etc-passwd.txt"),
        ("a/b\\c d", "-a-b-c-d.txt"),
        ("call_4f9a:read_file", "-call_4f9a-read_file.txt"),
        ("\x00\n..", ".txt"),
        ("Grüße 🎉", "-gr-e.txt"),
        ("x" * 500, "-" + "x" * 32 + ".txt"),
        (None, ".txt"),
        ("", ".txt"),
    ],
)
def test_names_are_safe_whatever_the_label(tmp_path: Path, label: str | None, suffix: str) -> None:
    location = DirectorySpillStore(tmp_path).write("x", label=label)
    name = Path(location).name
    assert Path(location).parent == tmp_path
    assert NAME.match(name), name
    assert name.endswith(suffix)
    assert name[: -len(suffix)].count("-") == 1  # timestamp-token, then the label


@pytest.mark.parametrize("label", [123, b"grep"])
def test_label_that_is_not_text_is_a_type_error(tmp_path: Path, label: object) -> None:
    with pytest.raises(TypeError, match="label must be str or None"):
        spill_file_name(label)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="label must be str or None"):
        DirectorySpillStore(tmp_path / "spill").write("x", label=label)  # type: ignore[arg-type]
    assert not (tmp_path / "spill").exists()


@pytest.mark.parametrize("text", [b"bytes output", None, 123])
def test_text_that_is_not_str_is_a_type_error(tmp_path: Path, text: object) -> None:
    store = DirectorySpillStore(tmp_path / "spill")
    with pytest.raises(TypeError, match=f"text must be str, got {type(text).__name__}"):
        store.write(text)  # type: ignore[arg-type]
    assert not (tmp_path / "spill").exists()


def test_names_are_unique_across_threads(tmp_path: Path) -> None:
    store = DirectorySpillStore(tmp_path)
    locations: list[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        for i in range(25):
            location = store.write(f"{n}-{i}", label="tool")
            with lock:
                locations.append(location)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(locations)) == 200
    assert sorted(Path(p).read_text() for p in locations) == sorted(
        f"{n}-{i}" for n in range(8) for i in range(25)
    )


def test_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = DirectorySpillStore(tmp_path)

    def full_disk(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch, pytest.raises(OSError) as caught:
        patch.setattr(os, "replace", full_disk)
        store.write("the full output")
    assert caught.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary


def test_directory_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    store = DirectorySpillStore(blocker / "sub")  # constructing never fails
    with pytest.raises(NotADirectoryError):
        store.write("text")


def test_store_is_a_spill_store(tmp_path: Path) -> None:
    assert isinstance(DirectorySpillStore(tmp_path), SpillStore)

    class Custom:
        def write(self, text: str, *, label: str | None = None) -> str:
            return "custom://1"

    assert isinstance(Custom(), SpillStore)


# --- whose directory ---------------------------------------------------------------------

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners and mode bits")


@pytest.mark.parametrize("mode", [0o700, 0o750, 0o755])
def test_existing_directory_only_its_owner_can_change_is_used(tmp_path: Path, mode: int) -> None:
    directory = tmp_path / "spill"
    directory.mkdir()
    directory.chmod(mode)
    location = DirectorySpillStore(directory).write("x")
    assert Path(location).read_text() == "x"
    assert stat.S_IMODE(directory.stat().st_mode) == mode  # the owner's choice, left alone


@posix_only
@pytest.mark.parametrize(
    ("mode", "who"),
    [
        (0o777, "group and others"),
        (0o775, "group"),
        (0o757, "others"),
        (0o1777, "group and others"),  # sticky /tmp style: still refused
    ],
)
def test_directory_others_can_write_is_refused(tmp_path: Path, mode: int, who: str) -> None:
    directory = tmp_path / "spill"
    directory.mkdir()
    directory.chmod(mode)
    with pytest.raises(PermissionError) as caught:
        DirectorySpillStore(directory).write("secret output")
    message = str(caught.value)
    assert str(directory) in message and f"writable by {who}" in message
    assert f"chmod go-w {directory}" in message  # says how to fix it
    assert list(directory.iterdir()) == []
    assert stat.S_IMODE(directory.stat().st_mode) == mode  # refused, not changed behind the back


def test_symlinked_directory_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    old = target / spill_file_name("old", now=time.time() - 30 * DAY)
    old.write_text("not the store's to remove")
    link = tmp_path / "spill"
    link.symlink_to(target, target_is_directory=True)
    store = DirectorySpillStore(link, max_age_seconds=DAY)
    with pytest.raises(PermissionError, match="symbolic link"):
        store.write("x")
    with pytest.raises(PermissionError, match="symbolic link"):
        store.cleanup()
    assert list(target.iterdir()) == [old]  # neither written nor cleaned up through the link


@posix_only
def test_directory_owned_by_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "spill"
    directory.mkdir(mode=0o700)
    owner = directory.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)  # the store runs as someone else
    with pytest.raises(PermissionError, match=f"owned by uid {owner}, not by this user"):
        DirectorySpillStore(directory).write("x")
    assert list(directory.iterdir()) == []


def test_directory_of_another_real_user_is_refused(tmp_path: Path) -> None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip(
            "giving a directory to another uid needs root (as in CI); "
            "test_directory_owned_by_another_user_is_refused covers the check as any user"
        )
    directory = tmp_path / "spill"
    directory.mkdir(mode=0o755)
    os.chown(directory, 65534, 65534)  # nobody: could replace the files the model reads
    with pytest.raises(PermissionError, match="owned by uid 65534"):
        DirectorySpillStore(directory).write("x")
    assert list(directory.iterdir()) == []


@posix_only
def test_refused_directory_is_a_failed_spill_for_the_model(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    directory.mkdir()
    directory.chmod(0o777)
    result = truncate_output("line\n" * 5000, max_tokens=300, spill=DirectorySpillStore(directory))
    assert result.truncated and result.spill_path is None
    assert result.spill_error is not None and result.spill_error.startswith("PermissionError")
    assert str(directory) in result.spill_error  # the log says which directory and why
    assert "could not be stored (Permission denied)" in result.text
    assert str(tmp_path) not in result.text and "save" not in result.text.lower()
    assert list(directory.iterdir()) == []


# --- retention --------------------------------------------------------------------------


def plant(directory: Path, age_days: float, size: int, label: str = "t") -> Path:
    path = directory / spill_file_name(label, now=NOW - age_days * DAY)
    path.write_bytes(b"x" * size)
    return path


def plant_seconds_ago(directory: Path, seconds: float, size: int) -> Path:
    path = directory / spill_file_name("t", now=NOW - seconds)
    path.write_bytes(b"x" * size)
    return path


def test_cleanup_by_age(tmp_path: Path) -> None:
    old = plant(tmp_path, 8, 10)
    fresh = plant(tmp_path, 6, 10)
    store = DirectorySpillStore(tmp_path, max_age_seconds=7 * DAY, max_total_bytes=None)
    assert store.cleanup(now=NOW) == CleanupReport(1, 10, 1, 10)
    assert not old.exists() and fresh.exists()


def test_cleanup_by_total_size_removes_oldest_first(tmp_path: Path) -> None:
    files = [plant(tmp_path, age, 100) for age in (5, 4, 3, 2, 1)]
    store = DirectorySpillStore(tmp_path, max_age_seconds=None, max_total_bytes=250)
    assert store.cleanup(now=NOW) == CleanupReport(3, 300, 2, 200)
    assert [f.exists() for f in files] == [False, False, False, True, True]


def test_cleanup_keeps_the_newest_even_over_the_size_limit(tmp_path: Path) -> None:
    newest = plant(tmp_path, 0, 1000)
    store = DirectorySpillStore(tmp_path, max_age_seconds=None, max_total_bytes=10)
    assert store.cleanup(now=NOW) == CleanupReport(0, 0, 1, 1000)
    assert newest.exists()


def test_stores_sharing_a_directory_keep_each_others_fresh_files(tmp_path: Path) -> None:
    stores = [DirectorySpillStore(tmp_path, max_total_bytes=1000) for _ in range(3)]  # 3 processes
    texts = [letter * 600 for letter in "ABC"]
    locations = [store.write(text) for store, text in zip(stores, texts, strict=True)]
    assert [Path(location).read_text() for location in locations] == texts


def test_size_limit_waits_for_the_grace_period(tmp_path: Path) -> None:
    files = [plant_seconds_ago(tmp_path, age, 100) for age in (900, 600, 200, 100, 10)]
    store = DirectorySpillStore(tmp_path, max_age_seconds=None, max_total_bytes=150)
    # over the limit until the three younger than five minutes have aged
    assert store.cleanup(now=NOW) == CleanupReport(2, 200, 3, 300)
    assert [f.exists() for f in files] == [False, False, True, True, True]
    assert store.cleanup(now=NOW + 300) == CleanupReport(2, 200, 1, 100)
    assert [f.exists() for f in files] == [False, False, False, False, True]
    assert spill_module.DEFAULT_MIN_AGE_SECONDS == 300


def test_age_limit_waits_for_the_grace_period(tmp_path: Path) -> None:
    plant_seconds_ago(tmp_path, 30, 10)
    assert DirectorySpillStore(tmp_path, max_age_seconds=1).cleanup(now=NOW) == CleanupReport(
        0, 0, 1, 10
    )
    shorter = DirectorySpillStore(tmp_path, max_age_seconds=1, min_age_seconds=10)
    assert shorter.cleanup(now=NOW) == CleanupReport(1, 10, 0, 0)


def test_live_temporary_file_is_kept_through_the_grace_period(tmp_path: Path) -> None:
    live = tmp_path / (".tmp-" + spill_file_name("t", now=NOW - 30))
    live.write_text("a slow writer")
    DirectorySpillStore(tmp_path, max_age_seconds=1).cleanup(now=NOW)
    assert live.exists()


def test_negative_grace_period_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="min_age_seconds must be at least 0"):
        DirectorySpillStore(tmp_path, min_age_seconds=-1)
    with pytest.raises(ValueError, match="min_age_seconds must be at least 0"):
        FsspecSpillStore(str(tmp_path), fs=object(), min_age_seconds=-1)


def test_file_removed_by_a_concurrent_cleanup_is_neither_removed_nor_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for age in (4, 3, 2):
        plant(tmp_path, age, 1000)
    ours, theirs = (DirectorySpillStore(tmp_path, max_age_seconds=DAY) for _ in range(2))
    real_unlink = os.unlink
    theirs_report: CleanupReport | None = None

    def unlink_after_theirs(path: str, *args: object, **kwargs: object) -> None:
        nonlocal theirs_report
        if theirs_report is None:  # another process cleans up between our listing and removal
            theirs_report = CleanupReport(0, 0, 0, 0)  # set first: its unlinks come here too
            theirs_report = theirs.cleanup(now=NOW)
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", unlink_after_theirs)
    assert ours.cleanup(now=NOW) == CleanupReport(0, 0, 0, 0)
    assert theirs_report == CleanupReport(3, 3000, 0, 0)
    assert list(tmp_path.iterdir()) == []


def test_cleanup_never_touches_other_files(tmp_path: Path) -> None:
    foreign = [tmp_path / "notes.txt", tmp_path / "20000101T000000000000Z-nothex.txt"]
    for path in foreign:
        path.write_text("mine")
    (tmp_path / "subdir").mkdir()
    plant(tmp_path, 30, 10)
    store = DirectorySpillStore(tmp_path, max_age_seconds=DAY, max_total_bytes=0)
    assert store.cleanup(now=NOW).removed_files == 1
    assert all(path.exists() for path in foreign) and (tmp_path / "subdir").is_dir()


#: Has the shape of a spill name, but month 13, day 99: a foreign file.
IMPOSSIBLE_DATE = "20241399T000000000000Z-0123456789ab.txt"


def test_impossible_date_in_a_name_is_a_foreign_file(tmp_path: Path) -> None:
    assert NAME.match(IMPOSSIBLE_DATE)
    foreign = [tmp_path / IMPOSSIBLE_DATE, tmp_path / (".tmp-" + IMPOSSIBLE_DATE)]
    for path in foreign:
        path.write_text("not ours")
    old = tmp_path / spill_file_name("old", now=time.time() - 30 * DAY)
    old.write_text("old")
    store = DirectorySpillStore(tmp_path, max_age_seconds=DAY, max_total_bytes=None)
    location = store.write("written")  # the write runs a clean-up first
    assert Path(location).read_text() == "written"
    assert not old.exists()
    assert store.cleanup() == CleanupReport(0, 0, 1, len("written"))
    result = truncate_output("line\n" * 5000, max_tokens=300, spill=DirectorySpillStore(tmp_path))
    assert result.spill_error is None and result.spill_path is not None
    assert all(path.read_text() == "not ours" for path in foreign)


def test_fsspec_cleanup_skips_an_impossible_date(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    store = FsspecSpillStore(str(tmp_path / "remote"), max_age_seconds=DAY)
    store.write("kept")
    foreign = tmp_path / "remote" / IMPOSSIBLE_DATE
    foreign.write_text("not ours")
    assert store.cleanup() == CleanupReport(0, 0, 1, len("kept"))
    assert foreign.exists()


def test_cleanup_removes_stale_temporary_files(tmp_path: Path) -> None:
    stale = tmp_path / (".tmp-" + spill_file_name("t", now=NOW - 10 * DAY))
    live = tmp_path / (".tmp-" + spill_file_name("t", now=NOW))
    stale.write_text("crashed writer")
    live.write_text("being written")
    DirectorySpillStore(tmp_path).cleanup(now=NOW)
    assert not stale.exists() and live.exists()


def test_cleanup_of_a_missing_directory(tmp_path: Path) -> None:
    assert DirectorySpillStore(tmp_path / "never").cleanup() == CleanupReport(0, 0, 0, 0)


def test_write_cleans_up_opportunistically(tmp_path: Path) -> None:
    ancient = tmp_path / spill_file_name("old", now=1_000_000_000.0)  # 2001
    ancient.write_text("old")
    store = DirectorySpillStore(tmp_path)
    store.write("new")
    assert not ancient.exists()
    ancient.write_text("old again")
    store.write("newer")  # within a minute of the last clean-up: not run again
    assert ancient.exists()


def test_cleanup_failure_never_fails_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DirectorySpillStore(tmp_path)

    def broken(*, now: float | None = None) -> CleanupReport:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(DirectorySpillStore, "cleanup", lambda self, now=None: broken(now=now))
    assert Path(store.write("still written")).read_text() == "still written"


# --- default directory -----------------------------------------------------------------


def test_default_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CTXBUDGET_SPILL_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_spill_dir() == tmp_path / "explicit"
    monkeypatch.delenv("CTXBUDGET_SPILL_DIR")
    assert default_spill_dir() == tmp_path / "xdg" / "ctxbudget" / "spill"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_spill_dir() == tmp_path / "home" / ".cache" / "ctxbudget" / "spill"
    assert DirectorySpillStore().directory == tmp_path / "home" / ".cache" / "ctxbudget" / "spill"


def test_default_store_is_shared(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(spill_module, "_default_store", None)
    monkeypatch.setenv("CTXBUDGET_SPILL_DIR", str(tmp_path))
    first = spill_module.default_spill_store()
    assert first is spill_module.default_spill_store()
    assert first.directory == tmp_path


# --- fsspec ----------------------------------------------------------------------------


def test_fsspec_memory_store() -> None:
    fsspec = pytest.importorskip("fsspec")
    store = FsspecSpillStore("memory://ctxbudget-tests/spill")
    location = store.write("full text ✓", label="../grep")
    assert location.startswith("memory://") and "/ctxbudget-tests/spill/" in location
    assert NAME.match(location.rsplit("/", 1)[1])
    fs = fsspec.filesystem("memory")
    assert fs.cat_file(location) == "full text ✓".encode()
    fs.rm("/ctxbudget-tests", recursive=True)


def test_fsspec_local_store_and_cleanup(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    store = FsspecSpillStore(str(tmp_path / "remote"), max_age_seconds=DAY)
    location = store.write("kept")
    assert Path(location.removeprefix("file://")).read_text() == "kept"
    now = time.time()
    old = tmp_path / "remote" / spill_file_name("old", now=now - 3 * DAY)
    old.write_bytes(b"x" * 7)
    (tmp_path / "remote" / "foreign.txt").write_text("not ours")
    report = store.cleanup(now=now)
    assert (report.removed_files, report.removed_bytes, report.kept_files) == (1, 7, 1)
    assert not old.exists() and (tmp_path / "remote" / "foreign.txt").exists()


def test_fsspec_text_that_is_not_str_is_a_type_error(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    store = FsspecSpillStore(str(tmp_path / "remote"))
    for text in (b"bytes output", None):
        with pytest.raises(TypeError, match=f"text must be str, got {type(text).__name__}"):
            store.write(text)  # type: ignore[arg-type]
    assert not (tmp_path / "remote").exists()


def test_fsspec_write_cleans_up_opportunistically(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    remote = tmp_path / "remote"
    remote.mkdir()
    old = remote / spill_file_name("old", now=time.time() - 1000)
    old.write_text("old")
    store = FsspecSpillStore(str(remote), max_age_seconds=100)
    store.write("new")
    assert not old.exists()
    old.write_text("old again")
    store.write("newer")  # within a minute of the last clean-up: not run again
    assert old.exists()


def test_fsspec_fresh_writes_are_kept_over_the_size_limit(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    store = FsspecSpillStore(str(tmp_path), max_total_bytes=100)
    locations = [store.write("x" * 80) for _ in range(5)]
    assert store.cleanup() == CleanupReport(0, 0, 5, 400)
    assert all(Path(location.removeprefix("file://")).exists() for location in locations)


def test_fsspec_cleanup_failure_never_fails_the_write(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")

    class UnlistableFs(type(fsspec.filesystem("file"))):  # type: ignore[misc]
        def ls(self, path: str, detail: bool = True, **kwargs: object) -> list[object]:
            raise RuntimeError("listing denied")

    store = FsspecSpillStore(str(tmp_path), fs=UnlistableFs())
    location = store.write("still written")
    assert Path(location.removeprefix("file://")).read_text() == "still written"


def test_fsspec_without_limits_never_lists(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    listed: list[str] = []

    class RecordingFs(type(fsspec.filesystem("file"))):  # type: ignore[misc]
        def ls(self, path: str, detail: bool = True, **kwargs: object) -> list[object]:
            listed.append(path)
            return super().ls(path, detail=detail, **kwargs)  # type: ignore[no-any-return]

    # retention left to bucket lifecycle rules: no listing on write
    store = FsspecSpillStore(
        str(tmp_path), fs=RecordingFs(), max_age_seconds=None, max_total_bytes=None
    )
    store.write("text")
    assert listed == []


def test_fsspec_backend_error_is_raised_and_nothing_is_left() -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")

    class FailingFs(type(fs)):  # type: ignore[misc]
        def pipe_file(self, path: str, value: bytes, **kwargs: object) -> None:
            super().pipe_file(path, value[:2])  # a half-written object, then the failure
            raise OSError(errno.EIO, "backend unavailable")

    failing = FailingFs()
    store = FsspecSpillStore("/ctxbudget-failing", fs=failing)
    with pytest.raises(OSError, match="backend unavailable"):
        store.write("text")
    assert failing.ls("/ctxbudget-failing") == []


def test_fsspec_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "fsspec.core", None)
    with pytest.raises(ModuleNotFoundError, match="pip install fsspec"):
        FsspecSpillStore("memory://x")


def test_spill_dir_of_env_is_not_created_until_written(tmp_path: Path) -> None:
    store = DirectorySpillStore(tmp_path / "lazy")
    assert not (tmp_path / "lazy").exists()
    store.write("x")
    assert os.path.isdir(tmp_path / "lazy")


# --- review of 2026-12-04 ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "foreign",
    [
        "20000101T000000000000Z-0123456789ab.txt\n",  # `$` matched before a final newline
        "\uff12\uff10\uff10\uff100101T000000000000Z-0123456789ab.txt",  # fullwidth digits
    ],
)
def test_cleanup_never_removes_a_name_that_only_looks_like_its_own(
    tmp_path: Path, foreign: str
) -> None:
    store = DirectorySpillStore(tmp_path)
    (tmp_path / foreign).write_text("the user's data")
    (tmp_path / (spill_module._TMP_PREFIX + foreign)).write_text("the user's data")
    report = store.cleanup(now=NOW)
    assert report.removed_files == 0
    assert (tmp_path / foreign).exists()


class _NoLabel:
    def write(self, text: str) -> str:  # forgot `*, label=None`
        return "/srv/spill/out.txt"


class _NotCallable:
    write = "s3://bucket"


@pytest.mark.parametrize("store", [_NoLabel(), _NotCallable()], ids=["no label", "not callable"])
def test_a_store_that_cannot_be_called_as_one_is_a_caller_mistake(store: object) -> None:
    # It passed isinstance(SpillStore) and every output then read "could not be stored".
    text = "".join(f"line {i}\n" for i in range(20_000))
    with pytest.raises(TypeError, match="write"):
        truncate_output(text, 300, spill=store)  # type: ignore[arg-type]


def test_a_store_whose_write_takes_more_keywords_with_defaults_is_fine(tmp_path: Path) -> None:
    class Versioned:
        def write(self, text: str, *, label: str | None = None, version: int = 1) -> str:
            path = tmp_path / f"{label}-{version}.txt"
            path.write_text(text)
            return str(path)

    text = "".join(f"line {i}\n" for i in range(20_000))
    result = truncate_output(text, 300, spill=Versioned(), label="grep")
    assert result.spill_path == str(tmp_path / "grep-1.txt")


def test_a_directory_whose_name_is_not_unicode_writes_nothing(tmp_path: Path) -> None:
    # The full output was written, then refused (the model cannot be told the path): a copy
    # of it stayed on disk for every call, which nothing would ever clean up.
    directory = os.fsdecode(os.fsencode(tmp_path) + b"/spill-\xff")
    text = "".join(f"secret line {i}\n" for i in range(20_000))
    result = truncate_output(text, 300, spill=DirectorySpillStore(directory), label="t")
    assert result.spill_path is None and result.spill_error is not None
    assert "not valid Unicode" in result.spill_error
    assert not os.path.exists(os.fsencode(directory))
