"""The profiler (executor Profile, what `nnapi bench --profile` reads) times each operation on the clock
it is given: bench hands it the clock the model is timed with (time.thread_time for --clock cpu)."""
import itertools

import numpy as np

from executor.runtime import Profile, RunState, compile_model
from tests.executor.test_constant_folding import RNG, _hybrid_conv


def test_profile_times_each_operation_on_its_clock():
    """Profile(compiled, clock) reads `clock` before and after each operation (bench --clock cpu hands it
    time.thread_time): a clock that advances one unit per reading charges every operation one unit."""
    q = RNG.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
    compiled = compile_model(_hybrid_conv(q, also_output=True))
    ticks = itertools.count()
    state = RunState(1.0)
    state.profile = Profile(compiled, lambda: float(next(ticks)))
    compiled.run([np.ones((1, 5, 6, 2), np.float32)], state)
    assert state.profile.seconds == {0: [1.0], 1: [1.0]}
