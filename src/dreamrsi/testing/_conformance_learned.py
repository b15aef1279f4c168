"""Part of :class:`~dreamrsi.testing.store_conformance.RunStoreConformance`: learned models
(L2 priors, L3 value models), versioned per kind and task family. The tests use the suite's
``empty`` fixture."""

from __future__ import annotations

from typing import Any

import pytest

from dreamrsi.errors import AlreadyRecorded, ConfigError, NotFound
from dreamrsi.store.base import RunStore
from dreamrsi.store.learned import LearnedModel
from dreamrsi.testing.store_state import store_state


def _model(kind: str, family: str, version: int, body: dict[str, object] | None = None,
           runs: tuple[str, ...] = ("r1",)) -> LearnedModel:
    return LearnedModel(kind, family, version, f"m{kind}{family}{version}", runs,
                        body or {"n": version}, float(version))


class LearnedTableTests:
    """Learned models: versions per kind and family, read back as stored, never changed."""

    def test_learned_models_are_versioned(self, empty: RunStore) -> None:
        empty.put_model(_model("prior", "pack", 1, {"rates": [0.5, 0.25]}, ("r1", "r2")))
        empty.put_model(_model("prior", "pack", 2))
        empty.put_model(_model("value", "pack", 1))
        empty.put_model(_model("prior", "lasso", 1))
        first = empty.get_model("prior", "pack", 1)
        assert (first.body, first.runs, first.created_at) == (
            {"rates": [0.5, 0.25]}, ("r1", "r2"), 1.0)
        assert empty.get_model("prior", "pack").version == 2  # the latest
        assert empty.get_model("value", "pack").version == 1
        assert [(m.kind, m.family, m.version) for m in empty.list_models()] == [
            ("prior", "lasso", 1), ("prior", "pack", 1), ("prior", "pack", 2),
            ("value", "pack", 1)]
        assert [m.version for m in empty.list_models("prior", "pack")] == [1, 2]
        assert [m.kind for m in empty.list_models(family="pack")] == ["prior", "prior",
                                                                       "value"]
        with pytest.raises(NotFound, match="version 3"):
            empty.get_model("prior", "pack", 3)
        with pytest.raises(NotFound, match="any version"):
            empty.get_model("value", "lasso")

    def test_a_stored_version_never_changes(self, empty: RunStore) -> None:
        empty.put_model(_model("prior", "pack", 1))
        before = store_state(empty)
        with pytest.raises(AlreadyRecorded):
            empty.put_model(_model("prior", "pack", 1, {"n": 99})._replace(model_id="other"))
        with pytest.raises(AlreadyRecorded):  # the same content under another version
            empty.put_model(_model("prior", "pack", 1)._replace(version=2))
        assert store_state(empty) == before
        assert empty.get_model("prior", "pack").body == {"n": 1}

    @pytest.mark.parametrize("bad", [{"kind": "oracle"}, {"family": ""}, {"version": 0}])
    def test_a_bad_model_is_refused(self, empty: RunStore, bad: dict[str, Any]) -> None:
        with pytest.raises(ConfigError):
            empty.put_model(_model("prior", "pack", 1)._replace(**bad))
        assert empty.list_models() == []

    def test_learned_models_roll_back(self, empty: RunStore) -> None:
        empty.put_model(_model("prior", "pack", 1))
        with pytest.raises(RuntimeError), empty.atomic():
            empty.put_model(_model("prior", "pack", 2))
            raise RuntimeError("undo")
        assert [m.version for m in empty.list_models()] == [1]
