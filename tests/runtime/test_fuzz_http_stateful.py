"""The HTTP stateful walk (codegen.fuzz.http_stateful) on the shared live server: its sequences
follow the spec's links (issue 33 asks most of them to be multi-step), and say what they did."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen import specs
from codegen.fuzz import http_stateful
from codegen.fuzz.http import config_toml
from codegen.fuzz.stateful import Walk
from tests.conftest import LiveServer


@pytest.mark.slow  # make fuzz walks 250 sequences of every service
def test_most_sequences_follow_a_link(live_server: LiveServer, spec_tree: specs.SpecTree, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(config_toml(spec_tree, 5), encoding="utf-8")
    walk = Walk(spec_tree, sequences=16, steps=4, seed=3)
    stats = http_stateful.run(live_server.url, {"X-Run-Id": "walk"}, config, walk)
    assert stats.failure is None, stats.failure
    assert stats.sequences >= 16
    # before the spec examples started workflows and roots waited for ready links: 2 in 10
    assert stats.multi_step >= stats.sequences * 2 // 3, stats
    assert stats.links_followed >= stats.multi_step and stats.longest >= 2
