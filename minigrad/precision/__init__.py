"""The precision policy, beside the dispatch point: the op table (``policy``), the autocast
policy (``autocast``) and the per-module policy (``module``).

``Function.apply`` asks the policy in ``core.modes.dispatch_policy`` for each op's compute dtype;
``minigrad.amp`` (regions, the global switch) and ``nn.Module`` (``to_float``) build the policies
from here, as ATen keeps its autocast rows beside the dispatcher while ``torch.amp`` stays thin.
"""
