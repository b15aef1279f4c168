"""The loop's settings live in ``dreaming.loop_config``; every older import still finds them."""

from __future__ import annotations

import dreamrsi.dreaming as dreaming
from dreamrsi.dreaming import loop, loop_config


def test_the_loop_module_re_exports_the_same_objects() -> None:
    for name in loop_config.__all__:
        assert getattr(loop, name) is getattr(loop_config, name), name
        assert name in loop.__all__, name
    assert dreaming.LoopConfig is loop_config.LoopConfig


def test_the_protocols_defaults_are_the_loop_configs_own() -> None:
    per_round = loop_config.LoopConfig(rounds=2, per_round_budget=10)
    total = loop_config.LoopConfig(rounds=2, per_round_budget=10, total_budget=30)
    assert per_round.dream_settings() == loop_config.protocol_dream("per-round")
    assert total.dream_settings() == loop_config.protocol_dream("total")
    assert per_round.dream_settings() != total.dream_settings()
