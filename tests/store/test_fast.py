"""The store's speed tricks: the collector pause (the JSON codec and the canonical text are
compared with the plain encoders in test_sqlite.py and test_ledger.py)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from dreamrsi.store._fast import gc_paused


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_nested_pauses_restore_the_collector_when_the_last_ends() -> None:
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_pauses_in_two_threads() -> None:
    """The first pause to end does not re-enable the collector under the other."""
    gc.enable()
    entered, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with gc_paused():
            entered.set()
            release.wait(10)
            seen.append(gc.isenabled())

    thread = threading.Thread(target=other)
    with gc_paused():
        thread.start()
        assert entered.wait(10)
    assert not gc.isenabled()  # the other thread's pause is still on
    release.set()
    thread.join(10)
    assert seen == [False] and gc.isenabled()
