"""CUDA kernels under numba's CUDA simulator, in a subprocess (the simulator is chosen when
numba.cuda is first imported, from ``NUMBA_ENABLE_CUDASIM``)."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_cuda_kernels_match_cpu_and_reference_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    script = pathlib.Path(__file__).with_name("cuda_sim_checks.py")
    result = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "CHECKED" in result.stdout
