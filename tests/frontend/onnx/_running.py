"""Running an imported module in the ONNX tests: one helper for every executor."""

import interp


def run_outputs(mod, params, executor: str, inputs) -> list:
    """Outputs of ``mod["main"]`` on ``inputs`` (in parameter order) as numpy arrays.

    Args:
        mod, params: what ``from_onnx`` returned.
        executor: ``"debug"`` (the reference interpreter, params ignored: from_onnx folded
            them) or ``"graph"`` (built for the cpu target with ``params``).
        inputs: the values of main's parameters, in order.
    """
    if executor == "debug":
        run = interp.create_executor("debug", mod=mod).evaluate()
    else:
        run = interp.create_executor("graph", mod=mod, device=interp.cpu(0), target="cpu",
                                     params=params).evaluate()
    got = run(*inputs)
    return [g.numpy() for g in got] if isinstance(got, (tuple, list)) else [got.numpy()]
