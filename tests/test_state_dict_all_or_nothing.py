"""Restoring a state that does not fit is refused whole, naming what does not fit: a module
is never half loaded, an optimizer state of another model never loads, an nn.Graph never skips
a part it has no state for."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.optimizer import Adam


def test_a_bad_value_leaves_the_module_as_it_was():
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    sd = {k: np.zeros(v.shape, np.float32) for k, v in before.items()}
    sd["1.bias"] = np.array(["x"])                    # right shape, not numbers
    with pytest.raises(TypeError, match="1.bias holds <U1 values"):
        m.load_state_dict(sd)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])


def test_an_adam_state_of_another_model_is_refused_at_load():
    small, big = nn.Linear(2, 3), nn.Linear(4, 3)
    opt = Adam(small.parameters())
    small(mg.ones(1, 2)).sum().backward()
    opt.step()
    other = Adam(big.parameters())
    with pytest.raises(ValueError, match="state 'exp_avg' of parameter 0 has shape \\(3, 2\\)"):
        other.load_state_dict(opt.state_dict())


def test_graph_refuses_a_state_without_its_optimizers():
    class Step(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = nn.Linear(2, 1)
            self.add_optimizer(Adam(self.m.parameters()))

        def build(self, x):
            loss = self.m(x).sum()
            loss.backward()
            return loss

    g = Step()
    state = g.state_dict()
    state["optimizers"] = []
    with pytest.raises(ValueError, match="nothing was loaded"):
        g.load_state_dict(state)
