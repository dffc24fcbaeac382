"""Candidate implementations of a row-wise softmax, as an RL policy might propose them.

Each is Python source defining ``softmax(x)``; some are correct, one is slow, and several
are broken on purpose so that every failure class of the taxonomy shows up:

============== ===================================================== =====================
candidate      what it does                                          expected outcome
============== ===================================================== =====================
ref_copy       the reference, rewritten                              passed, ~1x
inplace        same math, in-place ops, fewer temporaries            passed, usually > 1x
row_loop       a Python loop over rows                               passed, slow
syntax_error   a missing colon                                       compile_error
no_max_shift   exp(x) without subtracting the row max                nan_inf (large inputs)
flat_output    returns a flattened array                             incorrect_shape
float64_out    accumulates and returns float64                       incorrect_dtype
tail_dropped   blocked sum that forgets the last partial block       incorrect_numerical,
                                                                     only when cols % 128
typo_call      calls a function numpy does not have                  runtime_error
sleepy         correct but sleeps: over the per-call time limit      timeout
cached         returns its first output again for the same shape     incorrect_numerical
               (caught because inputs are regenerated)
patched_timer  correct, but replaces time.perf_counter_ns so that    reward_hack
               every call seems to take 0 ns (GPU MODE               (timer integrity)
               reference-kernels #162)
deferred       returns an object that computes the softmax only      reward_hack
               when it is read, after the timer stopped              (outputs checked after
                                                                     timing)
============== ===================================================== =====================

The last two pass validation: only the harness's defences catch them.
"""

from __future__ import annotations

CANDIDATES: list[tuple[str, str, str]] = [
    (
        "ref_copy",
        "the reference, rewritten",
        """
import numpy as np

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
""",
    ),
    (
        "inplace",
        "in-place subtract, exp and divide",
        """
import numpy as np

def softmax(x):
    y = np.subtract(x, x.max(axis=-1, keepdims=True))
    np.exp(y, out=y)
    y /= y.sum(axis=-1, keepdims=True)
    return y
""",
    ),
    (
        "row_loop",
        "one row at a time in Python",
        """
import numpy as np

def softmax(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(x[i] - x[i].max())
        out[i] = e / e.sum()
    return out
""",
    ),
    (
        "syntax_error",
        "a missing colon",
        """
import numpy as np

def softmax(x)
    return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
""",
    ),
    (
        "no_max_shift",
        "exp without the max shift: overflows on large inputs",
        """
import numpy as np

def softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)
""",
    ),
    (
        "flat_output",
        "returns the result flattened",
        """
import numpy as np

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).reshape(-1)
""",
    ),
    (
        "float64_out",
        "computes and returns float64",
        """
import numpy as np

def softmax(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
""",
    ),
    (
        "tail_dropped",
        "blocked row sum that forgets the last partial block",
        """
import numpy as np

BLOCK = 128

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    s = np.zeros((x.shape[0], 1), dtype=x.dtype)
    full = (x.shape[1] // BLOCK) * BLOCK
    for j in range(0, full, BLOCK):  # off by one block when cols % BLOCK != 0
        s += e[:, j:j + BLOCK].sum(axis=-1, keepdims=True)
    return e / s
""",
    ),
    (
        "typo_call",
        "calls np.softmax, which numpy does not have",
        """
import numpy as np

def softmax(x):
    return np.softmax(x, axis=-1)
""",
    ),
    (
        "sleepy",
        "correct, but sleeps on every call",
        """
import time
import numpy as np

def softmax(x):
    time.sleep(0.3)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
""",
    ),
    (
        "cached",
        "returns its first output again for inputs of the same shape",
        """
import numpy as np

_memo = {}

def softmax(x):
    if x.shape not in _memo:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        _memo[x.shape] = e / e.sum(axis=-1, keepdims=True)
    return _memo[x.shape]
""",
    ),
    (
        "patched_timer",
        "correct, but freezes the harness's clock on every call",
        """
import time
import numpy as np

_real = time.perf_counter_ns

def softmax(x):
    now = _real()
    time.perf_counter_ns = lambda: now  # whoever times this call reads 0 ns
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
""",
    ),
    (
        "deferred",
        "returns a result that does its work when it is read",
        """
import numpy as np

class _Later:
    def __init__(self, x):
        self._x = x.copy()
        self.shape, self.dtype = x.shape, x.dtype

    def __array__(self, dtype=None, copy=None):
        e = np.exp(self._x - self._x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

def softmax(x):
    return _Later(x)
""",
    ),
]
