"""kvlayout: prove, or refute with a counterexample, that moving an LLM KV cache from one serving engine's
layout to another's is exact; check what connectors assume; run the verified relayout kernel.

    import kvlayout
    proof = kvlayout.prove("vllm-flash-nhd", "sglang-mha", "small")
    proof.grade                      # 'EXACT_TOKEN'
    move = kvlayout.Relayout("vllm-flash-nhd", "sglang-mha", "small")
    move(src_buffers, dst_buffers, src_tables, dst_tables, num_tokens)

Every function runs the same code as the ``kvlayout`` command (in this process) and returns its
``--json`` answer as a typed object. Layouts and cache shapes are names under the specs directory
(``specs=``, else ``$KVLAYOUT_SPECS``, else the specs shipped with the package), paths to JSON files, or
dicts in the layout language.
"""
from . import _core
from .api import address, check, layouts, plan_check, plan_emit, prove, tensor_geometry
from .errors import (ArgumentError, CompileError, InternalError, KernelError, KvlayoutError, Refused, SpecError,
                     Unknown)
from .relayout import Relayout
from .results import EXACT_GRADES, GRADES, Address, CheckResult, LayoutInfo, Obligation, Proof

__version__ = _core.version()

__all__ = [
    "layouts", "address", "prove", "check", "plan_check", "plan_emit", "tensor_geometry", "Relayout",
    "Proof", "Obligation", "CheckResult", "Address", "LayoutInfo", "GRADES", "EXACT_GRADES",
    "KvlayoutError", "SpecError", "ArgumentError", "InternalError", "Unknown", "Refused", "CompileError",
    "KernelError", "__version__",
]
