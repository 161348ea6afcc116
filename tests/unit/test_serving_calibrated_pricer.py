"""The two efficiencies only a calibration sets: a prefill speed that moves the prompt tokens' part of an
iteration and never the decodes' (advisor/physics/serving.py prefill_scaled), and a host time an iteration
that the GPU's work hides once it is longer (host_bound); at their defaults the pricer is the model's to
the last bit."""

from __future__ import annotations

from dataclasses import replace

from advisor.physics.serving import roofline_pricer, smooth_max, step_pricer
from tests.unit.test_serving_open_loop import EFF, REP


def test_the_defaults_price_exactly_as_the_model() -> None:
    plain, model = step_pricer(REP, EFF), roofline_pricer(REP, EFF)
    for b, ctx, p, ctx_p in ((1, 600, 0, 0), (64, 900, 512, 256), (0, 0, 4096, 2048)):
        assert plain(b, ctx, p, ctx_p) == model(b, ctx, p, ctx_p)


def test_a_slower_prefill_moves_only_the_prompt_tokens_part() -> None:
    model, slow = roofline_pricer(REP, EFF), step_pricer(REP, replace(EFF, prefill=0.25))
    assert slow(64, 900) == model(64, 900)  # decodes alone: untouched
    decode, mixed = model(64, 900), model(64, 900, 512, 256)
    assert abs(slow(64, 900, 512, 256) - (decode + 4.0 * (mixed - decode))) < 1e-12
    alone = model(0, 0, 4096, 2048)
    assert 3.0 * alone < slow(0, 0, 4096, 2048) < 4.0 * alone  # the weights' read and fixed cost stay


def test_host_time_bounds_small_batches_and_hides_under_large_ones() -> None:
    model, host = roofline_pricer(REP, EFF), step_pricer(REP, replace(EFF, host_s=0.03))
    small, large = model(1, 600), model(512, 1500)
    assert small < 0.03 < large
    assert host(1, 600) == smooth_max(small, 0.03) and host(1, 600) >= 0.03
    assert host(512, 1500) < 1.05 * large  # the kernels take longer than the host: hidden
