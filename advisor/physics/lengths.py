"""Provides the (prompt, output) lengths of a simulated run's requests: all equal, or drawn around the stated
means as a ShareGPT-like dataset spreads them.

Why it matters under load: requests of equal lengths that start together finish together, so a burst or a
closed loop of them keeps its batch full to the end. A ShareGPT run's outputs spread over an order of
magnitude (`vllm bench serve --dataset-name sharegpt` keeps each conversation's own completion length,
filtered by `is_valid_sequence`: a prompt of at most 1,024 tokens, prompt + output at most 2,048:
vllm-project/vllm@5c92be2491896f931cb83f518402741421c871dc `vllm/benchmarks/dataset_utils.py`, which
`vllm/benchmarks/datasets.py` imports; there (vllm-project/vllm@0056b87fc1fda2642f39dda4392824c425dd1638)
the random dataset's DEFAULT_RANGE_RATIO is 0.0, every request the stated lengths, 'fixed' here), so the
batch empties as the short ones finish and the longest few decode almost alone at the end of a burst: its
makespan is the longest request's, not the mean's, and throughput (output tokens / the makespan) falls.

The spread is the one the serving fit has drawn its ShareGPT rows with (advisor/learned/serving/data.py,
since the closed-loop simulation): each length a lognormal factor of median exp(-0.32) and log-spread 0.8,
whose mean is 1, so the stated means are kept; an assumption of the project, not a measured histogram.
"""

from __future__ import annotations

import random
from collections.abc import Callable

SHAREGPT_MU, SHAREGPT_SIGMA = -0.32, 0.8
"""The lognormal factor of a ShareGPT-like length: exp(mu + sigma^2 / 2) = 1, the stated mean kept."""
SHAREGPT_MAX_PROMPT, SHAREGPT_MAX_TOTAL = 1024, 2048
"""vLLM's ShareGPT sampler keeps a request only when its prompt is at most 1,024 tokens and prompt + output
at most 2,048 (is_valid_sequence's max_prompt_len and max_total_len), so no drawn request is longer."""
SEED = 20240807
"""A fixed seed: the same question draws the same requests (answers are reproducible)."""


def drawn(
    isl: int, osl: int, n: int, dataset: str, rng: random.Random, *, capped: bool = True
) -> list[tuple[int, int]]:
    """`n` (prompt, output) pairs: the stated lengths for 'fixed' (and any unspread dataset), lognormal
    around them for 'sharegpt' (held to the sampler's filter where the stated means are within it; the fit
    draws its rows uncapped, `capped=False`, as it always has), and +-25% uniform for 'random-uniform' (a
    random dataset with a range)."""
    if dataset not in ("sharegpt", "random-uniform"):
        return [(isl, osl)] * n
    factor: Callable[[], float] = (
        (lambda: rng.lognormvariate(SHAREGPT_MU, SHAREGPT_SIGMA))
        if dataset == "sharegpt"
        else (lambda: rng.uniform(0.75, 1.25))
    )
    out = []
    for _ in range(n):
        f_in, f_out = factor(), factor()
        p, o = max(1, round(isl * f_in)), max(1, round(osl * f_out))
        if capped and dataset == "sharegpt" and isl <= SHAREGPT_MAX_PROMPT and isl + osl < SHAREGPT_MAX_TOTAL:
            p = min(p, SHAREGPT_MAX_PROMPT)
            o = max(1, min(o, SHAREGPT_MAX_TOTAL - p))
        out.append((p, o))
    return out


def request_lengths(isl: int, osl: int, n: int, dataset: str = "fixed") -> list[tuple[int, int]]:
    """The lengths of an answer's `n` simulated requests (a fixed seed)."""
    return drawn(isl, osl, n, dataset, random.Random(SEED))
